package dialect

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// OpenAIPerTool is the per-tool OpenAI decision: a schema strict mode can
// express is sent in its strict form (strict is true); one it cannot — an
// MCP server's oneOf, patternProperties or open object, an Error wrapping
// ErrUnsupported — is sent with strict off in the OpenAI form, and reason
// says why (the strict rewrite's error). A server's schema is not ours to
// fix, and refusing it would stop every request of the
// session, not just that tool. A schema that is not valid at
// all is an error in both forms.
func OpenAIPerTool(schema json.RawMessage) (out json.RawMessage, strict bool, reason string, err error) {
	out, err = OpenAIStrict(schema)
	if err == nil {
		return out, true, "", nil
	}
	if !errors.Is(err, ErrUnsupported) {
		return nil, false, "", err
	}
	lax, laxErr := OpenAI(schema)
	if laxErr != nil {
		return nil, false, "", laxErr
	}
	return lax, false, err.Error(), nil
}

// strictRejected are the keywords OpenAI strict mode refuses anywhere in
// a schema, the same list OpenAIStrict refuses to rewrite.
var strictRejected = func() []string {
	var keys []string
	for k, a := range openAIStrict.actions {
		if a == reject {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}()

// CheckOpenAIStrict reports whether schema is already in the form OpenAI
// accepts for a strict function, the way the API checks it: no refused
// keyword at any depth, and every object node closed
// (additionalProperties false) with every property required. It rewrites
// nothing; a server that checks what clients send (the mock LLM) uses it
// to answer a request the real API would reject with a 400.
func CheckOpenAIStrict(schema json.RawMessage) error {
	v, err := parse(schema)
	if err != nil {
		return &Error{Dialect: NameOpenAIStrict, Path: "$", Reason: "is not valid JSON", Err: ErrInvalidSchema}
	}
	return checkStrictNode(v, "$")
}

func checkStrictNode(v any, path string) error {
	o, ok := v.(*object)
	if !ok {
		return &Error{Dialect: NameOpenAIStrict, Path: path, Reason: fmt.Sprintf("is %s; strict mode needs a schema object here", kind(v)), Err: ErrUnsupported}
	}
	fail := func(p, format string, args ...any) error {
		return &Error{Dialect: NameOpenAIStrict, Path: p, Reason: fmt.Sprintf(format, args...), Err: ErrUnsupported}
	}
	for _, m := range o.members {
		if slices.Contains(strictRejected, m.key) {
			return fail(keyPath(path, m.key), "'%s' is not permitted", m.key)
		}
	}
	typ, _ := o.get("type")
	props, hasProps := o.get("properties")
	if typ == "object" || hasProps {
		if ap, _ := o.get("additionalProperties"); ap != false {
			return fail(path, "'additionalProperties' is required to be supplied and to be false")
		}
		var names []string
		if po, ok := props.(*object); ok {
			for _, m := range po.members {
				names = append(names, m.key)
				if err := checkStrictNode(m.val, keyPath(keyPath(path, "properties"), m.key)); err != nil {
					return err
				}
			}
		}
		req, _ := o.get("required")
		list, _ := req.([]any)
		for _, n := range names {
			if !slices.Contains(list, any(n)) {
				return fail(path, "'required' is required to be supplied and to be an array including every key in properties; missing '%s'", n)
			}
		}
	}
	if items, ok := o.get("items"); ok {
		if err := checkStrictNode(items, keyPath(path, "items")); err != nil {
			return err
		}
	}
	for _, key := range []string{"anyOf"} {
		if list, ok := o.get(key); ok {
			l, _ := list.([]any)
			for i, s := range l {
				if err := checkStrictNode(s, indexPath(keyPath(path, key), i)); err != nil {
					return err
				}
			}
		}
	}
	for _, key := range []string{"$defs", "definitions"} {
		if defs, ok := o.get(key); ok {
			if do, ok := defs.(*object); ok {
				for _, m := range do.members {
					if err := checkStrictNode(m.val, keyPath(keyPath(path, key), m.key)); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}
