package recorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
)

// A Redactor replaces secrets in encoded trajectory lines. It is immutable
// and safe for concurrent use. The zero Redactor (and a nil one) uses the
// built-in patterns, so there is no Redactor that lets secrets through.
//
// The built-in patterns work on the encoded JSON text and are written so
// that a replacement never crosses a JSON string boundary or splits an
// escape: the replaced part of a match is a run of token characters, which
// never include '"' or '\', or (for private keys) whole escape pairs inside
// one string. A line that was valid JSON therefore stays valid JSON. User
// patterns carry no such guarantee; when one breaks the line, the line is
// decoded and every string redacted one by one instead.
//
// Redaction is a safety net for accidents, not a defence against an
// adversary: a secret spelled with JSON \u escapes is not recognised.
type Redactor struct {
	patterns []pattern
}

// pattern is one redaction rule. For the built-ins, group 1 of re is the
// secret; the rest of a match is context that is kept.
type pattern struct {
	name  string
	re    *regexp.Regexp
	group int
	// find is a cheap test that returns the offset from which re may
	// match, or -1 when it cannot match at all, so that the regexp runs on
	// few lines and, when it does, not over the whole line. It must never
	// miss a match (the fuzz test checks). nil means from 0.
	find func(line []byte) int
	repl string
}

// boundary is what may stand before a token secret: the start, a character
// that is not a letter or digit, or a JSON escape that ends in one (\n, \t,
// \u00e9), so that "task-..." does not look like "sk-..." but "\nsk-..." does.
const boundary = `(?:^|[^A-Za-z0-9]|\\[bfnrt]|\\u[0-9A-Fa-f]{4})`

// jsonStringChars matches the characters of an encoded JSON string: anything
// but a quote or backslash, or a whole escape pair.
const jsonStringChars = `(?:[^"\\]|\\.)`

// boundaryLen is the longest text boundary can match: \u00e9.
const boundaryLen = 6

var builtins = []pattern{
	builtin("anthropic", boundary+`(sk-ant-[A-Za-z0-9_-]{20,})`,
		func(b []byte) int { return findToken(b, "sk-ant-", 1, isKeyChar, 20) }),

	// After anthropic, whose keys also start with sk-. The optional proj-,
	// svcacct- or admin- is made of key characters too, so 20 key
	// characters after sk- is a necessary condition.
	builtin("openai", boundary+`(sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})`,
		func(b []byte) int { return findToken(b, "sk-", 1, isKeyChar, 20) }),

	builtin("aws_access_key", boundary+`((?:AKIA|ASIA)[0-9A-Z]{16})`,
		func(b []byte) int {
			return first(findToken(b, "AKIA", 1, isUpperDigit, 16), findToken(b, "ASIA", 1, isUpperDigit, 16))
		}),

	// The key name and separator are kept. The three forms are plain text
	// (key=value, key: value, key='value', key=\"value\"), an embedded JSON
	// member ("key":"value") and escaped JSON inside a string
	// (\"key\":\"value\"); each requires the value to start inside a string.
	builtin("aws_secret", `(?i)aws_secret_access_key(?:"\s*:\s*"|\\"\s*[:=]\s*\\"|\s*[:=]\s*(?:\\"|')?)([A-Za-z0-9/+]{40})`,
		func(b []byte) int { return back(indexFold(b, "_secret_access_key", 15), len("aws")) }),

	builtin("github", boundary+`(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})`,
		func(b []byte) int {
			at := findToken(b, "github_pat_", 5, isWordChar, 22)
			if !bytes.Contains(b, []byte("gh")) { // "github" has no "gh"
				return at
			}
			for _, lit := range []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"} {
				at = first(at, findToken(b, lit, 2, isAlnum, 36))
			}
			return at
		}),

	// The word Bearer is kept so a reader still sees what was there.
	// Whitespace may be encoded (\n, \t) inside a JSON string.
	builtin("bearer", `(?i)bearer(?:\s|\\[nrt])+([A-Za-z0-9._~+/=-]{16,})`, findBearer),

	// A block is redacted through its END line, or to the end of its JSON
	// string when it was cut off (a truncated tool output).
	builtin("private_key", `(-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----(?:`+
		jsonStringChars+`*?-----END[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|`+jsonStringChars+`*))`,
		func(b []byte) int {
			i := indexAt(b, "-----BEGIN", 5)
			if i < 0 || !bytes.Contains(b[i:], []byte("PRIVATE KEY")) {
				return -1
			}
			return i
		}),
}

// builtin makes a built-in pattern whose group 1 is the secret.
func builtin(name, re string, find func([]byte) int) pattern {
	return pattern{name: name, re: regexp.MustCompile(re), group: 1, find: find, repl: "[REDACTED:" + name + "]"}
}

