package trajectory

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"sort"
	"testing"

	"github.com/invopop/jsonschema"
	orderedmap "github.com/pb33f/ordered-map/v2"
)

var update = flag.Bool("update", false, "rewrite generated files (schema/v2.json) from the Go types")

// schemaPath is the schema of the version this build writes, generated
// from the Go types; v1SchemaPath is v 1's, frozen as it was released
// (the Go types have v 2's fields now, so it cannot be generated).
const (
	schemaPath   = "schema/v2.json"
	v1SchemaPath = "schema/v1.json"
)

// closedSetValues maps every closed-set type to its values, for the schema.
// TestEveryClosedSetIsInTheSchema keeps it complete.
var closedSetValues = map[reflect.Type][]string{
	reflect.TypeFor[EventType]():          eventTypes.strings(),
	reflect.TypeFor[FailureKind]():        failureKinds.strings(),
	reflect.TypeFor[PermissionSource]():   permissionSources.strings(),
	reflect.TypeFor[ChainStep]():          chainSteps.strings(),
	reflect.TypeFor[DefenseName]():        defenseNames.strings(),
	reflect.TypeFor[DefenseAction]():      defenseActions.strings(),
	reflect.TypeFor[StopReason]():         stopReasons.strings(),
	reflect.TypeFor[EndReason]():          endReasons.strings(),
	reflect.TypeFor[DisplayMode]():        displayModes.strings(),
	reflect.TypeFor[RunMode]():            runModes.strings(),
	reflect.TypeFor[PermissionMode]():     permissionModes.strings(),
	reflect.TypeFor[ToolSource]():         toolSources.strings(),
	reflect.TypeFor[HookPhase]():          hookPhases.strings(),
	reflect.TypeFor[HookOutcome]():        hookOutcomes.strings(),
	reflect.TypeFor[Role]():               roles.strings(),
	reflect.TypeFor[BlockType]():          blockTypes.strings(),
	reflect.TypeFor[ModelErrorKind]():     modelErrorKinds.strings(),
	reflect.TypeFor[CompactionStrategy](): compactionStrategies.strings(),
	reflect.TypeFor[TokenMeasure]():       tokenMeasures.strings(),
	reflect.TypeFor[WindowSource]():       windowSources.strings(),
	reflect.TypeFor[SandboxMode]():        sandboxModes.strings(),
	reflect.TypeFor[Observed]():           observedOrigins.strings(),
	reflect.TypeFor[MCPServerState]():     mcpServerStates.strings(),
}

// generateSchema builds the JSON Schema of trajectory v2 from the Go types:
// one variant per event type (envelope + payload, "type" fixed), closed
// sets as enums, required fields from the omitempty tags.
func generateSchema(t *testing.T) []byte {
	t.Helper()
	r := &jsonschema.Reflector{
		ExpandedStruct: true,
		Anonymous:      true,
		Mapper: func(rt reflect.Type) *jsonschema.Schema {
			if vals, ok := closedSetValues[rt]; ok {
				enum := make([]any, len(vals))
				for i, v := range vals {
					enum[i] = v
				}
				return &jsonschema.Schema{Type: "string", Enum: enum}
			}
			if rt == reflect.TypeFor[json.RawMessage]() {
				return &jsonschema.Schema{Description: "Any JSON value, kept as received."}
			}
			return nil
		},
	}
	if err := r.AddGoComments("github.com/retrace-dev/retrace/trajectory", "./"); err != nil {
		t.Fatal(err)
	}
	root := &jsonschema.Schema{
		Version:     "https://json-schema.org/draft/2020-12/schema",
		ID:          "https://github.com/retrace-dev/retrace/trajectory/schema/v2.json",
		Title:       "retrace trajectory event, v2",
		Description: "One line of a retrace trajectory (JSONL): the envelope (v, session, seq, ts, turn, type) followed by the fields of the type's payload. Generated from the Go types in package trajectory; do not edit.",
		Definitions: jsonschema.Definitions{},
	}
	for _, et := range eventTypes {
		s := r.Reflect(newPayload(et))
		for name, def := range s.Definitions {
			root.Definitions[name] = def
		}
		s.Definitions, s.Version, s.ID = nil, "", ""
		props := orderedmap.New[string, *jsonschema.Schema]()
		props.Set("v", &jsonschema.Schema{Const: Version, Description: "Schema version."})
		props.Set("session", &jsonschema.Schema{Type: "string", MinLength: ptr(uint64(1)), Description: "Session id, sortable by start time."})
		props.Set("seq", &jsonschema.Schema{Type: "integer", Minimum: "1", Description: "Event number in the session, from 1, without gaps."})
		props.Set("ts", &jsonschema.Schema{Type: "string", Format: "date-time", Description: "When the event was recorded (RFC 3339, UTC)."})
		props.Set("turn", &jsonschema.Schema{Type: "integer", Minimum: "0", Description: "Model turn; 0 before the first request."})
		props.Set("type", &jsonschema.Schema{Const: string(et)})
		for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
			props.Set(pair.Key, pair.Value)
		}
		s.Properties = props
		s.Required = append([]string{"v", "session", "seq", "ts", "turn", "type"}, s.Required...)
		if et == TypeModelRequest {
			// omitempty only because v 1 lines, decoded into the same
			// type, lack it; v 2 requires it (ModelRequest.validate).
			s.Required = append(s.Required, "prefix_hash")
		}
		s.Title = string(et)
		root.Definitions[string(et)] = s
		root.OneOf = append(root.OneOf, &jsonschema.Schema{Ref: "#/$defs/" + string(et)})
	}
	out, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

