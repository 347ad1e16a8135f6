package trajectory

import (
	"bytes"
	"encoding/json"
)

// scanObject splits a JSON object into its top-level members without
// decoding their values; that is enough to find the event type before the
// payload is decoded, at a fraction of a full decode's cost. It checks only
// the object's outline: values are checked when they are decoded. ok is
// false when b is not a single object.
//
// With a non-nil early, the values of payload fields that come after the
// type member are decoded as they are met (see early.value), so that the
// bytes of most lines are read once, not once to scan and once to decode.
// The outline found is the same either way.
func scanObject(b []byte, out []member, early *earlyDecode) ([]member, bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return out, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return out, skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return out, false
		}
		start := i
		j, escaped, ok := skipString(b, i)
		if !ok {
			return out, false
		}
		key := b[i+1 : j-1]
		if escaped {
			var k string
			if json.Unmarshal(b[i:j], &k) != nil {
				return out, false
			}
			key = []byte(k)
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return out, false
		}
		i = skipSpace(b, i+1)
		vs := i
		decoded, id := false, idUnresolved
		if early != nil {
			i, decoded = early.value(key, b, vs)
			id = early.id
		}
		if !decoded {
			if i, ok = skipValue(b, vs); !ok {
				return out, false
			}
		}
		out = append(out, member{key: key, start: start, end: i, val: b[vs:i], decoded: decoded, id: id})
		i = skipSpace(b, i)
		if i >= len(b) {
			return out, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return out, skipSpace(b, i+1) == len(b)
		default:
			return out, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the offset just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) (end int, escaped, ok bool) {
	// Keys and closed-set values are short: a plain loop finds their end
	// before a call to IndexByte would have started.
	for j := i + 1; j < len(b) && j <= i+32; j++ {
		if c := b[j]; c == '"' {
			return j + 1, false, true
		} else if c == '\\' {
			break
		}
	}
	// Most strings hold no escape: find the closing quote at memory speed.
	if q := bytes.IndexByte(b[i+1:], '"'); q >= 0 && bytes.IndexByte(b[i+1:i+1+q], '\\') < 0 {
		return i + q + 2, false, true
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i + 1, escaped, true
		}
	}
	return 0, false, false
}

// skipValue returns the offset just past the value starting at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		end, _, ok := skipString(b, i)
		return end, ok
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, _, ok := skipString(b, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	}
	start := i
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i, i > start
		}
		i++
	}
	return i, i > start
}
