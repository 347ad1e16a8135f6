package dialect

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The per-tool decision: a schema strict mode expresses goes strict, one
// it cannot goes non-strict with the reason, an invalid one is an error.
func TestOpenAIPerToolDecidesEachSchemaOnItsOwn(t *testing.T) {
	cases := []struct {
		name, schema string
		strict       bool
		reason       string
		invalid      bool
	}{
		{"plain", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, true, "", false},
		{"oneOf", `{"type":"object","properties":{"a":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`, false, "oneOf", false},
		{"root anyOf", `{"type":"object","anyOf":[{"required":["a"]},{"required":["b"]}],"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, false, "anyOf", false},
		{"patternProperties", `{"type":"object","patternProperties":{"^x":{"type":"string"}}}`, false, "patternProperties", false},
		{"open object", `{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}}}`, false, "additionalProperties", false},
		{"not an object", `{"type":"string"}`, false, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, strict, reason, err := OpenAIPerTool(json.RawMessage(c.schema))
			if c.invalid {
				if !errors.Is(err, ErrInvalidSchema) {
					t.Fatalf("err %v; want ErrInvalidSchema", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strict != c.strict || (c.reason != "" && !strings.Contains(reason, c.reason)) || (c.strict && reason != "") {
				t.Fatalf("strict %v reason %q; want %v, reason naming %q", strict, reason, c.strict, c.reason)
			}
			check := CheckOpenAIStrict(out)
			if c.strict && check != nil {
				t.Fatalf("the strict form %s fails the API's check: %v", out, check)
			}
			if !c.strict && !errors.Is(check, ErrUnsupported) {
				t.Fatalf("the non-strict form %s would pass as strict (%v); the decision is not needed", out, check)
			}
		})
	}
}

// CheckOpenAIStrict is what the API does with a strict function: it
// refuses an open object, a missing required, a oneOf at any depth.
func TestCheckOpenAIStrictRefusesWhatTheAPIRefuses(t *testing.T) {
	ok := `{"type":"object","properties":{"a":{"type":["string","null"]},"l":{"type":"array","items":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}}},"required":["a","l"],"additionalProperties":false}`
	if err := CheckOpenAIStrict(json.RawMessage(ok)); err != nil {
		t.Fatalf("a strict schema was refused: %v", err)
	}
	for _, bad := range []string{
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`,
		`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`,
		`{"type":"object","properties":{"a":{"oneOf":[{"type":"string"}]}},"required":["a"],"additionalProperties":false}`,
		`{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"x":{"type":"integer"}}}}},"required":["l"],"additionalProperties":false}`,
	} {
		if err := CheckOpenAIStrict(json.RawMessage(bad)); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: err %v; want ErrUnsupported", bad, err)
		}
	}
}
