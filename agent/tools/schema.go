package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/invopop/jsonschema"
)

// SchemaFor returns the JSON Schema of the input struct T, for Spec.Schema.
// The struct is the single source of the schema and of decoding: property names come from json tags, a field is required unless
// its json tag has omitempty, descriptions come from jsonschema_description
// tags, constraints from jsonschema tags, and additional properties are
// refused. The schema is inlined (no $ref, $schema or $id), because
// providers want a self-contained object.
//
// SchemaFor panics if T cannot be described, which is a mistake in a Go
// type, never in user input; the built-in tools' test calls it for every
// tool.
func SchemaFor[T any]() json.RawMessage {
	r := jsonschema.Reflector{ExpandedStruct: true, DoNotReference: true, Anonymous: true}
	var zero T
	s := r.Reflect(zero)
	s.Version = ""
	s.ID = ""
	raw, err := marshalCompact(s)
	if err != nil {
		panic(fmt.Sprintf("tools.SchemaFor[%T]: %v", zero, err))
	}
	return raw
}

// Definition returns a tool's definition as sent to the model:
// {"name","description","input_schema"} in that key order, compact, without
// HTML escaping. The runtime hashes these bytes for the trajectory and the
// provider caches them, so the same Spec always yields the same bytes. A
// schema that is not valid JSON (NewRegistry refuses such tools) is sent as
// an empty object schema rather than as broken JSON.
func Definition(t Tool) json.RawMessage {
	s := t.Spec()
	schema, err := compact(s.Schema)
	if err != nil {
		schema = []byte(`{"type":"object"}`)
	}
	name, _ := marshalCompact(s.Name)
	desc, _ := marshalCompact(s.Description)
	var b bytes.Buffer
	b.WriteString(`{"name":`)
	b.Write(name)
	b.WriteString(`,"description":`)
	b.Write(desc)
	b.WriteString(`,"input_schema":`)
	b.Write(schema)
	b.WriteString(`}`)
	return b.Bytes()
}

func compact(raw json.RawMessage) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// marshalCompact is json.Marshal without HTML escaping, so descriptions
// keep their "<", ">" and "&" readable and byte-stable.
func marshalCompact(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// errTrailingData reports input with more after the JSON object.
var errTrailingData = errors.New("unexpected data after the JSON object")

// decode reads a tool's input strictly into its input struct: unknown
// fields and trailing data are errors. Validation against the schema has
// normally happened already; decode still fails closed, because a number
// like 2.0 passes "integer" but does not fit a Go int.
func decode[T any](input json.RawMessage) (T, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return v, errTrailingData
	}
	return v, nil
}

// invalidInput is the tool_error for input that passed validation but still
// does not decode.
func invalidInput(tool string, err error) Result {
	return Result{
		IsError:   true,
		ErrorCode: "invalid_input",
		Output: fmt.Sprintf("The input for %s could not be read: %v. Check it against the tool's input schema "+
			"(whole numbers without a decimal point, only the listed fields) and call %s again.", tool, err, tool),
	}
}
