package trajectory

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestHookRunExitCodeAndStderrAreValidatedAndRoundTrip(t *testing.T) {
	code := func(n int) *int { return &n }
	base := HookRun{ToolRef: ToolRef{ToolUseID: "toolu_1", Tool: "bash"}, Phase: HookPre, Hook: "lint", Outcome: HookError, DurationMs: 3}
	tests := []struct {
		name     string
		exit     *int
		stderr   string
		wantErr  string
		wantLine string
	}{
		{"a hook that exited 0 records exit_code 0, which is not left out", code(0), "", "", `"exit_code":0`},
		{"a failing hook records its status and stderr", code(1), "lint: config not found", "", `"exit_code":1,"stderr":"lint: config not found"`},
		{"a hook that did not exit by itself has no exit_code", nil, "", "", `"duration_ms":3}`},
		{"exit status 255 is the largest", code(255), "", "", `"exit_code":255`},
		{"a negative exit code is refused", code(-1), "", `field "exit_code"`, ""},
		{"an exit code over 255 is refused", code(256), "", `field "exit_code"`, ""},
		{"stderr of exactly MaxHookStderr bytes is accepted", code(2), strings.Repeat("e", MaxHookStderr), "", `"exit_code":2`},
		{"stderr over MaxHookStderr bytes is refused", code(2), strings.Repeat("e", MaxHookStderr+1), `field "stderr"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base
			p.ExitCode, p.Stderr = tt.exit, tt.stderr
			ev := NewEvent("s1", 1, time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), 1, &p)
			err := ev.Validate()
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Validate = %v, want an ErrMalformed naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			line, err := AppendEvent(nil, ev)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(line, []byte(tt.wantLine)) {
				t.Errorf("line %s lacks %s", line, tt.wantLine)
			}
			got, errs, _ := decodeAll(t, string(line)+"\n")
			if len(errs) != 0 || len(got) != 1 {
				t.Fatalf("decode: %v", errs)
			}
			back := got[0].Payload.(*HookRun)
			if (back.ExitCode == nil) != (tt.exit == nil) || (back.ExitCode != nil && *back.ExitCode != *tt.exit) || back.Stderr != tt.stderr {
				t.Errorf("decoded exit_code %v stderr %q, want %v %q", back.ExitCode, back.Stderr, tt.exit, tt.stderr)
			}
		})
	}
}
