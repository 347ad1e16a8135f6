package detectors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/trajectory"
)

// memo holds what several detectors derive from one session, so that it
// is computed once per session, not once per detector: each tool input
// decoded, the calls with their events, the turns of low_yield_spin. The
// detectors run one after another over a session, in one goroutine, so
// the memo needs no lock; they only read what it holds.
type memo struct {
	inputs map[string]*input
	// traces, calls and turns are callTraces', callsWithResults' and
	// lowYieldTurns' results, once the matching done flag is set.
	traces                           []*callTrace
	calls                            []callResult
	turns                            []yieldTurn
	tracesDone, callsDone, turnsDone bool
	// tools is sessionTools' result, once toolsDone is set; held holds
	// the liveness conditions recomputed so far, by defense.
	tools     map[string]trajectory.ToolInfo
	toolsDone bool
	held      map[trajectory.DefenseName]heldResult
}

// heldResult is what a liveness condition found in a session.
type heldResult struct {
	checked int
	held    []Located
}

// input is what is derived from one tool input's bytes.
type input struct {
	// canonical is the input re-encoded, so key order and spacing do not
	// count; the raw bytes when they do not decode.
	canonical string
	// keys are its sorted top-level keys, "" when it is not an object,
	// once keysDone is set: written from keyList (set when object is)
	// when first asked for, as few detectors ask.
	keys             string
	keyList          []string
	object, keysDone bool
	// sig is the signature of a call of tool sigTool with this input,
	// once asked for: most inputs are asked for with one tool only.
	sig, sigTool string
}

// input returns what is derived from raw, computing it on first use.
func (s *Session) input(raw json.RawMessage) *input {
	if in, ok := s.memo.inputs[string(raw)]; ok {
		return in
	}
	in := deriveInput(raw)
	if s.memo.inputs == nil {
		s.memo.inputs = map[string]*input{}
	}
	s.memo.inputs[string(raw)] = in
	return in
}

// deriveInput computes what input holds for raw.
func deriveInput(raw json.RawMessage) *input {
	canon, keys, object, ok := canonicalJSON(raw)
	if !ok {
		return decodeInput(raw)
	}
	// Most inputs hold only what a re-encoding writes back the same, so
	// the canonical form is theirs with the keys sorted: no decoding.
	return &input{canonical: string(canon), keyList: keys, object: object}
}

// keySet returns the sorted top-level keys of the input, as fmt.Sprint
// writes a []string, or "" when it is not an object.
func (in *input) keySet() string {
	if !in.keysDone {
		if in.object {
			in.keys = "[" + strings.Join(in.keyList, " ") + "]"
		}
		in.keysDone = true
	}
	return in.keys
}

// decodeInput computes what input holds for raw by decoding it and
// encoding it again.
func decodeInput(raw json.RawMessage) *input {
	in := &input{canonical: string(raw), keysDone: true}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return in
	}
	b, _ := json.Marshal(v)
	in.canonical = string(b)
	if m, ok := v.(map[string]any); ok {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		in.keys = fmt.Sprint(keys)
	}
	return in
}

// canonical returns raw re-encoded, so that two inputs that differ only
// in key order or spacing compare equal.
func (s *Session) canonical(raw json.RawMessage) string { return s.input(raw).canonical }

// keySet returns the sorted top-level keys of a tool input.
func (s *Session) keySet(raw json.RawMessage) string { return s.input(raw).keySet() }

// signature is a call's identity: its tool and its compacted input.
func (s *Session) signature(tool string, raw json.RawMessage) string {
	in := s.input(raw)
	if in.sig == "" || in.sigTool != tool {
		in.sig, in.sigTool = tool+"\x00"+in.canonical, tool
	}
	return in.sig
}

// callTraces returns the calls of s with their events (see
// traceCalls), computed once per session.
func callTraces(s *Session) []*callTrace {
	if !s.memo.tracesDone {
		s.memo.traces, s.memo.tracesDone = traceCalls(s), true
	}
	return s.memo.traces
}

// callsWithResults returns the session's tool_calls with their results
// (see pairResults), computed once per session.
func callsWithResults(s *Session) []callResult {
	if !s.memo.callsDone {
		s.memo.calls, s.memo.callsDone = pairResults(s), true
	}
	return s.memo.calls
}

