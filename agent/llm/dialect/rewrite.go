package dialect

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

func (d *dialect) rewrite(schema json.RawMessage) (json.RawMessage, error) {
	v, err := parse(schema)
	if err != nil {
		var se *syntaxError
		if errors.As(err, &se) {
			return nil, d.invalid(se.path, "is not valid JSON (%s); the schema must be one JSON object", se.msg)
		}
		return nil, d.invalid("$", "is not valid JSON (%v)", err)
	}
	root, ok := v.(*object)
	if !ok {
		return nil, d.invalid("$", "is %s, but a tool's input schema must be a JSON object with \"type\":\"object\"", kind(v))
	}
	if t, _ := root.get("type"); t != "object" {
		return nil, d.invalid("$", "has type %s, but a tool's input schema must have \"type\":\"object\"", compactText(t))
	}
	out, err := d.node(root, "$")
	if err != nil {
		return nil, err
	}
	b, err := encode(out)
	if err != nil {
		return nil, d.invalid("$", "cannot be encoded: %v", err)
	}
	return b, nil
}

func (d *dialect) invalid(path, format string, args ...any) error {
	return &Error{Dialect: d.name, Path: path, Reason: fmt.Sprintf(format, args...), Err: ErrInvalidSchema}
}

func (d *dialect) unsupported(path, format string, args ...any) error {
	return &Error{Dialect: d.name, Path: path, Reason: fmt.Sprintf(format, args...), Err: ErrUnsupported}
}

func (d *dialect) action(key string) action {
	if a, ok := d.actions[key]; ok {
		return a
	}
	return d.unknown
}

// node rewrites one schema node and, through it, everything below.
func (d *dialect) node(v any, path string) (any, error) {
	switch t := v.(type) {
	case bool:
		if d.strict {
			return nil, d.unsupported(path, "is the boolean schema %v; OpenAI strict mode needs a schema with a type here", t)
		}
		return t, nil
	case *object:
		return d.objectNode(t, path)
	default:
		return nil, d.invalid(path, "is %s, but a schema must be a JSON object or a boolean", kind(v))
	}
}

