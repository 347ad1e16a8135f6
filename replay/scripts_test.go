package replay

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/retrace-dev/retrace/scenarios"
	"github.com/retrace-dev/retrace/trajectory"
)

// notReplayable are the scripted sessions whose recording depends on
// something a replay does not reproduce by design.
var notReplayable = map[string]string{
	"abort.yaml": "the user's Ctrl-C is not part of the recording",
}

// suiteFiles is the workspace the agent's test suite runs its scripts in.
var suiteFiles = map[string]string{"README.md": "retrace is a flight recorder for agents.\n", "build.log": "error: one\nok\nerror: two\n",
	"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "retrace.yaml": "permissions:\n  mode: bypass\n"}

// scripted is one scripted session of the suite: its script and the
// workspace and task it runs with.
type scripted struct {
	name   string
	script string
	// data is the script's text when it is not read from script.
	data []byte
	// workspace is copied into the session's workspace; nil means suiteFiles.
	workspace fs.FS
	prompt    string
}

// suiteSessions lists every scripted session of the project: the agent
// suite's scripts, the mock LLM's example scripts and retrace run's demo.
func suiteSessions(t *testing.T) []scripted {
	t.Helper()
	var out []scripted
	for _, glob := range []string{"../agent/testdata/*.yaml", "../mockllm/testdata/*.yaml"} {
		paths, err := filepath.Glob(glob)
		if err != nil || len(paths) == 0 {
			t.Fatalf("scripts %s: %v (%v)", glob, paths, err)
		}
		for _, p := range paths {
			out = append(out, scripted{name: filepath.Base(filepath.Dir(filepath.Dir(p))) + "/" + filepath.Base(p), script: p})
		}
	}
	// retrace run's demo is a built-in scenario; its trusted config is
	// the workspace's retrace.yaml here, which recordSession trusts.
	demo, err := scenarios.BuiltinScenario("demo")
	if err != nil {
		t.Fatal(err)
	}
	ws := fstest.MapFS{"retrace.yaml": {Data: fmt.Appendf(nil, "permissions:\n  mode: %s\n", demo.Config.Permissions.Mode)}}
	for name, data := range demo.Files {
		ws[name] = &fstest.MapFile{Data: data}
	}
	out = append(out, scripted{name: "the demo", script: demo.File, data: demo.Script, workspace: ws, prompt: demo.Prompt})
	if len(out) < 25 {
		t.Fatalf("found only %d scripted sessions", len(out))
	}
	return out
}

// Every scripted session of the project — the agent suite's scripts, the
// mock LLM's examples, the demo — recorded through the session builder the
// way retrace run records (workspace snapshot, the workspace's
// retrace.yaml), replays through the builder with zero divergences when the
// recording is trusted.
func TestEveryScriptedSessionReplaysIdentically(t *testing.T) {
	for _, sc := range suiteSessions(t) {
		t.Run(sc.name, func(t *testing.T) {
			if why, skip := notReplayable[filepath.Base(sc.script)]; skip {
				t.Skip(why)
			}
			ws := t.TempDir()
			if sc.workspace != nil {
				if err := os.CopyFS(ws, sc.workspace); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFiles(t, ws, suiteFiles)
			}
			data := sc.data
			if data == nil {
				var err error
				if data, err = os.ReadFile(sc.script); err != nil {
					t.Fatal(err)
				}
			}
			recording := recordSession(t, recordOpts{script: data, name: sc.script, ws: ws, prompt: sc.prompt})
			// These are the suite's own recordings, so they are trusted: their
			// bypass mode applies as it did when they were recorded.
			res, err := Run(t.Context(), RunOptions{Recording: recording, Out: filepath.Join(t.TempDir(), "replays"), TrustRecording: true})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Report.Identical() {
				var sb strings.Builder
				res.Report.Table(&sb)
				t.Fatalf("the replay of %s diverges:\n%s", sc.name, sb.String())
			}
			// The builder rebuilt the recorded session exactly: the same
			// policy, limits, defenses, model, prompt and catalog.
			if rec, rep := startOf(t, recording), startOf(t, res.Path); rec.ConfigHash != rep.ConfigHash {
				t.Fatalf("config_hash %s recorded, %s replayed", rec.ConfigHash, rep.ConfigHash)
			}
		})
	}
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func recordScript(t *testing.T, path, ws string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return recordSession(t, recordOpts{script: data, name: path, ws: ws})
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
