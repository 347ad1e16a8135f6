package recorder

import (
	"bytes"
	"encoding/base64"
	"unicode/utf8"
)

// Secrets are recognised on decoded values, not only on the bytes as they
// stand: an encoding can hide a key from a pattern that reads raw text. This
// file undoes the encodings a recorded text is made of, or that a tool
// output may use to carry a key past the patterns:
//
//   - escapes: JSON's \/ and \u002d, a shell's \x2d, a URL's %2D, nested
//     any number of times (a JSON document inside a tool output inside a
//     trajectory line escapes its escapes). The text is decoded into a view
//     that remembers where each decoded byte came from; the patterns run
//     over the view, and each secret they find is replaced in the original
//     text, whole escapes included, so the rest keeps its encoding.
//   - base64: a run of base64 long enough to hold a key, whose start
//     decodes to text, is decoded (lines wrapped at a multiple of four
//     joined, from the offset at which its start decodes to text), and
//     when the patterns find a secret in what it decodes to, at any
//     alignment, the whole run is replaced by [REDACTED:base64].
//
// Both passes are taken only when a cheap scan finds their trigger (an
// escape that decodes to a character a key is made of, or a long run of
// base64 that decodes to text), which ordinary recorded text rarely has;
// the scan for runs looks at one byte in minBase64Run.

// base64Repl replaces a base64 run that decodes to a secret.
const base64Repl = "[REDACTED:base64]"

// redactText is redactAll followed by the passes over what escapes and
// base64 hide, repeated while one of them replaces something (a
// replacement can expose a neighbour, and redaction is idempotent).
func redactText(patterns []pattern, b []byte, filter bool) (out []byte, n int) {
	out, n = redactAll(patterns, b, filter)
	for range maxPasses {
		k, m := 0, 0
		if hidesEscapes(out) {
			out, m = redactEscaped(patterns, out, filter)
			k += m
		}
		out, m = redactBase64(patterns, out, filter)
		k += m
		if k == 0 {
			break
		}
		out, m = redactAll(patterns, out, filter)
		n += k + m
	}
	return out, n
}

// isHidingChar reports the characters an escape may spell to hide a key: those
// keys and their separators are made of. An escape of anything else (a
// control character, a quote, an accented letter) is what encoders write
// anyway and is left to the raw patterns.
func isHidingChar(c byte) bool {
	switch c {
	case '-', '_', '/', '+', '=', '.', ':', '@', '~', '%', '\\':
		return true
	}
	return isAlnum(c)
}

// hidesEscapes reports whether b holds an escape that decodes to a
// character a key is made of: \/, \u00XX or \xXX of a hiding character,
// or %XX of one.
func hidesEscapes(b []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			break
		}
		k := i + j
		i = k + 1
		if k+1 >= len(b) {
			break
		}
		switch b[k+1] {
		case '/':
			return true
		case 'u':
			if r, ok := hex4(b[k+2:]); ok && r < utf8.RuneSelf && isHidingChar(byte(r)) {
				return true
			}
		case 'x':
			if c, ok := hex2(b[k+2:]); ok && isHidingChar(c) {
				return true
			}
		}
	}
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '%')
		if j < 0 {
			return false
		}
		k := i + j
		i = k + 1
		if c, ok := hex2(b[k+1:]); ok && isHidingChar(c) {
			return true
		}
	}
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func hex2(b []byte) (byte, bool) {
	if len(b) < 2 {
		return 0, false
	}
	h, ok1 := hexVal(b[0])
	l, ok2 := hexVal(b[1])
	return h<<4 | l, ok1 && ok2
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	h, ok1 := hex2(b)
	l, ok2 := hex2(b[2:])
	return rune(h)<<8 | rune(l), ok1 && ok2
}

// maxUnescape bounds the levels of escaping undone: a key in a JSON
// string in a tool output in a trajectory line is three levels deep.
const maxUnescape = 4

// unescape decodes one level of the escapes b may hold (JSON's \n \t \r
// \b \f \" \\ \/ \uXXXX, a shell's \xXX and a URL's %XX) and returns the
// decoded text and, for each of its bytes, the offset in b of the escape
// (or byte) it came from, with len(b) appended; changed is false when b
// had nothing to decode.
func unescape(b []byte) (out []byte, from []int, changed bool) {
	out = make([]byte, 0, len(b))
	from = make([]int, 0, len(b)+1)
	for i := 0; i < len(b); {
		c, n := b[i], 1
		switch {
		case c == '\\' && i+1 < len(b):
			switch e := b[i+1]; e {
			case 'n':
				c, n = '\n', 2
			case 't':
				c, n = '\t', 2
			case 'r':
				c, n = '\r', 2
			case 'b':
				c, n = '\b', 2
			case 'f':
				c, n = '\f', 2
			case '"', '\\', '/', '\'':
				c, n = e, 2
			case 'u':
				if r, ok := hex4(b[i+2:]); ok {
					start := len(out)
					out = utf8.AppendRune(out, r)
					for range len(out) - start {
						from = append(from, i)
					}
					i += 6
					changed = true
					continue
				}
			case 'x':
				if v, ok := hex2(b[i+2:]); ok {
					c, n = v, 4
				}
			}
		case c == '%':
			if v, ok := hex2(b[i+1:]); ok {
				c, n = v, 3
			}
		}
		out = append(out, c)
		from = append(from, i)
		i += n
		changed = changed || n > 1
	}
	return out, append(from, len(b)), changed
}

