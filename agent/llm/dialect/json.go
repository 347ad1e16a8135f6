package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxDepth bounds how deeply a schema may nest. Tool schemas are a few
// levels deep; the bound keeps hostile input (an MCP server's schema) from
// costing unbounded stack.
const maxDepth = 128

// object is a JSON object that keeps its keys in input order. Go maps
// would lose the order the generator chose for properties, and the order
// is part of the bytes the provider caches and of the order in
// which OpenAI strict mode makes the model write the fields.
type object struct {
	members []member
}

type member struct {
	key string
	val any
}

// get returns the value of key and whether it is present.
func (o *object) get(key string) (any, bool) {
	for _, m := range o.members {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// set replaces key's value in place, or appends key when it is absent.
func (o *object) set(key string, val any) {
	for i := range o.members {
		if o.members[i].key == key {
			o.members[i].val = val
			return
		}
	}
	o.members = append(o.members, member{key, val})
}

// del removes key if present.
func (o *object) del(key string) {
	for i := range o.members {
		if o.members[i].key == key {
			o.members = append(o.members[:i], o.members[i+1:]...)
			return
		}
	}
}

// parse decodes one JSON value into the ordered representation: *object,
// []any, string, json.Number, bool or nil. Duplicate keys are an error,
// because which of the two a provider would honour is unspecified.
func parse(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := parseValue(dec, "$", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &syntaxError{path: "$", msg: "unexpected data after the JSON value"}
	}
	return v, nil
}

// syntaxError is input that is not one well-formed JSON value; path is
// where the parser stopped.
type syntaxError struct {
	path string
	msg  string
}

func (e *syntaxError) Error() string { return e.path + ": " + e.msg }

func syntaxErr(path string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &syntaxError{path: path, msg: "unexpected end of JSON"}
	}
	return &syntaxError{path: path, msg: err.Error()}
}

func parseValue(dec *json.Decoder, path string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, &syntaxError{path: path, msg: fmt.Sprintf("nested deeper than %d levels", maxDepth)}
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxErr(path, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, syntaxErr(path, err)
				}
				key, ok := kt.(string)
				if !ok {
					return nil, &syntaxError{path: path, msg: "object key is not a string"}
				}
				if _, dup := o.get(key); dup {
					return nil, &syntaxError{path: path, msg: fmt.Sprintf("duplicate key %q", key)}
				}
				v, err := parseValue(dec, keyPath(path, key), depth+1)
				if err != nil {
					return nil, err
				}
				o.members = append(o.members, member{key, v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, syntaxErr(path, err)
			}
			return o, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := parseValue(dec, indexPath(path, len(arr)), depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, syntaxErr(path, err)
			}
			return arr, nil
		}
		return nil, &syntaxError{path: path, msg: fmt.Sprintf("unexpected %q", t)}
	default:
		// string, json.Number, bool or nil.
		return t, nil
	}
}

// encoder writes the ordered representation compactly and without HTML
// escaping, so descriptions keep "<", ">" and "&" readable and the bytes
// match what tools.Definition produces for the same text.
type encoder struct {
	buf bytes.Buffer
	str *json.Encoder
}

func encode(v any) ([]byte, error) {
	e := &encoder{}
	e.str = json.NewEncoder(&e.buf)
	e.str.SetEscapeHTML(false)
	if err := e.value(v); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

func (e *encoder) value(v any) error {
	switch t := v.(type) {
	case nil:
		e.buf.WriteString("null")
	case bool:
		e.buf.WriteString(strconv.FormatBool(t))
	case json.Number:
		e.buf.WriteString(t.String())
	case string:
		if err := e.str.Encode(t); err != nil {
			return err
		}
		e.buf.Truncate(e.buf.Len() - 1) // Encode appends a newline.
	case []any:
		e.buf.WriteByte('[')
		for i, x := range t {
			if i > 0 {
				e.buf.WriteByte(',')
			}
			if err := e.value(x); err != nil {
				return err
			}
		}
		e.buf.WriteByte(']')
	case []string:
		e.buf.WriteByte('[')
		for i, x := range t {
			if i > 0 {
				e.buf.WriteByte(',')
			}
			if err := e.value(x); err != nil {
				return err
			}
		}
		e.buf.WriteByte(']')
	case *object:
		e.buf.WriteByte('{')
		for i, m := range t.members {
			if i > 0 {
				e.buf.WriteByte(',')
			}
			if err := e.value(m.key); err != nil {
				return err
			}
			e.buf.WriteByte(':')
			if err := e.value(m.val); err != nil {
				return err
			}
		}
		e.buf.WriteByte('}')
	default:
		return fmt.Errorf("dialect: cannot encode %T", v)
	}
	return nil
}

// compactText renders a value for a description: strings quoted, numbers
// as written in the input, objects in their key order.
func compactText(v any) string {
	b, err := encode(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// keyPath extends a JSON path with an object key, quoting keys that are
// not plain identifiers so the path stays unambiguous.
func keyPath(path, key string) string {
	if isIdent(key) {
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}
