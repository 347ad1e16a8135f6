package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxNameLen is the API's limit on a tool name.
const maxNameLen = 64

// hashLen is how many hex digits of a hash make a shortened or
// disambiguated name unique.
const hashLen = 10

// normalizeTool replaces every byte outside [a-zA-Z0-9_-] with '_'.
func normalizeTool(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; isNameByte(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// normalizeServer is normalizeTool with runs of '_' collapsed and '_'
// trimmed from both ends. A server part without "__" that neither starts
// nor ends with '_' makes the first "__" after "mcp__" the separator, so
// two different (server, tool) pairs can never meet at the same name, even
// with tool names such as "__x".
func normalizeServer(s string) string {
	n := normalizeTool(s)
	for strings.Contains(n, "__") {
		n = strings.ReplaceAll(n, "__", "_")
	}
	return strings.Trim(n, "_")
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// shortHash identifies a (server, tool) pair by its raw names.
func shortHash(server, tool string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	return hex.EncodeToString(sum[:])[:hashLen]
}

// withHash returns name with a hash of the raw pair appended, truncated so
// the result fits the API's limit.
func withHash(name, server, tool string) string {
	suffix := "_" + shortHash(server, tool)
	if len(name)+len(suffix) > maxNameLen {
		name = name[:maxNameLen-len(suffix)]
	}
	return name + suffix
}

// ToolName is the name the model calls a server's tool by:
// mcp__<server>__<tool>, normalised to ^[a-zA-Z0-9_-]{1,64}$. A name too
// long for the limit is cut and ends in a hash of the raw names, so it
// stays unique. Two tools of one server whose names normalise alike are
// told apart by Servers, which sees the whole list.
func ToolName(server, tool string) string {
	name := "mcp__" + normalizeServer(server) + "__" + normalizeTool(tool)
	if len(name) > maxNameLen {
		return withHash(name, server, tool)
	}
	return name
}

// toolNames names every tool of one server. Normalisation is lossy ("a.b"
// and "a_b" meet), so a tool whose name had to change and now meets
// another gets a hash suffix; the choice depends only on the list, never
// on the order it came in, so the names are stable across sessions (a drifting tool list breaks the prompt cache).
func toolNames(server string, raw []string) []string {
	names := make([]string, len(raw))
	count := make(map[string]int, len(raw))
	for i, r := range raw {
		names[i] = ToolName(server, r)
		count[names[i]]++
	}
	for i, r := range raw {
		if count[names[i]] > 1 && normalizeTool(r) != r {
			names[i] = withHash(names[i], server, r)
		}
	}
	return names
}
