package dialect

import (
	"errors"
	"strings"
	"testing"
)

type rewriteCase struct {
	name string
	in   string
	want string
}

func runCases(t *testing.T, rewrite func([]byte) ([]byte, error), cases []rewriteCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := rewrite([]byte(c.in))
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if string(got) != c.want {
				t.Errorf("\n got: %s\nwant: %s", got, c.want)
			}
		})
	}
}

func TestOpenAIStrict(t *testing.T) {
	runCases(t, func(b []byte) ([]byte, error) { return OpenAIStrict(b) }, []rewriteCase{
		{
			name: "an optional property becomes nullable and required, and the object is closed",
			in:   `{"$schema":"x","type":"object","properties":{"file_path":{"type":"string"},"offset":{"type":"number"}},"required":["file_path"]}`,
			want: `{"type":"object","properties":{"file_path":{"type":"string"},"offset":{"type":["number","null"]}},"required":["file_path","offset"],"additionalProperties":false}`,
		},
		{
			name: "a nested object is closed and its optional field made nullable at its own depth",
			in:   `{"type":"object","properties":{"opts":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"]}},"required":["opts"]}`,
			want: `{"type":"object","properties":{"opts":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":["integer","null"]}},"required":["a","b"],"additionalProperties":false}},"required":["opts"],"additionalProperties":false}`,
		},
		{
			name: "an optional nested object becomes nullable while its own properties are still all required",
			in:   `{"type":"object","properties":{"opts":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}}}`,
			want: `{"type":"object","properties":{"opts":{"type":["object","null"],"properties":{"a":{"type":["string","null"]}},"additionalProperties":false,"required":["a"]}},"required":["opts"],"additionalProperties":false}`,
		},
		{
			name: "objects inside array items are closed and required in full",
			in:   `{"type":"object","properties":{"todos":{"type":"array","minItems":2,"items":{"type":"object","properties":{"x":{"type":"string"},"y":{"type":"string"}},"required":["x"]}}},"required":["todos"]}`,
			want: `{"type":"object","properties":{"todos":{"type":"array","minItems":2,"items":{"type":"object","properties":{"x":{"type":"string"},"y":{"type":["string","null"]}},"required":["x","y"],"additionalProperties":false}}},"required":["todos"],"additionalProperties":false}`,
		},
		{
			name: "every anyOf branch that is an object is closed, and an optional anyOf gains a null branch",
			in:   `{"type":"object","properties":{"v":{"description":"A value.","anyOf":[{"type":"object","properties":{"k":{"type":"string"}}},{"type":"string"}]}}}`,
			want: `{"type":"object","properties":{"v":{"description":"A value.","anyOf":[{"type":"object","properties":{"k":{"type":["string","null"]}},"required":["k"],"additionalProperties":false},{"type":"string"},{"type":"null"}]}},"required":["v"],"additionalProperties":false}`,
		},
		{
			name: "an optional enum gets null in both its type and its values",
			in:   `{"type":"object","properties":{"mode":{"type":"string","enum":["a","b"]}}}`,
			want: `{"type":"object","properties":{"mode":{"type":["string","null"],"enum":["a","b",null]}},"required":["mode"],"additionalProperties":false}`,
		},
		{
			name: "a required enum is left as it is",
			in:   `{"type":"object","properties":{"mode":{"type":"string","enum":["a","b"]}},"required":["mode"]}`,
			want: `{"type":"object","properties":{"mode":{"type":"string","enum":["a","b"]}},"required":["mode"],"additionalProperties":false}`,
		},
		{
			name: "a default moves into the description because strict mode does not support it",
			in:   `{"type":"object","properties":{"limit":{"type":"integer","default":2000,"description":"Most lines."}},"required":["limit"]}`,
			want: `{"type":"object","properties":{"limit":{"type":"integer","description":"Most lines. Default: 2000."}},"required":["limit"],"additionalProperties":false}`,
		},
		{
			name: "numeric constraints, pattern and a supported format stay, string lengths move into a new description",
			in:   `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":9,"multipleOf":2},"s":{"type":"string","pattern":"^a","format":"email","minLength":1,"maxLength":5}},"required":["n","s"]}`,
			want: `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":9,"multipleOf":2},"s":{"type":"string","pattern":"^a","format":"email","description":"Minimum length: 1. Maximum length: 5."}},"required":["n","s"],"additionalProperties":false}`,
		},
		{
			name: "an optional $ref is wrapped in an anyOf with null and keeps its description outside",
			in:   `{"type":"object","$defs":{"P":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}},"properties":{"p":{"$ref":"#/$defs/P","description":"A point."}}}`,
			want: `{"type":"object","$defs":{"P":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"],"additionalProperties":false}},"properties":{"p":{"anyOf":[{"$ref":"#/$defs/P"},{"type":"null"}],"description":"A point."}},"required":["p"],"additionalProperties":false}`,
		},
		{
			name: "a property whose type already allows null is not changed again",
			in:   `{"type":"object","properties":{"x":{"type":["string","null"]}}}`,
			want: `{"type":"object","properties":{"x":{"type":["string","null"]}},"required":["x"],"additionalProperties":false}`,
		},
		{
			name: "an object with additionalProperties false and no properties gets an empty property list",
			in:   `{"type":"object","additionalProperties":false}`,
			want: `{"type":"object","additionalProperties":false,"properties":{},"required":[]}`,
		},
		{
			name: "the empty schema the providers send for a tool without one is closed with an empty required list",
			in:   `{"type":"object","properties":{}}`,
			want: `{"type":"object","properties":{},"required":[],"additionalProperties":false}`,
		},
		{
			name: "characters HTML would escape stay readable in descriptions",
			in:   `{"type":"object","properties":{"x":{"type":"string","description":"a < b && c > d"}},"required":["x"]}`,
			want: `{"type":"object","properties":{"x":{"type":"string","description":"a < b && c > d"}},"required":["x"],"additionalProperties":false}`,
		},
	})
}

