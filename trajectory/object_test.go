package trajectory

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzIsJSONObjectAgreesWithJSONValid checks that the fast answer of
// isJSONObject is json.Valid's: a tool_use input it calls an object must
// be one, and one it refuses must not be.
func FuzzIsJSONObjectAgreesWithJSONValid(f *testing.F) {
	for _, s := range []string{`{}`, ` {"a":1} `, `{"a":"\u00e9\ud83d\ude00","b":[1,2.5e3,true,null]}`, `{"a":1}x`, `{"a":}`,
		`[1]`, `"s"`, `{"a":"\x00"}`, "{\"a\":\"\xff\"}", `{"a":1,}`, `{"a":01}`, "\t{\n}\r", `{"a":{"b":{"c":[{}]}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		trimmed := bytes.TrimLeft(raw, " \t\r\n")
		want := len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(raw)
		if got := isJSONObject(raw); got != want {
			t.Fatalf("isJSONObject(%q) = %v, json.Valid says %v", raw, got, want)
		}
	})
}
