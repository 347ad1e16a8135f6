package hooks

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/trajectory"
)

func TestRunsRecordTheExitCodeAndStderrOfEveryHook(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name       string
		body       string
		timeout    time.Duration
		wantCode   int // -1: no exit code
		wantErr    string
		wantResult trajectory.HookOutcome
	}{
		{"a hook that fails records its exit status and what it said on stderr",
			"echo 'lint: config .lintrc not found' >&2; exit 1", 0, 1, "lint: config .lintrc not found\n", trajectory.HookError},
		{"a hook that blocks records exit 2 and its reason",
			"echo 'not on Fridays' >&2; exit 2", 0, 2, "not on Fridays\n", trajectory.HookBlock},
		{"a hook that succeeds records exit 0, which is not left out",
			"cat >/dev/null; exit 0", 0, 0, "", trajectory.HookContinue},
		{"a hook that prints bad JSON records exit 0 and is an error",
			"echo 'warming up' >&2; echo '{not json'", 0, 0, "warming up\n", trajectory.HookError},
		{"a hook killed by its timeout has no exit code but keeps its stderr",
			"echo 'starting' >&2; sleep 30", 300 * time.Millisecond, -1, "starting\n", trajectory.HookTimeout},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := pre(t, dir, "h"+string(rune('a'+i)), tt.body)
			if tt.timeout > 0 {
				cfg.Timeout = tt.timeout
			}
			r := newRunner(t, dir, cfg)
			res := runPre(t, r, context.Background(), Call{SessionID: "s", ToolUseID: "toolu_1", Tool: "bash", Input: []byte(`{"command":"ls"}`)})
			if len(res.Runs) != 1 {
				t.Fatalf("runs %+v", res.Runs)
			}
			run := res.Runs[0]
			if run.Outcome != tt.wantResult {
				t.Errorf("outcome %s, want %s", run.Outcome, tt.wantResult)
			}
			switch {
			case tt.wantCode < 0 && run.ExitCode != nil:
				t.Errorf("exit code %d, want none", *run.ExitCode)
			case tt.wantCode >= 0 && (run.ExitCode == nil || *run.ExitCode != tt.wantCode):
				t.Errorf("exit code %v, want %d", run.ExitCode, tt.wantCode)
			}
			if run.Stderr != tt.wantErr {
				t.Errorf("stderr %q, want %q", run.Stderr, tt.wantErr)
			}
		})
	}
}

func TestClipStderrKeepsHeadAndTailWithinTheEventLimit(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"ASCII stderr twice the limit", strings.Repeat("a", trajectory.MaxHookStderr) + strings.Repeat("z", trajectory.MaxHookStderr)},
		{"multi-byte stderr is cut between characters", strings.Repeat("é", trajectory.MaxHookStderr)},
		{"stderr one byte over the limit", strings.Repeat("x", trajectory.MaxHookStderr+1)},
		{"the 64 KiB the runner keeps at most", strings.Repeat("line of a stack trace\n", maxStderr/22)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := ClipStderr(tt.in)
			if len(out) > trajectory.MaxHookStderr {
				t.Fatalf("%d bytes, want at most %d", len(out), trajectory.MaxHookStderr)
			}
			if !utf8.ValidString(out) {
				t.Fatalf("not valid UTF-8: %q", out)
			}
			head, tail, ok := strings.Cut(out, "\n… [")
			if !ok || !strings.HasPrefix(tt.in, head) || len(head) < trajectory.MaxHookStderr/2 {
				t.Fatalf("head %d bytes, want most of the start of the input: %.80q", len(head), out)
			}
			_, tail, _ = strings.Cut(tail, "] …\n")
			if !strings.HasSuffix(tt.in, tail) || len(tail) < trajectory.MaxHookStderr/4 {
				t.Fatalf("tail %d bytes, want the end of the input", len(tail))
			}
			omitted := len(tt.in) - len(head) - len(tail)
			if !strings.Contains(out, "["+strconv.Itoa(omitted)+" bytes omitted]") {
				t.Errorf("the marker does not say %d bytes were omitted: %q", omitted, out[len(head):len(head)+40])
			}
		})
	}
	if short := "short\n"; ClipStderr(short) != short {
		t.Error("a short stderr was changed")
	}
}