func TestAnthropic(t *testing.T) {
	runCases(t, func(b []byte) ([]byte, error) { return Anthropic(b) }, []rewriteCase{
		{
			name: "optional properties stay optional and non-protocol keys are dropped",
			in:   `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","$comment":"c","type":"object","properties":{"file_path":{"type":"string"},"offset":{"type":"number"}},"required":["file_path"]}`,
			want: `{"type":"object","properties":{"file_path":{"type":"string"},"offset":{"type":"number"}},"required":["file_path"]}`,
		},
		{
			name: "numeric constraints move into the description, after the text already there",
			in:   `{"type":"object","properties":{"offset":{"type":"integer","minimum":1,"exclusiveMaximum":10,"description":"Start line."}}}`,
			want: `{"type":"object","properties":{"offset":{"type":"integer","description":"Start line. Minimum: 1. Exclusive maximum: 10."}}}`,
		},
		{
			name: "a default stays because Anthropic supports it",
			in:   `{"type":"object","properties":{"limit":{"type":"integer","default":2000}}}`,
			want: `{"type":"object","properties":{"limit":{"type":"integer","default":2000}}}`,
		},
		{
			name: "minItems 0 and 1 stay while a larger minItems and maxItems move into the description",
			in:   `{"type":"object","properties":{"a":{"type":"array","minItems":1,"items":{"type":"string"}},"b":{"type":"array","minItems":2,"maxItems":4,"items":{"type":"string"}}}}`,
			want: `{"type":"object","properties":{"a":{"type":"array","minItems":1,"items":{"type":"string"}},"b":{"type":"array","items":{"type":"string"},"description":"Minimum items: 2. Maximum items: 4."}}}`,
		},
		{
			name: "constraints deep inside array items and anyOf branches are rewritten too",
			in:   `{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"n":{"anyOf":[{"type":"integer","maximum":3},{"type":"string","minLength":2}]}}}}}}`,
			want: `{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"n":{"anyOf":[{"type":"integer","description":"Maximum: 3."},{"type":"string","description":"Minimum length: 2."}]}}}}}}`,
		},
		{
			name: "an unsupported format moves into the description while a supported one stays",
			in:   `{"type":"object","properties":{"a":{"type":"string","format":"uuid"},"b":{"type":"string","format":"regex"}}}`,
			want: `{"type":"object","properties":{"a":{"type":"string","format":"uuid"},"b":{"type":"string","description":"Format: \"regex\"."}}}`,
		},
		{
			name: "oneOf is kept and its branches rewritten, since Anthropic does not reject it",
			in:   `{"type":"object","properties":{"v":{"oneOf":[{"type":"integer","minimum":0},{"type":"string"}]}}}`,
			want: `{"type":"object","properties":{"v":{"oneOf":[{"type":"integer","description":"Minimum: 0."},{"type":"string"}]}}}`,
		},
		{
			name: "a $schema key inside enum or default data is data and is kept",
			in:   `{"type":"object","properties":{"v":{"type":"object","default":{"$schema":"kept"}}}}`,
			want: `{"type":"object","properties":{"v":{"type":"object","default":{"$schema":"kept"}}}}`,
		},
	})
}