// userRepl replaces matches of user patterns.
const userRepl = "[REDACTED:custom]"

var defaultRedactor = &Redactor{patterns: builtins}

// DefaultRedactor returns the redactor with only the built-in patterns:
// Anthropic and OpenAI API keys, AWS access key ids and secret keys, GitHub
// tokens, bearer tokens and private key blocks.
func DefaultRedactor() *Redactor { return defaultRedactor }

// NewRedactor returns a redactor with the built-in patterns and the extra
// ones, regular expressions in RE2 syntax applied after the built-ins. A
// match of an extra pattern is replaced by [REDACTED:custom]. A pattern that
// does not compile, or that matches the empty string (it would redact
// between every two characters), is an error naming its index.
func NewRedactor(extra []string) (*Redactor, error) {
	r := &Redactor{patterns: append([]pattern(nil), builtins...)}
	for i, src := range extra {
		re, err := regexp.Compile(src)
		if err != nil {
			return nil, fmt.Errorf("redaction pattern %d (%q): %w", i, src, err)
		}
		if re.MatchString("") {
			return nil, fmt.Errorf("redaction pattern %d (%q): %w", i, src, errEmptyMatch)
		}
		p := pattern{name: "custom", re: re, repl: userRepl}
		if prefix, _ := re.LiteralPrefix(); prefix != "" {
			// Every match starts with the prefix.
			lit := []byte(prefix)
			p.find = func(b []byte) int { return bytes.Index(b, lit) }
		}
		r.patterns = append(r.patterns, p)
	}
	return r, nil
}

var errEmptyMatch = errors.New("matches the empty string; it would redact between every two characters")

// Redact replaces the secrets in line, one encoded JSON trajectory line
// without its newline, and returns the result and the number of
// replacements. When nothing matches, out is line itself; otherwise out is
// a new slice and line is unchanged. When line is valid JSON, so is out.
func (r *Redactor) Redact(line []byte) (out []byte, n int) {
	out, n, _ = r.redact(line)
	return out, n
}

// redact is Redact that also reports whether the slow path (decode, redact
// each string, re-encode) was taken, so tests can check that the built-in
// patterns never need it.
func (r *Redactor) redact(line []byte) (out []byte, n int, slow bool) {
	patterns := builtins
	if r != nil && r.patterns != nil {
		patterns = r.patterns
	}
	out = line
	for i := range patterns {
		p := &patterns[i]
		from := 0
		if p.find != nil {
			if from = p.find(out); from < 0 {
				continue
			}
		}
		var k int
		out, k = p.replace(out, from)
		n += k
	}
	// Only a replacement can break the JSON, and replacements are rare, so
	// checking then costs nothing on the common path.
	if n == 0 || json.Valid(out) {
		return out, n, false
	}
	if fixed, m, err := redactStrings(line, patterns); err == nil {
		return fixed, m, true
	}
	// The line was not JSON to begin with; the secrets are gone at least.
	return out, n, false
}

// replace replaces every match of the pattern's group in src that starts
// at or after from. It returns src itself when there is none.
func (p *pattern) replace(src []byte, from int) ([]byte, int) {
	locs := p.re.FindAllSubmatchIndex(src[from:], -1)
	if len(locs) == 0 {
		return src, 0
	}
	var out []byte
	last, n := 0, 0
	for _, loc := range locs {
		s, e := loc[2*p.group], loc[2*p.group+1]
		if s < 0 || s == e {
			continue
		}
		s, e = s+from, e+from
		if out == nil {
			out = make([]byte, 0, len(src)+len(p.repl)*len(locs))
		}
		out = append(out, src[last:s]...)
		out = append(out, p.repl...)
		last = e
		n++
	}
	if n == 0 {
		return src, 0
	}
	return append(out, src[last:]...), n
}

// redactStrings is the slow path: it walks the tokens of line, applies
// every pattern to each decoded string (keys too) and writes the value back
// with the original member order and numbers, so the line keeps its shape.
func redactStrings(line []byte, patterns []pattern) ([]byte, int, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var out bytes.Buffer
	out.Grow(len(line))
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)

	type frame struct {
		object bool
		n      int // keys and values written so far
	}
	var stack []frame
	n := 0
	separate := func() {
		if len(stack) == 0 {
			return
		}
		f := &stack[len(stack)-1]
		switch {
		case f.object && f.n%2 == 1:
			out.WriteByte(':')
		case f.n > 0:
			out.WriteByte(',')
		}
		f.n++
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				separate()
				stack = append(stack, frame{object: v == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			out.WriteByte(byte(v))
		case string:
			separate()
			s := []byte(v)
			for i := range patterns {
				var k int
				s, k = patterns[i].replace(s, 0)
				n += k
			}
			if err := enc.Encode(string(s)); err != nil {
				return nil, 0, err
			}
			out.Truncate(out.Len() - 1) // Encode's newline
		case json.Number:
			separate()
			out.WriteString(v.String())
		case bool:
			separate()
			if v {
				out.WriteString("true")
			} else {
				out.WriteString("false")
			}
		case nil:
			separate()
			out.WriteString("null")
		}
	}
	if !json.Valid(out.Bytes()) {
		return nil, 0, errors.New("redact: re-encoded line is not valid JSON")
	}
	return out.Bytes(), n, nil
}

