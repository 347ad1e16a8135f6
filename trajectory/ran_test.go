package trajectory

import (
	"errors"
	"testing"
	"time"
)

func TestRanIsDecidedByKindThenMarkerThenAnOldZeroAbort(t *testing.T) {
	tests := []struct {
		name string
		kind FailureKind
		code string
		end  *ToolEnd
		want bool
	}{
		{"success", "", "", &ToolEnd{DurationMs: 3}, true},
		{"success without tool_end", "", "", nil, true},
		{"tool_error", FailureToolError, "", &ToolEnd{DurationMs: 3}, true},
		{"timeout", FailureTimeout, "", &ToolEnd{DurationMs: 30000}, true},
		{"exception", FailureException, "", &ToolEnd{DurationMs: 1}, true},
		{"denied, old file, 0 ms", FailurePermissionDenied, "", &ToolEnd{}, false},
		{"denied, not_run", FailurePermissionDenied, "", &ToolEnd{NotRun: true}, false},
		{"hook blocked", FailureHookBlocked, "", &ToolEnd{}, false},
		{"invalid input", FailureInvalidInput, "", &ToolEnd{}, false},
		{"unknown tool", FailureNotFound, "", &ToolEnd{}, false},
		{"aborted while running", FailureAborted, "", &ToolEnd{DurationMs: 812.4}, true},
		{"aborted before starting, old file", FailureAborted, "", &ToolEnd{}, false},
		{"aborted before starting, not_run", FailureAborted, "", &ToolEnd{NotRun: true}, false},
		{"aborted, imported, duration unknown", FailureAborted, "", &ToolEnd{DurationUnknown: true}, true},
		{"a refused command recorded as tool_error", FailureToolError, "", &ToolEnd{NotRun: true}, false},
		{"a command the sandbox refused an access ran", FailurePermissionDenied, ErrorCodeSandbox, &ToolEnd{DurationMs: 47}, true},
		{"a command the sandbox could not start", FailurePermissionDenied, "sandbox_unavailable", &ToolEnd{NotRun: true}, false},
	}
	for _, tt := range tests {
		if got := Ran(tt.kind, tt.code, tt.end); got != tt.want {
			t.Errorf("%s: Ran = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNotRunToolEndHasNoDuration(t *testing.T) {
	ev := Event{V: Version, Session: "s", Seq: 1, TS: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Payload: &ToolEnd{ToolRef: ToolRef{ToolUseID: "toolu_1", Tool: "bash"}, NotRun: true, DurationMs: 0.5}}
	if err := ev.Validate(); !errors.Is(err, ErrMalformed) {
		t.Fatalf("not_run with duration_ms 0.5: err = %v, want ErrMalformed", err)
	}
	ev.Payload.(*ToolEnd).DurationMs = 0
	if err := ev.Validate(); err != nil {
		t.Fatalf("not_run with no duration: %v", err)
	}
}

func TestErrorCodeFormatIsClosed(t *testing.T) {
	for _, ok := range []string{"exit:0", "exit:127", "exit:-1", "signal:KILL", "http:404", "ENOENT", "ENAMETOOLONG",
		"unknown_tool", "user_abort", "stream_abandoned", "mcp_timeout", "not_run", "io"} {
		if !IsErrorCode(ok) {
			t.Errorf("IsErrorCode(%q) = false, want true", ok)
		}
	}
	for _, bad := range []string{"", "exit:", "exit:1:20261130", "exit:x", "signal:kill", "http:4040", "http:99x",
		"E", "Enoent", "no_such_tool_frobnicate", "ENOENT:/etc/passwd", "timeout_after_30s", "E1234567890123456"} {
		if IsErrorCode(bad) {
			t.Errorf("IsErrorCode(%q) = true, want false", bad)
		}
	}
}
