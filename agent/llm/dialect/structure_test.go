package dialect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// decodeGeneric decodes with encoding/json into maps, independently of the
// package's own ordered representation, so the checks below do not trust
// the code they check. Key order is read separately where it matters.
func decodeGeneric(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("output is not valid JSON: %v\n%s", err, b)
	}
	return v
}

// strictProblems walks a schema the way OpenAI strict mode checks it and
// returns every violation: an object node whose required is not exactly
// its property keys or whose additionalProperties is not false, a oneOf,
// or a $schema anywhere.
func strictProblems(v any, path string) []string {
	o, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); isBool {
			return []string{path + ": boolean schema"}
		}
		return nil
	}
	var probs []string
	for _, k := range []string{"oneOf", "$schema", "$id", "$comment"} {
		if _, ok := o[k]; ok {
			probs = append(probs, fmt.Sprintf("%s: has %s", path, k))
		}
	}
	props, hasProps := o["properties"].(map[string]any)
	if o["type"] == "object" || hasProps || (isList(o["type"]) && slices.Contains(o["type"].([]any), any("object"))) {
		if o["additionalProperties"] != false {
			probs = append(probs, path+": additionalProperties is not false")
		}
		req, _ := o["required"].([]any)
		var names []string
		for _, r := range req {
			s, _ := r.(string)
			names = append(names, s)
		}
		var keys []string
		for k := range props {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		slices.Sort(names)
		if !slices.Equal(keys, names) {
			probs = append(probs, fmt.Sprintf("%s: required %v is not all properties %v", path, names, keys))
		}
	}
	for k, p := range props {
		probs = append(probs, strictProblems(p, path+".properties."+k)...)
	}
	for _, key := range []string{"$defs", "definitions"} {
		defs, _ := o[key].(map[string]any)
		for k, p := range defs {
			probs = append(probs, strictProblems(p, path+"."+key+"."+k)...)
		}
	}
	if items, ok := o["items"]; ok {
		probs = append(probs, strictProblems(items, path+".items")...)
	}
	branches, _ := o["anyOf"].([]any)
	for i, b := range branches {
		probs = append(probs, strictProblems(b, fmt.Sprintf("%s.anyOf[%d]", path, i))...)
	}
	return probs
}

func isList(v any) bool {
	_, ok := v.([]any)
	return ok
}

func TestStrictOutputOfEveryBuiltinPassesTheStructuralWalk(t *testing.T) {
	for _, tool := range tools.Builtins() {
		out, err := OpenAIStrict(tool.Spec().Schema)
		if err != nil {
			t.Fatalf("%s: %v", tool.Spec().Name, err)
		}
		for _, p := range strictProblems(decodeGeneric(t, out), "$") {
			t.Errorf("%s: %s", tool.Spec().Name, p)
		}
	}
}

