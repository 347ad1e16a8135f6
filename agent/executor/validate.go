package executor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/retrace-dev/retrace/agent/tools"
)

// schemaCache compiles each tool's input schema once per session.
type schemaCache struct {
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
	errs     map[string]error
}

func newSchemaCache() *schemaCache {
	return &schemaCache{compiled: map[string]*jsonschema.Schema{}, errs: map[string]error{}}
}

func (sc *schemaCache) get(spec tools.Spec) (*jsonschema.Schema, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if s, ok := sc.compiled[spec.Name]; ok {
		return s, nil
	}
	if err, ok := sc.errs[spec.Name]; ok {
		return nil, err
	}
	s, err := compileSchema(spec)
	if err != nil {
		sc.errs[spec.Name] = err
		return nil, err
	}
	sc.compiled[spec.Name] = s
	return s, nil
}

func compileSchema(spec tools.Spec) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(spec.Schema))
	if err != nil {
		return nil, fmt.Errorf("tool %s: schema is not JSON: %w", spec.Name, err)
	}
	c := jsonschema.NewCompiler()
	url := "tool://" + spec.Name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("tool %s: %w", spec.Name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("tool %s: schema does not compile: %w", spec.Name, err)
	}
	return s, nil
}

var printer = message.NewPrinter(language.English)

// validateInput checks input against the tool's schema and returns "" when
// it is valid, or a message for the model that names each wrong field, what
// was sent and what to send instead.
func (ex *Executor) validateInput(spec tools.Spec, input json.RawMessage) string {
	s, err := ex.schemas.get(spec)
	if err != nil {
		// Our bug, not the model's: do not blame its input.
		return ""
	}
	if !isObject(input) {
		return fmt.Sprintf("Invalid input for %s: the input must be a JSON object with the tool's parameters, got %s. Call %s again with an object such as {\"param\": value}.",
			spec.Name, describe(input), spec.Name)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return fmt.Sprintf("Invalid input for %s: it is not valid JSON (%v). Call %s again with a JSON object.", spec.Name, err, spec.Name)
	}
	err = s.Validate(v)
	if err == nil {
		return ""
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return fmt.Sprintf("Invalid input for %s: %v", spec.Name, err)
	}
	var lines []string
	for _, leaf := range leaves(ve) {
		lines = append(lines, "- "+fieldMessage(leaf, v))
	}
	sort.Strings(lines)
	return fmt.Sprintf("Invalid input for %s:\n%s\nFix these fields and call %s again; the other fields were fine.",
		spec.Name, strings.Join(dedupe(lines), "\n"), spec.Name)
}

func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// fieldMessage renders one validation failure as "field: problem (you sent
// X)", with the field named by its JSON path.
func fieldMessage(e *jsonschema.ValidationError, doc any) string {
	field := strings.Join(e.InstanceLocation, ".")
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		names := make([]string, len(k.Missing))
		for i, m := range k.Missing {
			names[i] = joinField(field, m)
		}
		// The validator lists them in map order; sorted, the same input
		// always gets the same message, so a replay sees the same bytes.
		slices.Sort(names)
		return fmt.Sprintf("%s: required but missing; add it", strings.Join(names, ", "))
	case *kind.AdditionalProperties:
		names := make([]string, len(k.Properties))
		for i, m := range k.Properties {
			names[i] = joinField(field, m)
		}
		slices.Sort(names)
		return fmt.Sprintf("%s: not a parameter of this tool; remove it", strings.Join(names, ", "))
	}
	if field == "" {
		field = "(input)"
	}
	return fmt.Sprintf("%s: %s (you sent %s)", field, e.ErrorKind.LocalizedString(printer), describe(valueAt(doc, e.InstanceLocation)))
}

func joinField(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func valueAt(doc any, path []string) any {
	for _, p := range path {
		switch d := doc.(type) {
		case map[string]any:
			doc = d[p]
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i < 0 || i >= len(d) {
				return nil
			}
			doc = d[i]
		default:
			return nil
		}
	}
	return doc
}

// describe shows a value the model sent, short enough for an error message.
func describe(v any) string {
	var b []byte
	switch x := v.(type) {
	case json.RawMessage:
		b = x
	default:
		b, _ = json.Marshal(x)
	}
	s := string(b)
	if len(s) == 0 {
		s = "nothing"
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(raw)
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}