// decodedView undoes up to maxUnescape levels of escapes in b and returns
// the view and where each of its bytes came from in b (with len(b)
// appended), or nil when b has no escape.
func decodedView(b []byte) (view []byte, from []int) {
	view = b
	for range maxUnescape {
		next, f, changed := unescape(view)
		if !changed {
			break
		}
		if from != nil {
			for i, o := range f {
				f[i] = from[o]
			}
		}
		view, from = next, f
	}
	return view, from
}

// redactEscaped runs the patterns over the decoded view of b and replaces
// each secret they find there in b, from the first escape of the secret to
// the last one.
func redactEscaped(patterns []pattern, b []byte, filter bool) ([]byte, int) {
	n := 0
	for range maxPasses {
		view, from := decodedView(b)
		if from == nil {
			break
		}
		replaced := false
		for i := range patterns {
			p := &patterns[i]
			start := 0
			if p.find != nil && filter {
				if start = p.find(view); start < 0 {
					continue
				}
			}
			spans := p.secrets(view, start)
			if len(spans) == 0 {
				continue
			}
			for k := range spans {
				spans[k] = [2]int{from[spans[k][0]], from[spans[k][1]]}
			}
			var m int
			b, m = replaceSpans(b, spans, p.repl)
			if m > 0 {
				n += m
				replaced = true
				break // the view is stale
			}
		}
		if !replaced {
			break
		}
	}
	return b, n
}

// replaceSpans replaces each of spans, in order and not overlapping, by
// repl, skipping empty ones and those that are repl already.
func replaceSpans(src []byte, spans [][2]int, repl string) ([]byte, int) {
	var out []byte
	last, n := 0, 0
	for _, sp := range spans {
		s, e := sp[0], sp[1]
		if s < last || s >= e || string(src[s:e]) == repl {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(src)+len(repl)*len(spans))
		}
		out = append(out, src[last:s]...)
		out = append(out, repl...)
		last = e
		n++
	}
	if n == 0 {
		return src, 0
	}
	return append(out, src[last:]...), n
}

// minBase64Run is the shortest line of base64 looked at: the base64 of
// the shortest known key (an AWS access key id, 20 bytes) is 28
// characters, and a wrapped block's lines are 64 or 76.
const minBase64Run = 24

// nextBase64Run returns the first run of at least minBase64Run base64
// characters at or after from whose start decodes to text (see
// looksLikeText), or -1. It looks at every minBase64Run-th byte only, which
// any such run covers, and measures the run around the ones that are base64.
func nextBase64Run(b []byte, from int) (start, end int) {
	for p := from + minBase64Run - 1; p < len(b); {
		if !isBase64Char(b[p]) {
			p += minBase64Run
			continue
		}
		s, e := p, p+1
		for s > from && isBase64Char(b[s-1]) {
			s--
		}
		for e < len(b) && isBase64Char(b[e]) {
			e++
		}
		if e-s >= minBase64Run && looksLikeText(b[s:e]) {
			return s, e
		}
		p = e + minBase64Run
	}
	return -1, -1
}

// looksLikeText reports whether the first eight characters of run, from
// one of the four offsets an encoding may start at, decode to printable
// ASCII or whitespace, as every known key and the files that hold them do.
// Most runs of letters that are not base64 (paths, identifiers, a line of
// x) fail at once.
func looksLikeText(run []byte) bool { return textOffset(run) >= 0 }

// textOffset returns the first of the four offsets from which run's first
// eight characters decode to text, or -1.
func textOffset(run []byte) int {
	var dst [6]byte
next:
	for off := range 4 {
		if off+8 > len(run) {
			return -1
		}
		chunk := run[off : off+8]
		enc := base64.RawStdEncoding
		if bytes.IndexByte(chunk, '-') >= 0 || bytes.IndexByte(chunk, '_') >= 0 {
			enc = base64.RawURLEncoding
		}
		if _, err := enc.Decode(dst[:], chunk); err != nil {
			continue
		}
		for _, c := range dst {
			if (c < 0x20 || c > 0x7e) && c != '\n' && c != '\r' && c != '\t' {
				continue next
			}
		}
		return off
	}
	return -1
}

// hasBase64Text reports whether b holds a run of base64 that may decode to
// a key.
func hasBase64Text(b []byte) bool {
	s, _ := nextBase64Run(b, 0)
	return s >= 0
}

