package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// notReplayable are the scripted sessions whose recording depends on
// something a replay does not reproduce by design.
var notReplayable = map[string]string{
	"abort.yaml": "the user's Ctrl-C is not part of the recording",
}

// Every scripted session of the agent's test suite, recorded the way
// retrace run records (workspace snapshot, the workspace's retrace.yaml),
// replays with zero divergences when the recording is trusted.
func TestEveryScriptedSessionReplaysIdentically(t *testing.T) {
	scripts, err := filepath.Glob("../agent/testdata/*.yaml")
	if err != nil || len(scripts) < 10 {
		t.Fatalf("scripts %v (%v)", scripts, err)
	}
	for _, path := range scripts {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			if why, skip := notReplayable[name]; skip {
				t.Skip(why)
			}
			ws := t.TempDir()
			files := map[string]string{"README.md": "retrace is a flight recorder for agents.\n", "build.log": "error: one\nok\nerror: two\n",
				"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "retrace.yaml": "permissions:\n  mode: bypass\n"}
			for n, c := range files {
				if err := os.WriteFile(filepath.Join(ws, n), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			recording := recordScript(t, path, ws)
			// These are the suite's own recordings, so they are trusted: their
			// bypass mode applies as it did when they were recorded.
			res, err := Run(t.Context(), RunOptions{Recording: recording, Out: filepath.Join(t.TempDir(), "replays"), TrustRecording: true})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Report.Identical() {
				var sb strings.Builder
				res.Report.Table(&sb)
				t.Fatalf("the replay of %s diverges:\n%s", name, sb.String())
			}
		})
	}
}

func recordScript(t *testing.T, path, ws string) string {
	t.Helper()
	script, err := mockllm.LoadScript(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(ws, "retrace.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry(tools.Builtins()...)
	if err != nil {
		t.Fatal(err)
	}
	env, err := tools.NewEnv(ws, reg)
	if err != nil {
		t.Fatal(err)
	}
	perm, hr, err := cfg.Check("retrace.yaml", env.Workspace())
	if err != nil {
		t.Fatal(err)
	}
	rec, err := recorder.Create(filepath.Join(t.TempDir(), "runs"), recorder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	blobs := recorder.OpenBlobs(recorder.BlobsDir(rec.Path()))
	ref, _, err := recorder.SnapshotWorkspace(env.Workspace(), blobs, recorder.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Run(t.Context(), agent.Config{Provider: script, Sink: rec, Prompt: "Read the README and summarise it.",
		WorkspaceSnapshot: ref, PermissionMode: cfg.Permissions.Mode,
		Executor: executor.Config{Env: env, Permission: perm, Hooks: hr, Blobs: blobs, SessionID: rec.SessionID()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return rec.Path()
}

// The incident scenario: a recorded session hits a bug (the project's
// check fails), and the replay reproduces it — same failure kind, same
// exit status, same output.
func TestAnIncidentReproducesOnReplay(t *testing.T) {
	ws := t.TempDir()
	for _, n := range []string{"add.sh", "check.sh", "retrace.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", "incident", "workspace", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recording := recordScript(t, filepath.Join("testdata", "incident", "script.yaml"), ws)
	res, err := Run(t.Context(), RunOptions{Recording: recording, Out: filepath.Join(t.TempDir(), "replays"), TrustRecording: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Report.Identical() {
		var sb strings.Builder
		res.Report.Table(&sb)
		t.Fatalf("the incident did not replay identically:\n%s", sb.String())
	}
	events, err := trajectory.ReadFile(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	var failed, said bool
	for _, ev := range events {
		switch p := ev.Payload.(type) {
		case *trajectory.ToolFailure:
			failed = failed || (p.FailureKind == trajectory.FailureToolError && p.ErrorCode == "exit:1")
		case *trajectory.ToolResult:
			said = said || strings.Contains(p.Text, "FAIL: add 2 3 = -1, want 5")
		}
	}
	if !failed || !said {
		t.Fatalf("the replay did not hit the bug: tool_error exit:1 %v, FAIL output %v", failed, said)
	}
}
