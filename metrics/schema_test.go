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
