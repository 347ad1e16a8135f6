package trajectory

import "testing"

func TestToolUseIDOfNamesTheCallOfEveryToolEventAndNothingElse(t *testing.T) {
	ref := ToolRef{ToolUseID: "toolu_1", Tool: "bash"}
	for _, p := range []Payload{&ToolCall{ToolRef: ref}, &PermissionAllow{PermissionDecision: PermissionDecision{ToolRef: ref}},
		&PermissionDeny{PermissionDecision: PermissionDecision{ToolRef: ref}}, &HookRun{ToolRef: ref},
		&ToolSuccess{ToolRef: ref}, &ToolFailure{ToolRef: ref}, &ToolEnd{ToolRef: ref}, &ToolResult{ToolRef: ref}} {
		if got := ToolUseIDOf(p); got != "toolu_1" {
			t.Errorf("ToolUseIDOf(%T) = %q, want toolu_1", p, got)
		}
	}
	for _, p := range []Payload{&SessionStart{}, &ModelResponse{}, &SessionEnd{}} {
		if got := ToolUseIDOf(p); got != "" {
			t.Errorf("ToolUseIDOf(%T) = %q, want none", p, got)
		}
	}
}