// TestStructuralWalkCatchesViolations makes sure the walk above can fail,
// so its silence on the built-ins means something.
func TestStructuralWalkCatchesViolations(t *testing.T) {
	cases := map[string]string{
		"an object nested in array items that is not closed": `{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}},"required":["l"],"additionalProperties":false}`,
		"an object whose required leaves a property out":     `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`,
		"a oneOf in an anyOf branch":                         `{"type":"object","properties":{"a":{"anyOf":[{"oneOf":[{"type":"string"}]}]}},"required":["a"],"additionalProperties":false}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if len(strictProblems(decodeGeneric(t, []byte(in)), "$")) == 0 {
				t.Error("the walk found no problem")
			}
		})
	}
}

// TestNoConstraintIsLost walks each built-in schema beside its rewrite and
// checks that every keyword the rewrite removed from a node (other than
// the non-protocol ones) appears, value and all, in that node's
// description.
func TestNoConstraintIsLost(t *testing.T) {
	for _, tool := range tools.Builtins() {
		in := decodeGeneric(t, tool.Spec().Schema)
		for _, d := range goldenDialects {
			out, err := d.rewrite(tool.Spec().Schema)
			if err != nil {
				t.Fatalf("%s: %v", tool.Spec().Name, err)
			}
			for _, p := range lostConstraints(in, decodeGeneric(t, out), "$") {
				t.Errorf("%s %s: %s", tool.Spec().Name, d.suffix, p)
			}
		}
	}
}

func lostConstraints(in, out any, path string) []string {
	io, ok1 := in.(map[string]any)
	oo, ok2 := out.(map[string]any)
	if !ok1 || !ok2 {
		return nil
	}
	var lost []string
	desc, _ := oo["description"].(string)
	for k, v := range io {
		if slices.Contains(metaKeys, k) {
			continue
		}
		if _, kept := oo[k]; kept {
			continue
		}
		text, _ := json.Marshal(v)
		if !strings.Contains(desc, string(text)) {
			lost = append(lost, fmt.Sprintf("%s: %s %s was removed and is not in the description %q", path, k, text, desc))
		}
	}
	ip, _ := io["properties"].(map[string]any)
	op, _ := oo["properties"].(map[string]any)
	for k := range ip {
		lost = append(lost, lostConstraints(ip[k], op[k], path+".properties."+k)...)
	}
	lost = append(lost, lostConstraints(io["items"], oo["items"], path+".items")...)
	return lost
}

func TestNoConstraintIsLostInHandWrittenSchemas(t *testing.T) {
	in := `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":5,"exclusiveMinimum":0,"multipleOf":1,"default":2},` +
		`"s":{"type":"string","minLength":1,"maxLength":9,"format":"regex"},"l":{"type":"array","minItems":3,"maxItems":7,"uniqueItems":true,` +
		`"items":{"type":"object","properties":{"q":{"type":"number","maximum":1.5,"x-unit":"cm"}},"required":["q"]}}},"required":["n","s","l"]}`
	for _, d := range goldenDialects {
		out, err := d.rewrite([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", d.suffix, err)
		}
		for _, p := range lostConstraints(decodeGeneric(t, []byte(in)), decodeGeneric(t, out), "$") {
			t.Errorf("%s: %s", d.suffix, p)
		}
	}
}

// TestStrictCallsValidateAfterStrippingNulls plays a strict call through
// a real JSON Schema validator: the arguments a strict model must send
// (nulls for the optional properties it leaves out) validate against the
// strict schema, and after StripOptionalNulls against the neutral one.
func TestStrictCallsValidateAfterStrippingNulls(t *testing.T) {
	cases := []struct {
		name, tool, args, neutral string
	}{
		{"a read call that leaves offset and limit out sends them as null", "read",
			`{"file_path":"a.go","offset":null,"limit":null}`, `{"file_path":"a.go"}`},
		{"a read call that gives a limit keeps it", "read",
			`{"file_path":"a.go","offset":null,"limit":10}`, `{"file_path":"a.go","limit":10}`},
		{"a grep call with a null enum value drops it", "grep",
			`{"pattern":"x","path":null,"glob":null,"output_mode":null,"case_insensitive":null,"context":null}`, `{"pattern":"x"}`},
		{"an ls call with no path sends null", "ls", `{"path":null}`, `{}`},
	}
	byName := map[string]tools.Tool{}
	for _, tool := range tools.Builtins() {
		byName[tool.Spec().Name] = tool
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			neutral := byName[c.tool].Spec().Schema
			strict, err := OpenAIStrict(neutral)
			if err != nil {
				t.Fatal(err)
			}
			if err := compile(t, strict).Validate(decodeGeneric(t, []byte(c.args))); err != nil {
				t.Fatalf("the strict arguments do not validate against the strict schema: %v", err)
			}
			if err := compile(t, neutral).Validate(decodeGeneric(t, []byte(c.args))); err == nil {
				t.Fatalf("the strict arguments already validate against the neutral schema; the case tests nothing")
			}
			got, err := StripOptionalNulls(neutral, []byte(c.args))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.neutral {
				t.Errorf("StripOptionalNulls = %s, want %s", got, c.neutral)
			}
			if err := compile(t, neutral).Validate(decodeGeneric(t, got)); err != nil {
				t.Errorf("the stripped arguments do not validate against the neutral schema: %v", err)
			}
		})
	}
}

// TestEveryOutputIsAValidJSONSchema compiles each rewrite of each built-in
// with a real JSON Schema implementation.
func TestEveryOutputIsAValidJSONSchema(t *testing.T) {
	for _, tool := range tools.Builtins() {
		for _, f := range []func([]byte) ([]byte, error){anthropicFn, openAIFn, strictFn} {
			out, err := f(tool.Spec().Schema)
			if err != nil {
				t.Fatalf("%s: %v", tool.Spec().Name, err)
			}
			compile(t, out)
		}
	}
}

func compile(t *testing.T, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://schema.json")
	if err != nil {
		t.Fatalf("not a valid JSON Schema: %v\n%s", err, schema)
	}
	return s
}
