package executor

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/tools"
)

// The validator reports unknown and missing fields in map order; the model
// must get the same message for the same input every time, or a replay of
// the session sees a different tool result.
func TestAnInputWithSeveralUnknownFieldsGetsTheSameMessageEveryTime(t *testing.T) {
	var read tools.Tool
	for _, tl := range tools.Builtins() {
		if tl.Spec().Name == "read" {
			read = tl
		}
	}
	if read == nil {
		t.Fatal("no read tool")
	}
	ex := &Executor{schemas: newSchemaCache()}
	input := json.RawMessage(`{"file_path":"a","zeta":1,"alpha":2,"mid":3,"beta":4,"omega":5}`)
	first := ex.validateInput(read.Spec(), input)
	if !strings.Contains(first, "alpha, beta, mid, omega, zeta: not a parameter of this tool") {
		t.Fatalf("message %q does not list the unknown fields in order", first)
	}
	for range 50 {
		if got := ex.validateInput(read.Spec(), input); got != first {
			t.Fatalf("the message changed between identical inputs:\n%s\n%s", first, got)
		}
	}
}
