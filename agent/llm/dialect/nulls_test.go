package dialect

import (
	"errors"
	"testing"
)

func TestStripOptionalNulls(t *testing.T) {
	schema := `{"type":"object","properties":{` +
		`"a":{"type":"string"},"b":{"type":"integer"},"n":{"type":["string","null"]},` +
		`"o":{"type":"object","properties":{"x":{"type":"string"},"y":{"type":"string"}},"required":["x"]},` +
		`"l":{"type":"array","items":{"type":"object","properties":{"z":{"type":"integer"}}}}},"required":["a"]}`
	cases := []struct {
		name, in, want string
	}{
		{"a null for an optional property is removed", `{"a":"v","b":null}`, `{"a":"v"}`},
		{"a null for a required property is kept for validation to report", `{"a":null}`, `{"a":null}`},
		{"a null for a property whose neutral schema accepts null is a value and is kept", `{"a":"v","n":null}`, `{"a":"v","n":null}`},
		{"nulls for optional properties of a nested object are removed", `{"a":"v","o":{"x":"1","y":null}}`, `{"a":"v","o":{"x":"1"}}`},
		{"nulls inside array items are removed", `{"a":"v","l":[{"z":null},{"z":1}]}`, `{"a":"v","l":[{},{"z":1}]}`},
		{"input with nothing to remove comes back byte for byte", `{ "a" : "v", "b": 2 }`, `{ "a" : "v", "b": 2 }`},
		{"a null for a property the schema does not know is left for validation", `{"a":"v","zz":null}`, `{"a":"v","zz":null}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := StripOptionalNulls([]byte(schema), []byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestStripOptionalNullsErrors(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`)
	for _, in := range []string{`[1]`, `{"a":`, `"x"`, ``} {
		if _, err := StripOptionalNulls(schema, []byte(in)); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("input %q: error %v does not wrap ErrInvalidInput", in, err)
		}
	}
	if _, err := StripOptionalNulls([]byte(`{`), []byte(`{}`)); !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("a broken schema: error %v does not wrap ErrInvalidSchema", err)
	}
}