// The find functions below are necessary conditions for a match, written
// out by hand because a regexp without a literal prefix tries every
// position of the line, which is too slow to do for every event.

// findToken returns the offset from which a token starting with lit and
// followed by at least n bytes of class may be matched, allowing for the
// boundary before it, or -1 when there is no such token. lit is searched
// for by its byte at anchor, the rarest one in ordinary text.
func findToken(b []byte, lit string, anchor int, class func(byte) bool, n int) int {
	for i := 0; ; {
		j := indexAt(b[i:], lit, anchor)
		if j < 0 {
			return -1
		}
		i += j + len(lit)
		if hasRun(b[i:], class, n) {
			return back(i-len(lit), boundaryLen)
		}
	}
}

// indexAt is bytes.Index that scans for the byte at lit[anchor] rather than
// lit[0]: a rare byte ("k" of "sk-") means few false starts.
func indexAt(s []byte, lit string, anchor int) int {
	c := lit[anchor]
	for i := anchor; i+len(lit)-anchor <= len(s); i++ {
		j := bytes.IndexByte(s[i:len(s)-len(lit)+anchor+1], c)
		if j < 0 {
			return -1
		}
		i += j
		if string(s[i-anchor:i-anchor+len(lit)]) == lit {
			return i - anchor
		}
	}
	return -1
}

// findBearer returns the offset of the first "bearer", in any case,
// followed by whitespace (raw or a JSON escape) and 16 token characters.
// Each case of the first letter is scanned for once, so the work stays
// linear however many times the word occurs.
func findBearer(b []byte) int {
	return first(findBearerBy(b, 'b'), findBearerBy(b, 'B'))
}

func findBearerBy(b []byte, c byte) int {
	for i := 0; ; {
		j := indexFoldBy(b[i:], c, "bearer", 0)
		if j < 0 {
			return -1
		}
		at := i + j
		i = at + len("bearer")
		k := i
		for k < len(b) {
			if c := b[k]; c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
				k++
			} else if c == '\\' && k+1 < len(b) && (b[k+1] == 'n' || b[k+1] == 'r' || b[k+1] == 't') {
				k += 2
			} else {
				break
			}
		}
		if k > i && hasRun(b[k:], isBearerChar, 16) {
			return at
		}
	}
}

// hasRun reports whether b starts with at least n bytes of class.
func hasRun(b []byte, class func(byte) bool, n int) bool {
	if len(b) < n {
		return false
	}
	for _, c := range b[:n] {
		if !class(c) {
			return false
		}
	}
	return true
}

func back(i, n int) int {
	if i < 0 {
		return -1
	}
	return max(i-n, 0)
}

// first returns the smaller offset that is not -1.
func first(i, j int) int {
	if i < 0 || (j >= 0 && j < i) {
		return j
	}
	return i
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
func isUpperDigit(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
func isWordChar(c byte) bool   { return isAlnum(c) || c == '_' }
func isKeyChar(c byte) bool    { return isAlnum(c) || c == '_' || c == '-' }
func isBearerChar(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=' || c == '-'
}

// indexFold returns the index of the first instance of needle, a
// lower-case ASCII string, in s in any letter case, or -1. It scans for the
// needle's byte at anchor with bytes.IndexByte (fast), in both cases, and
// compares in place.
func indexFold(s []byte, needle string, anchor int) int {
	c := needle[anchor]
	i := indexFoldBy(s, c, needle, anchor)
	if c >= 'a' && c <= 'z' {
		i = first(i, indexFoldBy(s, c-'a'+'A', needle, anchor))
	}
	return i
}

func indexFoldBy(s []byte, c byte, needle string, anchor int) int {
	for i := anchor; i+len(needle)-anchor <= len(s); i++ {
		j := bytes.IndexByte(s[i:len(s)-len(needle)+anchor+1], c)
		if j < 0 {
			return -1
		}
		i += j
		if bytes.EqualFold(s[i-anchor:i-anchor+len(needle)], []byte(needle)) {
			return i - anchor
		}
	}
	return -1
}
