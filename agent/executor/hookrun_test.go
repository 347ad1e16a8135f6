package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/hooks"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/trajectory"
)

func TestABrokenHookIsRecordedWithItsExitCodeAndRedactedClippedStderr(t *testing.T) {
	dir := t.TempDir()
	// The hook dies after printing a key right where ClipStderr cuts its
	// head (60 % of the room), then a long trace.
	broken := filepath.Join(dir, "broken.sh")
	body := "#!/bin/bash\nprintf '%01190d' 0 >&2\necho \" $LINT_KEY\" >&2\nfor i in $(seq 1 200); do echo \"  at frame $i\" >&2; done\nexit 3\n"
	if err := os.WriteFile(broken, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LINT_KEY", shapeKey)
	h := newHarness(t, harnessOpts{
		perm:  permission.Config{Allow: []string{"Bash(echo:*)"}},
		hooks: []hooks.Config{{Name: "lint", Event: "PreToolUse", Matcher: "bash", Command: broken}},
	})
	h.turnWith(context.Background(), use("toolu_1", "bash", `{"command":"echo hi"}`))
	evs := h.events()
	runs := payloads[*trajectory.HookRun](evs)
	if len(runs) != 1 {
		t.Fatalf("hook runs %+v", runs)
	}
	run := runs[0]
	if run.Outcome != trajectory.HookError || run.ExitCode == nil || *run.ExitCode != 3 {
		t.Fatalf("hook_run %+v, want an error with exit_code 3", run)
	}
	if len(run.Stderr) > trajectory.MaxHookStderr || !strings.Contains(run.Stderr, "bytes omitted") || !strings.Contains(run.Stderr, "at frame 200") {
		t.Fatalf("stderr (%d bytes) is not clipped to head and tail: %q", len(run.Stderr), run.Stderr)
	}
	if !strings.Contains(run.Stderr, "[REDACTED") {
		t.Errorf("stderr lacks the redaction marker: %q", run.Stderr)
	}
	for _, p := range pieces(shapeKey, len("sk-ant-api03-")) {
		if strings.Contains(h.buf.String(), p) {
			t.Fatalf("the trajectory holds %q, a piece of the hook's key", p)
		}
	}
}