// lowYieldTurns returns the turns of low_yield_spin's condition (see
// yieldTurns), computed once per session.
func lowYieldTurns(s *Session) []yieldTurn {
	if !s.memo.turnsDone {
		s.memo.turns, s.memo.turnsDone = yieldTurns(s), true
	}
	return s.memo.turns
}

// canonicalJSON re-encodes raw as decoding it into an any and encoding
// that again (json.Marshal) would, without the decoding: space between
// tokens is dropped and each object's keys sorted. It returns the bytes,
// and when raw is an object its keys in order. It says no (ok false) to
// anything else the round trip could change: a key given twice, a string
// with an escape Marshal writes otherwise (any but \", \\, \n, \r and \t,
// and any in a key) or with a character it escapes (<, >, &, U+2028,
// U+2029, invalid UTF-8), a number with a fraction, an exponent, a sign
// on zero or more than 15 digits (a float64 may not write it back the
// same), and to what does not decode. Saying no is always safe: the
// caller decodes then.
func canonicalJSON(raw []byte) (canon []byte, keys []string, object, ok bool) {
	sc := canonScanner{b: raw, out: make([]byte, 0, len(raw))}
	sc.space()
	if sc.i < len(raw) && raw[sc.i] == '{' {
		object = true
		sc.keys = &keys
	}
	if !sc.value(0) {
		return nil, nil, false, false
	}
	if sc.space(); sc.i != len(raw) {
		return nil, nil, false, false
	}
	return sc.out, keys, object, true
}

// canonScanner reads JSON from b at i and writes it to out for
// canonicalJSON; keys, when set, collects the keys of the top-level
// object.
type canonScanner struct {
	b, out []byte
	i      int
	keys   *[]string
}

// canonDepth bounds the nesting canonicalJSON follows; deeper input is
// decoded instead.
const canonDepth = 64

// member is one key and value of an object, written at out[from:to].
type member struct {
	key      []byte
	from, to int
}

// space skips the white space JSON allows between tokens.
func (sc *canonScanner) space() {
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// next skips space and returns the byte there, 0 at the end.
func (sc *canonScanner) next() byte {
	if sc.space(); sc.i < len(sc.b) {
		return sc.b[sc.i]
	}
	return 0
}

// value reads and writes one value at depth.
func (sc *canonScanner) value(depth int) bool {
	if depth > canonDepth {
		return false
	}
	switch c := sc.next(); {
	case c == '{':
		return sc.object(depth)
	case c == '[':
		sc.i++
		sc.out = append(sc.out, '[')
		if sc.next() == ']' {
			sc.i++
			sc.out = append(sc.out, ']')
			return true
		}
		for {
			if !sc.value(depth + 1) {
				return false
			}
			switch sc.next() {
			case ',':
				sc.i++
				sc.out = append(sc.out, ',')
			case ']':
				sc.i++
				sc.out = append(sc.out, ']')
				return true
			default:
				return false
			}
		}
	case c == '"':
		_, ok := sc.str(false)
		return ok
	case c == '-' || c >= '0' && c <= '9':
		return sc.number()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if len(sc.b)-sc.i >= len(lit) && string(sc.b[sc.i:sc.i+len(lit)]) == lit {
			sc.i += len(lit)
			sc.out = append(sc.out, lit...)
			return true
		}
	}
	return false
}

// object reads an object and writes it with its keys sorted.
func (sc *canonScanner) object(depth int) bool {
	top := depth == 0 && sc.keys != nil
	start := len(sc.out)
	sc.i++
	sc.out = append(sc.out, '{')
	if sc.next() == '}' {
		sc.i++
		sc.out = append(sc.out, '}')
		if top {
			*sc.keys = []string{}
		}
		return true
	}
	var members []member
	sorted := true
	for {
		if sc.next() != '"' {
			return false
		}
		from := len(sc.out)
		k, ok := sc.str(true)
		if !ok {
			return false
		}
		if n := len(members); n > 0 && bytes.Compare(k, members[n-1].key) <= 0 {
			sorted = false
		}
		if sc.next() != ':' {
			return false
		}
		sc.i++
		sc.out = append(sc.out, ':')
		if !sc.value(depth + 1) {
			return false
		}
		members = append(members, member{key: k, from: from, to: len(sc.out)})
		switch sc.next() {
		case ',':
			sc.i++
			sc.out = append(sc.out, ',')
		case '}':
			sc.i++
			if !sorted {
				slices.SortFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
				body := make([]byte, 0, len(sc.out)-start)
				for i, m := range members {
					if i > 0 && bytes.Equal(m.key, members[i-1].key) {
						// The round trip keeps the last value of a
						// repeated key: left to the decoder.
						return false
					}
					if i > 0 {
						body = append(body, ',')
					}
					body = append(body, sc.out[m.from:m.to]...)
				}
				sc.out = append(sc.out[:start+1], body...)
			}
			sc.out = append(sc.out, '}')
			if top {
				for _, m := range members {
					*sc.keys = append(*sc.keys, string(m.key))
				}
			}
			return true
		default:
			return false
		}
	}
}

// str reads a string with nothing Marshal would write otherwise, writes
// it and returns its bytes, which are its text when key is set.
func (sc *canonScanner) str(key bool) ([]byte, bool) {
	start := sc.i + 1
	for j := start; j < len(sc.b); {
		c := sc.b[j]
		switch {
		case c == '"':
			sc.i = j + 1
			sc.out = append(sc.out, sc.b[start-1:j+1]...)
			return sc.b[start:j], true
		case c == '\\' && !key && j+1 < len(sc.b) && strings.IndexByte(`"\\nrt`, sc.b[j+1]) >= 0:
			// The escapes Marshal writes as they are; a key's text
			// must be its bytes, so it takes none.
			j += 2
		case c < 0x20, c == '\\', c == '<', c == '>', c == '&':
			return nil, false
		case c < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRune(sc.b[j:])
			if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
				return nil, false
			}
			j += size
		}
	}
	return nil, false
}

