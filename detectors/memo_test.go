package detectors

import (
	"encoding/json"
	"testing"
)

// canonInputs are tool inputs canonicalJSON must re-encode as the
// decoder does, or leave to it.
var canonInputs = []string{
	`{"file_path":"src/App.tsx"}`, `{"command":"go test ./...","timeout":120000}`,
	`{"todos":[{"content":"Fix useSession","status":"in_progress"},{"content":"Run","status":"pending"}]}`,
	`{}`, `[]`, `[1,2,3]`, `"text"`, `null`, `true`, `false`, `0`, `-12`, `123456789012345`,
	`{"a":{"c":1,"b":2}}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"a": 1}`, ` {"a":1}`, `{"a":1} `,
	`{"a":1.0}`, `{"a":1.5}`, `{"a":1e3}`, `{"a":-0}`, `{"a":01}`, `{"a":1234567890123456}`,
	`{"a":"x<y"}`, `{"a":"x&y"}`, `{"a":"\u003c"}`, `{"a":"line\nbreak"}`, `{"a":"é"}`, "{\"a\":\"\u2028\"}",
	"{\"a\":\"\xff\"}", "{\"a\":\"\t\"}", `{"a":[{},[],""]}`, `{"a":[1,]}`, `{"a":}`, `{"a"}`, `{`, ``,
	`nul`, `nullx`, `[1 ,2]`, `{"é":1,"z":2}`, `{"Z":1,"a":2}`, `{"":1}`, `{"a":tru}`,
	`{"pattern":"def transform","output_mode":"content","glob":"*.py"}`, "{ \"b\" :\t[ 1 , {\"d\":1,\"c\":2} ],\r\n\"a\":null }",
	`{"b":1,"a":2,"b":3}`, `{"a":"x\ny\t\"q\"\\"}`, `{"a":"\/"}`, `{"a":"\b\f"}`, `{"a\n":1}`, `{"a":"\`, `{"z":{"y":{"x":[{"b":1,"a":2}]}},"a":0}`,
}

// TestCanonicalJSONAgreesWithTheDecoder checks that whatever
// canonicalJSON re-encodes, decoding and encoding it again gives the same
// canonical form and keys, that inputs differing only in space and key
// order are re-encoded without the decoder, and that those the round trip
// changes otherwise are left to it.
func TestCanonicalJSONAgreesWithTheDecoder(t *testing.T) {
	for _, raw := range canonInputs {
		checkCanon(t, []byte(raw))
	}
	for _, raw := range []string{`{"file_path":"src/App.tsx"}`, `{"b":1,"a":2}`, `{"a": 1}`, `[]`, `-12`, `{"c":"x\ny"}`,
		`{"pattern":"def transform","output_mode":"content","glob":"*.py"}`} {
		if _, _, _, ok := canonicalJSON([]byte(raw)); !ok {
			t.Errorf("canonicalJSON(%s) left it to the decoder; it needs none", raw)
		}
	}
	for _, raw := range []string{`{"a":1.0}`, `{"a":"x<y"}`, `{"a":-0}`, `{"a":1,"a":2}`, `{"a":"\u0041"}`, `{"a\n":1}`, `{"a":1e3}`} {
		if _, _, _, ok := canonicalJSON([]byte(raw)); ok {
			t.Errorf("canonicalJSON(%s) re-encoded it; only the decoder knows what a round trip makes of it", raw)
		}
	}
}

// FuzzCanonicalJSON checks canonicalJSON against the decoder on any bytes.
func FuzzCanonicalJSON(f *testing.F) {
	for _, raw := range canonInputs {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkCanon(t, raw) })
}

// checkCanon fails t when deriveInput and decodeInput disagree on raw.
func checkCanon(t *testing.T, raw json.RawMessage) {
	t.Helper()
	got, want := deriveInput(raw), decodeInput(raw)
	if got.canonical != want.canonical || got.keySet() != want.keySet() {
		t.Errorf("input %q: derived %q with keys %q, decoded %q with keys %q", raw, got.canonical, got.keySet(), want.canonical, want.keySet())
	}
}
