package detectors

import (
	"encoding/json"
	"fmt"
	"slices"
)

// memo holds what several detectors derive from one session's tool
// inputs, so that each input is decoded once per session, not once per
// detector: the detectors run one after another over a session, in one
// goroutine, so the memo needs no lock.
type memo struct {
	inputs map[string]input
}

// input is what is derived from one tool input's bytes.
type input struct {
	// canonical is the input re-encoded, so key order and spacing do not
	// count; the raw bytes when they do not decode.
	canonical string
	// keys are its sorted top-level keys, "" when it is not an object.
	keys string
}

// input returns what is derived from raw, computing it on first use.
func (s *Session) input(raw json.RawMessage) input {
	if in, ok := s.memo.inputs[string(raw)]; ok {
		return in
	}
	in := input{canonical: string(raw)}
	var v any
	if json.Unmarshal(raw, &v) == nil {
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
	}
	if s.memo.inputs == nil {
		s.memo.inputs = map[string]input{}
	}
	s.memo.inputs[string(raw)] = in
	return in
}

// canonical returns raw re-encoded, so that two inputs that differ only
// in key order or spacing compare equal.
func (s *Session) canonical(raw json.RawMessage) string { return s.input(raw).canonical }

// keySet returns the sorted top-level keys of a tool input.
func (s *Session) keySet(raw json.RawMessage) string { return s.input(raw).keys }