// number reads and writes an integer of at most 15 digits without a sign
// on zero, which a float64 holds exactly and Marshal writes back the same.
func (sc *canonScanner) number() bool {
	j := sc.i
	if sc.b[j] == '-' {
		j++
	}
	start := j
	for j < len(sc.b) && sc.b[j] >= '0' && sc.b[j] <= '9' {
		j++
	}
	digits := j - start
	switch {
	case digits == 0 || digits > 15:
		return false
	case sc.b[start] == '0' && (digits > 1 || start > sc.i):
		return false
	case j < len(sc.b) && (sc.b[j] == '.' || sc.b[j] == 'e' || sc.b[j] == 'E'):
		return false
	}
	sc.out = append(sc.out, sc.b[sc.i:j]...)
	sc.i = j
	return true
}

// sessionTools returns the tools the session's session_start events
// define, by name (a later definition of a name wins), computed once per
// session.
func sessionTools(s *Session) map[string]trajectory.ToolInfo {
	if !s.memo.toolsDone {
		tools := map[string]trajectory.ToolInfo{}
		for _, e := range s.Events {
			if p, ok := e.Payload.(*trajectory.SessionStart); ok {
				for _, t := range p.Tools {
					tools[t.Name] = t
				}
			}
		}
		s.memo.tools, s.memo.toolsDone = tools, true
	}
	return s.memo.tools
}

// holds recomputes the liveness condition of defense d (which must be in
// conditions) over s, once per session: how many times its check ran and
// the events where it held.
func holds(s *Session, d trajectory.DefenseName) (checked int, held []Located) {
	if r, ok := s.memo.held[d]; ok {
		return r.checked, r.held
	}
	checked, held = conditions[d].check(s, sessionTools(s))
	if s.memo.held == nil {
		s.memo.held = map[trajectory.DefenseName]heldResult{}
	}
	s.memo.held[d] = heldResult{checked: checked, held: held}
	return checked, held
}

// toolUses yields r's tool_use blocks in order, as ranging over
// r.ToolUses() does, without making a slice of them for every reply.
func toolUses(r *trajectory.ModelResponse) iter.Seq[trajectory.ContentBlock] {
	return func(yield func(trajectory.ContentBlock) bool) {
		for _, b := range r.Content {
			if b.Type == trajectory.BlockToolUse && !yield(b) {
				return
			}
		}
	}
}

// anyToolUse reports whether some tool_use block of r satisfies f.
func anyToolUse(r *trajectory.ModelResponse, f func(trajectory.ContentBlock) bool) bool {
	for b := range toolUses(r) {
		if f(b) {
			return true
		}
	}
	return false
}
