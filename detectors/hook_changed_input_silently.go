package detectors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// hookChangedInputSilently finds calls that ran with an input other than
// the one the model sent, while the tool_result does not tell the model: the model reads the result as the answer to its own input
// and builds on a false picture. The change is seen two ways: a PreToolUse
// hook_run of the call says input_changed, or the tool_call's input
// differs, as decoded JSON, from the model's tool_use input with no
// hook_run saying so. "Told" means the tool_result text mentions a hook,
// as a notice of the rewrite must name what rewrote the input; a result
// that says nothing of the kind is the silent case.
//
// Only calls that ran (a success, or a tool_error, exception or timeout)
// count: a call denied or blocked after the rewrite produced no output
// for the changed input to be mistaken about.
func hookChangedInputSilently(d *goDetector, s *Session, _ Params) []Finding {
	sent := map[string]json.RawMessage{}
	changed := map[string]Located{}
	for _, e := range s.Events {
		switch p := e.Payload.(type) {
		case *trajectory.ModelResponse:
			for b := range toolUses(p) {
				// A cut-off input (partial_input) is not the model's
				// finished input: the executor gets something else by design.
				if b.PartialInput == "" && len(b.Input) > 0 {
					sent[b.ID] = b.Input
				}
			}
		case *trajectory.HookRun:
			if _, seen := changed[p.ToolUseID]; !seen && p.Phase == trajectory.HookPre && p.InputChanged {
				changed[p.ToolUseID] = e
			}
		}
	}
	var out []Finding
	for _, t := range callTraces(s) {
		if !t.hasOutcome || !t.hasResult || !ran(t.outcome) {
			continue
		}
		if strings.Contains(strings.ToLower(t.resultText()), "hook") {
			continue
		}
		c := t.call.Payload.(*trajectory.ToolCall)
		var f Finding
		if h, ok := changed[t.id()]; ok {
			hook := h.Payload.(*trajectory.HookRun).Hook
			f = d.finding(s, fmt.Sprintf("PreToolUse hook %s changed the input of %s (%s), the call ran (%s), and its tool_result does not mention a hook: the model reads the result as the answer to the input it sent",
				hook, t.id(), t.tool(), t.outcome.Type()), h, t.result)
		} else if in, ok := sent[t.id()]; ok && !sameJSON(in, c.Input) {
			f = d.finding(s, fmt.Sprintf("%s (%s) ran (%s) with a tool_call input that differs from the model's tool_use input, no hook_run of the call says input_changed, and its tool_result does not mention the change",
				t.id(), t.tool(), t.outcome.Type()), t.call, t.result)
		} else {
			continue
		}
		f.ToolUseID = t.id()
		out = append(out, f)
	}
	return out
}

// sameJSON reports whether a and b decode to equal values; bytes that do
// not decode are compared as they are. Key order and spacing do not
// count: a hook that re-serialises an input it did not change has not
// changed it.
func sameJSON(a, b json.RawMessage) bool {
	// Most calls run with the very bytes the model sent: no decoding.
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(x, y)
}