func ptr[T any](v T) *T { return &v }

func TestSchemaFileIsUpToDate(t *testing.T) {
	want := generateSchema(t)
	if *update {
		if err := os.WriteFile(schemaPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatalf("%v; generate it with: go test ./trajectory -run TestSchemaFileIsUpToDate -update", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: the Go types changed. Regenerate it with:\n  go test ./trajectory -run TestSchemaFileIsUpToDate -update\nand bump Version if the change is not backwards compatible", schemaPath)
	}
}

// TestEveryClosedSetIsInTheSchema walks the payload types and fails when a
// string-kinded named type (a closed set) has no entry in closedSetValues.
func TestEveryClosedSetIsInTheSchema(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(rt reflect.Type)
	walk = func(rt reflect.Type) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice || rt.Kind() == reflect.Map {
			rt = rt.Elem()
		}
		if seen[rt] {
			return
		}
		seen[rt] = true
		switch {
		case rt.Kind() == reflect.String && rt.PkgPath() != "":
			if _, ok := closedSetValues[rt]; !ok {
				t.Errorf("closed set %s is missing from closedSetValues", rt.Name())
			}
		case rt.Kind() == reflect.Struct:
			for i := 0; i < rt.NumField(); i++ {
				walk(rt.Field(i).Type)
			}
		}
	}
	for _, et := range eventTypes {
		walk(reflect.TypeOf(newPayload(et)))
	}
}

// TestTopLevelFieldsHaveOneJSONTypeAcrossEvents guards the flat layout: a
// field name used by two payloads must have the same JSON type in both, so
// that all events load into one column schema.
func TestTopLevelFieldsHaveOneJSONTypeAcrossEvents(t *testing.T) {
	kinds := map[string]string{}
	owner := map[string]EventType{}
	for _, et := range eventTypes {
		walkTop(reflect.TypeOf(newPayload(et)).Elem(), func(name string, ft reflect.Type) {
			k := jsonTypeName(ft)
			if prev, ok := kinds[name]; ok && prev != k {
				t.Errorf("field %q is %s in %s but %s in %s", name, prev, owner[name], k, et)
			}
			kinds[name], owner[name] = k, et
		})
	}
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, env := range envelopeKeys {
		if _, clash := kinds[env]; clash {
			t.Errorf("payload field %q shadows the envelope", env)
		}
	}
}

func walkTop(rt reflect.Type, f func(string, reflect.Type)) {
	for i := 0; i < rt.NumField(); i++ {
		fld := rt.Field(i)
		tag, hasTag := fld.Tag.Lookup("json")
		if fld.Anonymous && !hasTag {
			walkTop(fld.Type, f)
			continue
		}
		name, _, _ := bytes.Cut([]byte(tag), []byte(","))
		f(string(name), fld.Type)
	}
}
