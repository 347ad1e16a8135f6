package dialect

import (
	"encoding/json"
	"testing"

	"github.com/retrace-dev/retrace/agent/tools"
)

func addSeeds(f *testing.F) {
	for _, tool := range tools.Builtins() {
		f.Add([]byte(tool.Spec().Schema))
	}
	for _, s := range []string{
		`{"type":"object","properties":{"v":{"anyOf":[{"type":"object","properties":{"k":{"type":"string"}}},{"type":"string"}]}}}`,
		`{"type":"object","$defs":{"P":{"type":"object","properties":{"x":{"const":1}}}},"properties":{"p":{"$ref":"#/$defs/P"}}}`,
		`{"type":"object","properties":{"l":{"type":"array","items":[{"type":"string"}],"minItems":4}}}`,
		`{"type":"object","properties":{"e":{"enum":[1,null,"a"]},"b":true}}`,
		`{"type":["object","null"],"additionalProperties":false}`,
		`[]`, `null`, `{"type":"object","properties":{"a":{"type":5}}}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzRewrite feeds arbitrary bytes to every dialect: no panic, and when
// there is no error the output is valid JSON, and strict output passes the
// structural walk.
func FuzzRewrite(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, rw := range []func([]byte) ([]byte, error){anthropicFn, openAIFn} {
			if out, err := rw(in); err == nil && !json.Valid(out) {
				t.Fatalf("invalid JSON output %s for %s", out, in)
			}
		}
		out, err := OpenAIStrict(in)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON output %s for %s", out, in)
		}
		if probs := strictProblems(decodeGeneric(t, out), "$"); len(probs) > 0 {
			t.Fatalf("strict output %s for %s fails the structural walk: %v", out, in, probs)
		}
	})
}

// FuzzStripOptionalNulls feeds arbitrary arguments: no panic, and output
// is valid JSON whenever there is no error.
func FuzzStripOptionalNulls(f *testing.F) {
	schema := tools.Builtins()[0].Spec().Schema
	for _, s := range []string{`{"file_path":"a","offset":null}`, `{"a":[{"b":null}]}`, `[]`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := StripOptionalNulls(schema, in)
		if err == nil && !json.Valid(out) {
			t.Fatalf("invalid JSON output %s for %s", out, in)
		}
	})
}

// FuzzOpenAIPerTool feeds arbitrary schemas to the per-tool decision and
// to the API-side check the mock LLM runs on requests: no panic, a schema
// sent strict always passes the check, and one sent non-strict comes with
// its reason.
func FuzzOpenAIPerTool(f *testing.F) {
	addSeeds(f)
	f.Add([]byte(`{"type":"object","properties":{"a":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		_ = CheckOpenAIStrict(in)
		out, strict, reason, err := OpenAIPerTool(in)
		if err != nil {
			return
		}
		if strict {
			if cerr := CheckOpenAIStrict(out); cerr != nil {
				t.Fatalf("strict output %s for %s fails the API's check: %v", out, in, cerr)
			}
		} else if reason == "" {
			t.Fatalf("non-strict decision for %s without a reason", in)
		}
	})
}