func TestOpenAI(t *testing.T) {
	runCases(t, func(b []byte) ([]byte, error) { return OpenAI(b) }, []rewriteCase{
		{
			name: "only non-protocol keys are dropped, at every depth, and everything else is sent as given",
			in:   `{"$schema":"x","type":"object","properties":{"a":{"$id":"y","type":"integer","minimum":1,"default":3},"b":{"oneOf":[{"$comment":"z","type":"string","minLength":1}]}},"required":["a"]}`,
			want: `{"type":"object","properties":{"a":{"type":"integer","minimum":1,"default":3},"b":{"oneOf":[{"type":"string","minLength":1}]}},"required":["a"]}`,
		},
	})
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name     string
		rewrite  func([]byte) ([]byte, error)
		in       string
		sentinel error
		path     string
	}{
		{"a oneOf under strict mode is refused with the path of the oneOf", strictFn,
			`{"type":"object","properties":{"v":{"oneOf":[{"type":"string"}]}}}`, ErrUnsupported, "$.properties.v.oneOf"},
		{"a oneOf inside array items under strict mode is refused with its full path", strictFn,
			`{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"v":{"oneOf":[{"type":"string"}]}}}}}}`,
			ErrUnsupported, "$.properties.l.items.properties.v.oneOf"},
		{"a free-form object under strict mode is refused", strictFn,
			`{"type":"object","properties":{"meta":{"type":"object"}}}`, ErrUnsupported, "$.properties.meta"},
		{"an object allowing extra properties under strict mode is refused", strictFn,
			`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"string"}}`, ErrUnsupported, "$.additionalProperties"},
		{"a property that accepts any value under strict mode is refused", strictFn,
			`{"type":"object","properties":{"x":{}}}`, ErrUnsupported, "$.properties.x"},
		{"a required name missing from the properties under strict mode is invalid", strictFn,
			`{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"]}`, ErrInvalidSchema, "$.required[1]"},
		{"text that is not JSON is invalid for every dialect", anthropicFn, `{"type":`, ErrInvalidSchema, "$.type"},
		{"trailing data after the object is invalid", openAIFn, `{"type":"object"} {}`, ErrInvalidSchema, "$"},
		{"a root that is not an object schema is invalid", anthropicFn, `{"type":"string"}`, ErrInvalidSchema, "$"},
		{"a root that is a list is invalid", strictFn, `[1,2]`, ErrInvalidSchema, "$"},
		{"a duplicate key is invalid, naming the object that holds it", anthropicFn,
			`{"type":"object","properties":{"a":{"type":"string","type":"integer"}}}`, ErrInvalidSchema, "$.properties.a"},
		{"properties that are not an object are invalid", openAIFn,
			`{"type":"object","properties":[1]}`, ErrInvalidSchema, "$.properties"},
		{"a description that is not a string is invalid", anthropicFn,
			`{"type":"object","properties":{"a":{"type":"string","description":5}}}`, ErrInvalidSchema, "$.properties.a.description"},
		{"a property name that is not an identifier is quoted in the path", strictFn,
			`{"type":"object","properties":{"a b":{"not":{}}}}`, ErrUnsupported, `$.properties["a b"].not`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := c.rewrite([]byte(c.in))
			if err == nil {
				t.Fatalf("expected an error, got %s", out)
			}
			if !errors.Is(err, c.sentinel) {
				t.Errorf("error %v does not wrap %v", err, c.sentinel)
			}
			var de *Error
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *dialect.Error", err)
			}
			if de.Path != c.path {
				t.Errorf("path = %q, want %q (error: %v)", de.Path, c.path, err)
			}
			if !strings.Contains(err.Error(), c.path) {
				t.Errorf("message %q does not name the path %s", err, c.path)
			}
		})
	}
}

var (
	strictFn    = func(b []byte) ([]byte, error) { return OpenAIStrict(b) }
	anthropicFn = func(b []byte) ([]byte, error) { return Anthropic(b) }
	openAIFn    = func(b []byte) ([]byte, error) { return OpenAI(b) }
)