func (d *dialect) objectNode(in *object, path string) (any, error) {
	out := &object{members: make([]member, 0, len(in.members))}
	var notes []string
	for _, m := range in.members {
		kp := keyPath(path, m.key)
		if err := d.checkKnown(m.key, m.val, kp); err != nil {
			return nil, err
		}
		act := d.action(m.key)
		if act == pass && d.shouldDescribe(m.key, m.val) {
			act = describe
		}
		switch act {
		case drop:
		case pass:
			out.members = append(out.members, m)
		case describe:
			notes = append(notes, note(m.key, m.val))
		case reject:
			return nil, d.unsupported(kp, "uses %s, which OpenAI strict mode rejects; send this tool with strict off, "+
				"or express the choice with anyOf", m.key)
		case sub:
			s, err := d.node(m.val, kp)
			if err != nil {
				return nil, err
			}
			out.members = append(out.members, member{m.key, s})
		case subMap:
			s, err := d.schemaMap(m.val, kp)
			if err != nil {
				return nil, err
			}
			out.members = append(out.members, member{m.key, s})
		case subList:
			s, err := d.schemaList(m.val, kp)
			if err != nil {
				return nil, err
			}
			out.members = append(out.members, member{m.key, s})
		case subItems:
			var s any
			var err error
			if _, isList := m.val.([]any); isList {
				if d.strict {
					return nil, d.unsupported(kp, "is a list of schemas (a tuple), which OpenAI strict mode rejects; "+
						"send this tool with strict off")
				}
				s, err = d.schemaList(m.val, kp)
			} else {
				s, err = d.node(m.val, kp)
			}
			if err != nil {
				return nil, err
			}
			out.members = append(out.members, member{m.key, s})
		}
	}
	if len(notes) > 0 {
		desc, _ := out.get("description")
		text, _ := desc.(string)
		if text != "" && !strings.HasSuffix(text, " ") {
			text += " "
		}
		out.set("description", text+strings.Join(notes, " "))
	}
	if d.strict {
		if err := d.strictNode(in, out, path); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkKnown rejects keywords the rewrite relies on whose values have the
// wrong JSON type, so that a broken schema fails here, with its path,
// rather than at the provider.
func (d *dialect) checkKnown(key string, val any, path string) error {
	switch key {
	case "description", "title", "$ref", "pattern", "format":
		if _, ok := val.(string); !ok {
			return d.invalid(path, "is %s, but %s must be a string", kind(val), key)
		}
	case "type":
		switch t := val.(type) {
		case string:
		case []any:
			for i, x := range t {
				if _, ok := x.(string); !ok {
					return d.invalid(indexPath(path, i), "is %s, but type names must be strings", kind(x))
				}
			}
		default:
			return d.invalid(path, "is %s, but type must be a string or a list of strings", kind(val))
		}
	case "required":
		if !d.strict {
			return nil
		}
		list, ok := val.([]any)
		if !ok {
			return d.invalid(path, "is %s, but required must be a list of property names", kind(val))
		}
		for i, x := range list {
			if _, ok := x.(string); !ok {
				return d.invalid(indexPath(path, i), "is %s, but required must list property names as strings", kind(x))
			}
		}
	case "additionalProperties":
		if d.strict && val != false {
			return d.unsupported(path, "allows properties beyond those listed, which OpenAI strict mode cannot "+
				"express; list them, or send this tool with strict off")
		}
	case "enum":
		if _, ok := val.([]any); !ok {
			return d.invalid(path, "is %s, but enum must be a list of values", kind(val))
		}
	}
	return nil
}

// shouldDescribe reports whether a keyword the dialect supports in general
// has a value it does not: a format outside its list, or a minItems above
// its limit.
func (d *dialect) shouldDescribe(key string, val any) bool {
	switch key {
	case "format":
		f, _ := val.(string)
		return d.formats != nil && !d.formats[f]
	case "minItems":
		if d.maxMinItems < 0 {
			return false
		}
		n, ok := val.(json.Number)
		if !ok {
			return true
		}
		i, err := n.Int64()
		return err != nil || i < 0 || i > d.maxMinItems
	}
	return false
}

// note renders a keyword moved into a description. Stripping a constraint
// must not lose its meaning: the model still reads it, and
// the runtime still enforces it against the neutral schema.
func note(key string, val any) string {
	label, ok := labels[key]
	if !ok {
		label = key
	}
	return label + ": " + compactText(val) + "."
}

func (d *dialect) schemaMap(v any, path string) (any, error) {
	in, ok := v.(*object)
	if !ok {
		return nil, d.invalid(path, "is %s, but it must be an object mapping names to schemas", kind(v))
	}
	out := &object{members: make([]member, 0, len(in.members))}
	for _, m := range in.members {
		s, err := d.node(m.val, keyPath(path, m.key))
		if err != nil {
			return nil, err
		}
		out.members = append(out.members, member{m.key, s})
	}
	return out, nil
}

func (d *dialect) schemaList(v any, path string) (any, error) {
	in, ok := v.([]any)
	if !ok || len(in) == 0 {
		return nil, d.invalid(path, "is %s, but it must be a non-empty list of schemas", kind(v))
	}
	out := make([]any, len(in))
	for i, x := range in {
		s, err := d.node(x, indexPath(path, i))
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// strictNode applies OpenAI strict mode's rules to one rewritten node:
// objects are closed and require every property, with the optional ones
// made nullable; any other node must constrain its value somehow.
func (d *dialect) strictNode(in, out *object, path string) error {
	if !isObjectNode(out) {
		for _, k := range []string{"type", "enum", "const", "anyOf", "$ref"} {
			if _, ok := out.get(k); ok {
				return nil
			}
		}
		return d.unsupported(path, "accepts any value, which OpenAI strict mode cannot express; give it a type, "+
			"or send this tool with strict off")
	}
	props, hasProps := out.get("properties")
	_, hasAP := in.get("additionalProperties") // checkKnown let only false through
	if !hasProps {
		if !hasAP {
			return d.unsupported(path, "is an object without properties (a free-form object), which OpenAI strict "+
				"mode cannot express; list its properties, or send this tool with strict off")
		}
		props = &object{}
		out.set("properties", props)
	}
	po := props.(*object)

	optional := map[string]bool{}
	for _, m := range po.members {
		optional[m.key] = true
	}
	if req, ok := in.get("required"); ok {
		for i, x := range req.([]any) {
			name := x.(string)
			if _, ok := po.get(name); !ok {
				return d.invalid(indexPath(keyPath(path, "required"), i), "names %q, which is not among the "+
					"properties; remove it from required or add the property", name)
			}
			optional[name] = false
		}
	}
	all := make([]any, 0, len(po.members))
	for i, m := range po.members {
		if optional[m.key] {
			po.members[i].val = nullable(m.val)
		}
		all = append(all, m.key)
	}
	out.set("required", all)
	out.set("additionalProperties", false)
	return nil
}

// isObjectNode reports whether a node describes an object.
func isObjectNode(o *object) bool {
	if _, ok := o.get("properties"); ok {
		return true
	}
	switch t, _ := o.get("type"); t := t.(type) {
	case string:
		return t == "object"
	case []any:
		for _, x := range t {
			if x == "object" {
				return true
			}
		}
	}
	return false
}

// nullable makes an optional property accept null, which is how OpenAI
// strict mode says "not given" once every property is required. A node with a plain type gets "null" added to its type (and to
// its enum, or null would fail the enum); a bare anyOf gets a null branch;
// anything else ($ref, const, a type beside an anyOf) is wrapped in an
// anyOf with a null branch, the description moving to the wrapper.
func nullable(v any) any {
	o, ok := v.(*object)
	if !ok {
		return v
	}
	_, hasAnyOf := o.get("anyOf")
	_, hasConst := o.get("const")
	_, hasRef := o.get("$ref")
	typ, hasType := o.get("type")
	switch {
	case hasType && !hasAnyOf && !hasConst && !hasRef:
		switch t := typ.(type) {
		case string:
			if t == "null" {
				return o
			}
			o.set("type", []any{t, "null"})
		case []any:
			if containsValue(t, "null") {
				return o
			}
			o.set("type", append(t, "null"))
		}
		if enum, ok := o.get("enum"); ok {
			if list := enum.([]any); !containsValue(list, nil) {
				o.set("enum", append(list, nil))
			}
		}
		return o
	case hasAnyOf && !hasType && onlyAnnotations(o, "anyOf"):
		branches := o.members[indexOf(o, "anyOf")].val.([]any)
		for _, b := range branches {
			if isNullSchema(b) {
				return o
			}
		}
		o.set("anyOf", append(branches, nullSchema()))
		return o
	case !hasType && !hasAnyOf && !hasConst && !hasRef:
		if enum, ok := o.get("enum"); ok {
			if list := enum.([]any); !containsValue(list, nil) {
				o.set("enum", append(list, nil))
			}
			return o
		}
	}
	wrapper := &object{}
	inner := &object{members: append([]member(nil), o.members...)}
	desc, hasDesc := inner.get("description")
	inner.del("description")
	wrapper.set("anyOf", []any{inner, nullSchema()})
	if hasDesc {
		wrapper.set("description", desc)
	}
	return wrapper
}

func nullSchema() *object {
	return &object{members: []member{{"type", "null"}}}
}

func isNullSchema(v any) bool {
	o, ok := v.(*object)
	if !ok || len(o.members) != 1 {
		return false
	}
	t, _ := o.get("type")
	return t == "null"
}

// onlyAnnotations reports whether o has no keys besides key and
// annotations, so adding a branch to key's anyOf cannot conflict with a
// sibling constraint.
func onlyAnnotations(o *object, key string) bool {
	for _, m := range o.members {
		switch m.key {
		case key, "description", "title":
		default:
			return false
		}
	}
	return true
}

func indexOf(o *object, key string) int {
	for i, m := range o.members {
		if m.key == key {
			return i
		}
	}
	return -1
}

func containsValue(list []any, v any) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// kind names a JSON value's type for error messages.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case *object:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
