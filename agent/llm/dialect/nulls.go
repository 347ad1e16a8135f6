package dialect

import (
	"encoding/json"
	"errors"
	"fmt"
)

// StripOptionalNulls undoes, on a tool call's input, what OpenAIStrict did
// to its schema: under strict mode the model must send every property and
// sends null for an optional one it means to leave out, but the tool
// validates and decodes against the neutral schema, where such a property
// is simply absent. schema is the neutral schema (the one given to
// OpenAIStrict) and input the arguments the model sent.
//
// A null is removed only where the neutral schema makes the property
// optional and does not itself accept null, following properties and array
// items at every depth (not anyOf branches, which no built-in tool
// nests objects under). Input with nothing to remove is returned as is, byte
// for byte. Input that is not a JSON object is an error wrapping
// ErrInvalidInput; a schema that is not JSON is an Error wrapping
// ErrInvalidSchema.
func StripOptionalNulls(schema, input json.RawMessage) (json.RawMessage, error) {
	sv, err := parse(schema)
	if err != nil {
		var se *syntaxError
		errors.As(err, &se)
		return nil, &Error{Dialect: NameOpenAIStrict, Path: pathOf(se), Reason: "is not valid JSON: " + err.Error(),
			Err: ErrInvalidSchema}
	}
	iv, err := parse(input)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	in, ok := iv.(*object)
	if !ok {
		return nil, fmt.Errorf("%w: the arguments are %s, not a JSON object", ErrInvalidInput, kind(iv))
	}
	s, _ := sv.(*object)
	if !stripNulls(s, in) {
		return input, nil
	}
	b, err := encode(in)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidInput, err)
	}
	return b, nil
}

// ErrInvalidInput is wrapped by StripOptionalNulls's error for arguments
// that are not a JSON object.
var ErrInvalidInput = errors.New("tool input is not a JSON object")

func pathOf(se *syntaxError) string {
	if se == nil {
		return "$"
	}
	return se.path
}

// stripNulls removes the optional nulls from in, an object value described
// by the schema node s, and reports whether it removed any.
func stripNulls(s, in *object) bool {
	if s == nil {
		return false
	}
	pv, _ := s.get("properties")
	props, ok := pv.(*object)
	if !ok {
		return false
	}
	required := map[string]bool{}
	if rv, ok := s.get("required"); ok {
		list, _ := rv.([]any)
		for _, x := range list {
			if name, ok := x.(string); ok {
				required[name] = true
			}
		}
	}
	changed := false
	kept := in.members[:0]
	for _, m := range in.members {
		ps, _ := props.get(m.key)
		propSchema, _ := ps.(*object)
		if m.val == nil && propSchema != nil && !required[m.key] && !acceptsNull(propSchema) {
			changed = true
			continue
		}
		switch v := m.val.(type) {
		case *object:
			if stripNulls(propSchema, v) {
				changed = true
			}
		case []any:
			if propSchema != nil {
				iv, _ := propSchema.get("items")
				items, _ := iv.(*object)
				for _, x := range v {
					if xo, ok := x.(*object); ok && stripNulls(items, xo) {
						changed = true
					}
				}
			}
		}
		kept = append(kept, m)
	}
	in.members = kept
	return changed
}

// acceptsNull reports whether a neutral schema node accepts null itself,
// in which case a null the model sends is a value, not an omission.
func acceptsNull(s *object) bool {
	switch t, _ := s.get("type"); t := t.(type) {
	case string:
		if t == "null" {
			return true
		}
	case []any:
		if containsValue(t, "null") {
			return true
		}
	}
	if c, ok := s.get("const"); ok && c == nil {
		return true
	}
	if e, ok := s.get("enum"); ok {
		if list, ok := e.([]any); ok && containsValue(list, nil) {
			return true
		}
	}
	if a, ok := s.get("anyOf"); ok {
		if list, ok := a.([]any); ok {
			for _, b := range list {
				if bo, ok := b.(*object); ok && acceptsNull(bo) {
					return true
				}
			}
		}
	}
	return false
}
