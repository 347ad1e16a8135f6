package trajectory

import (
	"reflect"
	"strings"
	"sync"
)

// payloadFields lists the top-level JSON fields of one payload type: the
// allowed ones and, of those, the required ones (no omitempty). They are
// derived from the struct tags once, so the Go types stay the single source.
type payloadFields struct {
	allowed  map[string]bool
	required []string
}

var (
	fieldsOnce   sync.Once
	fieldsByType map[EventType]payloadFields
)

func payloadFieldsOf(t EventType) payloadFields {
	fieldsOnce.Do(func() {
		fieldsByType = make(map[EventType]payloadFields, len(eventTypes))
		for _, et := range eventTypes {
			pf := payloadFields{allowed: map[string]bool{}}
			collectFields(reflect.TypeOf(newPayload(et)).Elem(), &pf)
			fieldsByType[et] = pf
		}
	})
	return fieldsByType[t]
}

// collectFields walks a struct type the way encoding/json does for the
// cases the payloads use: tagged fields, and untagged embedded structs whose
// fields are promoted.
func collectFields(t reflect.Type, pf *payloadFields) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		if f.Anonymous && !hasTag && f.Type.Kind() == reflect.Struct {
			collectFields(f.Type, pf)
			continue
		}
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		pf.allowed[name] = true
		if !strings.Contains(opts, "omitempty") {
			pf.required = append(pf.required, name)
		}
	}
}