func isBase64Char(c byte) bool { return isAlnum(c) || c == '+' || c == '/' || c == '-' || c == '_' }

// newlineAt returns the length of the line break at b[i:] — a newline, a
// CRLF or their JSON escapes — or 0.
func newlineAt(b []byte, i int) int {
	for _, nl := range []string{"\n", "\r\n", `\n`, `\r\n`} {
		if bytes.HasPrefix(b[i:], []byte(nl)) {
			return len(nl)
		}
	}
	return 0
}

// newlineBefore returns the length of the line break that ends right
// before b[i], or 0.
func newlineBefore(b []byte, i int) int {
	for _, nl := range []string{"\r\n", `\r\n`, "\n", `\n`} {
		if i >= len(nl) && string(b[i-len(nl):i]) == nl {
			if nl[0] == '\\' && i > len(nl) && b[i-len(nl)-1] == '\\' {
				continue // \\n is a backslash and an n
			}
			return len(nl)
		}
	}
	return 0
}

// base64Run returns the run of base64 around b[i]: its start, its end
// (after any '=' padding) and its characters, with lines wrapped at a
// multiple of four characters joined (base64 -w 76, PEM's 64).
func base64Run(b []byte, i int) (start, end int, data []byte) {
	start, end = lineStart(b, i), i
	end = max(end, start)
	for end < len(b) && isBase64Char(b[end]) {
		end++
	}
	if start >= end {
		return end, end, nil
	}
	// Earlier lines of the same block: full lines, a multiple of four.
	for {
		nl := newlineBefore(b, start)
		if nl == 0 || start-nl == 0 {
			break
		}
		s := lineStart(b, start-nl)
		if l := start - nl - s; l < 16 || l%4 != 0 {
			break
		}
		start = s
	}
	// Later lines, while this one is full.
	for {
		if l := end - lineStart(b, end); l < 16 || l%4 != 0 {
			break
		}
		nl := newlineAt(b, end)
		if nl == 0 || end+nl >= len(b) || !isBase64Char(b[end+nl]) {
			break
		}
		e := end + nl
		for e < len(b) && isBase64Char(b[e]) {
			e++
		}
		end = e
	}
	data = make([]byte, 0, end-start)
	for k := start; k < end; {
		if c := b[k]; c == '\n' || c == '\r' || c == '\\' {
			if nl := newlineAt(b, k); nl > 0 {
				k += nl
				continue
			}
		}
		data = append(data, b[k])
		k++
	}
	for end < len(b) && b[end] == '=' {
		end++
	}
	return start, end, data
}

// lineStart returns where the base64 that ends at or runs through b[i]
// starts: after the last byte that is not base64, and after the letters
// of an escape (\b, \u0041), which a replacement may not split. It is
// past i when b[i] is inside an escape.
func lineStart(b []byte, i int) int {
	s := i
	for s > 0 && isBase64Char(b[s-1]) {
		s--
	}
	for s < len(b) && isBase64Char(b[s]) && escaped(b, s) {
		if _, ok := hex4(b[s+1:]); b[s] == 'u' && ok {
			s += 5
		} else {
			s++
		}
	}
	return s
}

// escaped reports whether b[i] follows an odd number of backslashes: it
// is the letter of an escape.
func escaped(b []byte, i int) bool {
	n := 0
	for i-n > 0 && b[i-n-1] == '\\' {
		n++
	}
	return n%2 == 1
}

// decodeBase64 decodes data, a run of base64 without padding, in the
// alphabet its characters tell, from the offset at which its start decodes
// to text (an encoding may start a character or three into the run), or
// returns nil.
func decodeBase64(data []byte) []byte {
	off := textOffset(data)
	if off < 0 {
		return nil
	}
	enc := base64.RawStdEncoding
	if bytes.ContainsAny(data, "-_") {
		enc = base64.RawURLEncoding
	}
	d := data[off:]
	if len(d)%4 == 1 { // no encoding ends so
		d = d[:len(d)-1]
	}
	dec := make([]byte, enc.DecodedLen(len(d)))
	n, err := enc.Decode(dec, d)
	if err != nil {
		return nil
	}
	return dec[:n]
}

// redactBase64 replaces each base64 block (see base64Run) that decodes to
// text in which the patterns find a secret.
func redactBase64(patterns []pattern, b []byte, filter bool) ([]byte, int) {
	var spans [][2]int
	for s, e := nextBase64Run(b, 0); s >= 0; s, e = nextBase64Run(b, e) {
		start, end, data := base64Run(b, s)
		if dec := decodeBase64(data); dec != nil {
			if _, k := redactText(patterns, dec, filter); k > 0 {
				spans = append(spans, [2]int{start, end})
			}
		}
		e = max(e, end)
	}
	return replaceSpans(b, spans, base64Repl)
}
