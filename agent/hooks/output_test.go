package hooks

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestJSONEqualComparesDecodedValues(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{"Identical bytes are equal.", `{"a":1}`, `{"a":1}`, true},
		{"Key order does not matter.", `{"a":1,"b":"x"}`, `{"b":"x","a":1}`, true},
		{"Spacing does not matter.", `{"a":[1,2]}`, " { \"a\" : [ 1 , 2 ] }\n", true},
		{"Number spelling does not matter: 1, 1.0 and 1e0 are one value.", `{"a":1}`, `{"a":1.0e0}`, true},
		{"Large integers are compared exactly, not through float64.", `{"a":9007199254740993}`, `{"a":9007199254740992}`, false},
		{"A changed string is a change.", `{"a":"ls"}`, `{"a":"ls "}`, false},
		{"An added key is a change.", `{"a":1}`, `{"a":1,"b":null}`, false},
		{"Array order matters.", `[1,2]`, `[2,1]`, false},
		{"A number and its string are different.", `{"a":1}`, `{"a":"1"}`, false},
		{"null differs from an empty object.", `null`, `{}`, false},
		{"Invalid JSON falls back to byte equality.", `{"a":`, `{"a":`, true},
		{"Invalid JSON never equals valid JSON.", `{"a":`, `{"a":1}`, false},
		{"Trailing data makes a text invalid.", `{"a":1} {}`, `{"a":1}`, false},
		{"A huge exponent is compared without blowing up.", `1e999999999`, `1e999999998`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := jsonEqual([]byte(tt.a), []byte(tt.b)); got != tt.want {
				t.Fatalf("jsonEqual(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
			if got := jsonEqual([]byte(tt.b), []byte(tt.a)); got != tt.want {
				t.Fatalf("jsonEqual is not symmetric for %s, %s", tt.a, tt.b)
			}
		})
	}
}

func FuzzParseOutput(f *testing.F) {
	for _, s := range []string{
		``,
		`{}`,
		`{"decision":"block","reason":"no"}`,
		`{"decision":"approve"}`,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"r","updatedInput":{"a":[1,2,{"b":null}]},"additionalContext":"c"}}`,
		`{"hookSpecificOutput":{"updatedInput":"x"}}`,
		`{"hookSpecificOutput":null,"continue":false,"suppressOutput":true}`,
		`Formatted 3 files`,
		`{"decision":1}`,
		"\ufeff{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stdout []byte) {
		a, err := parseOutput(stdout)
		if err != nil {
			if a.block || a.decision != "" || a.updatedInput != nil || a.context != "" {
				t.Fatalf("parseOutput returned a partial answer %+v with error %v", a, err)
			}
			return
		}
		if a.updatedInput != nil {
			var obj map[string]any
			if json.Unmarshal(a.updatedInput, &obj) != nil || obj == nil {
				t.Fatalf("accepted updatedInput %s is not a JSON object", a.updatedInput)
			}
			if !jsonEqual(a.updatedInput, a.updatedInput) {
				t.Fatalf("updatedInput %s is not equal to itself", a.updatedInput)
			}
		}
		if strictness(a.decision) == 0 && a.decision != "" {
			t.Fatalf("accepted unknown decision %q", a.decision)
		}
		if a.block && len(bytes.TrimSpace(stdout)) == 0 {
			t.Fatalf("empty stdout blocked")
		}
	})
}

func FuzzJSONEqualIgnoresReserialisation(f *testing.F) {
	for _, s := range []string{`{"command":"ls","timeout":5}`, `[1,2.5,"x",null,true,{"a":{}}]`, `1e3`, `"\u00e9"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		// Re-encoding through any reorders keys and respells numbers, as a
		// hook that decodes and re-encodes its input does.
		again, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return
		}
		// float64 rounding legitimately changes a number with more digits
		// than float64 holds; every other re-encoding must compare equal.
		if !jsonEqual(data, again) && !hasLossyNumber(data) {
			t.Fatalf("jsonEqual(%s, %s) = false for a re-serialisation", data, again)
		}
	})
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// hasLossyNumber reports whether data holds a number float64 cannot hold
// exactly, which a re-encoding through float64 legitimately changes.
func hasLossyNumber(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if n, ok := tok.(json.Number); ok {
			f, err := n.Float64()
			if err != nil {
				return true
			}
			if !numberEqual(n, json.Number(mustMarshal(f))) {
				return true
			}
		}
	}
}

func TestNumberEqualIsExactDecimalEquality(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{"Trailing fractional zeros do not matter.", "1.500", "1.5", true},
		{"An exponent spelling equals the plain spelling.", "1500", "1.5e3", true},
		{"An upper-case E with an explicit plus equals the plain spelling.", "0.015", "1.5E-2", true},
		{"Minus zero equals zero.", "-0", "0.0e10", true},
		{"A sign difference is a change.", "-1", "1", false},
		{"A difference in the eightieth digit is a change.", "0." + zeros(79) + "1", "0." + zeros(79) + "2", false},
		{"A difference far beyond float64 range is a change.", "1e400", "2e400", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := numberEqual(json.Number(tt.a), json.Number(tt.b)); got != tt.want {
				t.Fatalf("numberEqual(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func zeros(n int) string { return string(bytes.Repeat([]byte("0"), n)) }
