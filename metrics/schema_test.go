package metrics

import (
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// The column schema is generated from a list of payload types kept here;
// this keeps the list in step with the contract's event types.
func TestTheSchemaCoversEveryEventType(t *testing.T) {
	have := map[trajectory.EventType]bool{}
	for _, p := range payloads {
		have[p.EventType()] = true
	}
	for _, et := range trajectory.EventTypes() {
		if !have[et] {
			t.Errorf("event type %s has no payload in metrics' schema list: its fields would never load", et)
		}
	}
	if len(have) != len(trajectory.EventTypes()) {
		t.Errorf("the schema list has %d event types, the contract %d", len(have), len(trajectory.EventTypes()))
	}
}

// Each event type is read with its own columns; they must be the envelope
// plus fields of the full schema, with the full schema's types, or a load
// would lose or retype a field.
func TestEachEventTypesColumnsAreASubsetOfTheSchema(t *testing.T) {
	all := map[string]string{}
	for _, c := range Columns() {
		all[c.Name] = c.Type
	}
	for _, et := range trajectory.EventTypes() {
		cols := typeColumns(et)
		if len(cols) <= len(envelope) || len(cols) >= len(all) {
			t.Errorf("%s has %d columns; want more than the envelope and fewer than all %d", et, len(cols), len(all))
		}
		for i, c := range cols {
			if i < len(envelope) && c != envelope[i] {
				t.Errorf("%s column %d is %v, want the envelope's %v", et, i, c, envelope[i])
			}
			if typ, ok := all[c.Name]; !ok || typ != c.Type {
				t.Errorf("%s column %s %s is not in the schema as such (schema: %q)", et, c.Name, c.Type, typ)
			}
		}
	}
	if got := typeColumns(trajectory.TypeToolEnd); !hasColumn(got, "duration_ms") || hasColumn(got, "failure_kind") {
		t.Errorf("tool_end columns %v: want duration_ms and not failure_kind", got)
	}
}

func hasColumn(cols []Column, name string) bool {
	for _, c := range cols {
		if c.Name == name {
			return true
		}
	}
	return false
}
