package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/trajectory"
)

// TestScenarioFromClientSessions is issue 34's acceptance for the
// sessions of other clients: an imported Claude Code session (the
// importer's testdata, with a subagent in the background) and a Codex
// session recorded by `retrace mock serve --record` each become, with
// `retrace scenario from`, a scenario of the same client (agent:) whose
// workspace holds the files the session read; `retrace eval` runs it with
// the real client, offline in a network namespace of its own
// (--require-isolation), and it passes, with the calls the recording
// holds.
func TestScenarioFromClientSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the real clients take seconds each")
	}
	if out, err := exec.Command("unshare", "-n", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare -n is not permitted here (%v: %s); the real clients run only in a network namespace of their own, never online", err, strings.TrimSpace(string(out)))
	}
	t.Run("imported Claude Code", func(t *testing.T) {
		if _, err := exec.LookPath("claude"); err != nil {
			t.Skipf("claude is not installed (.ci/run installs it with npm): %v", err)
		}
		runs := filepath.Join(t.TempDir(), "runs")
		if code, stdout, stderr := runCLI(t, nil, "import", "claude-code", filepath.Join("..", "..", "importer", "testdata", "claudecode"), "--runs", runs); code != ExitOK {
			t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
		}
		main := mainSession(t, runs)
		archive := fromAndEval(t, main, map[string]int{"Read": 2, "Bash": 2, "Agent": 1})
		// Without the file the session read, Claude Code's Read fails: the
		// mock refuses turn 2, whose request no longer carries the
		// recorded result, and the scenario fails. (The mock's own words
		// do not reach eval's output for an agent run yet: the client
		// only exits with 1.)
		broken := filepath.Join(t.TempDir(), "broken.txtar")
		if err := os.WriteFile(broken, []byte(strings.Replace(archive, "-- workspace/notes.txt --\nhello from notes\nline two\n", "", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCLI(t, nil, "eval", broken, "--require-agents", "--require-isolation")
		if code != ExitGate || !strings.Contains(stdout, "Read failed with tool_error ENOENT") || !strings.Contains(stdout, "exactly 6 turns") {
			t.Errorf("eval without the file read: exit %d, want %d with the Read that failed and the turns missing:\n%s%s", code, ExitGate, stdout, stderr)
		}
		for _, want := range []string{
			"agent: {profile: claude-code, args: [\"--allowedTools\", \"Read\"]}",
			// The subagent plays its own conversation, matched by its task.
			"match: {first_user_contains: \"Count the lines of notes.txt\"}",
			// The path the session read is relative to its workspace.
			`input: {"file_path":"notes.txt"}`,
			"-- workspace/notes.txt --\nhello from notes\nline two\n",
			"(2ab44da7-bb3e-4176-915d-2d1b02fa1102.jsonl:21): turn 1's model_response",
		} {
			if !strings.Contains(archive, want) {
				t.Errorf("the scenario lacks %q:\n%s", want, archive)
			}
		}
	})
	t.Run("Codex through mock serve --record", func(t *testing.T) {
		if _, err := exec.LookPath("codex"); err != nil {
			t.Skipf("codex is not installed (.ci/run installs it with npm): %v", err)
		}
		var codex realClient
		for _, c := range realClients {
			if c.bin == "codex" {
				codex = c
			}
		}
		run := runRealClient(t, codex, `model: gpt-5.5
turns:
  - content:
      - text: "Reading the notes."
      - tool_use: {id: call_read_1, name: exec_command, input: {cmd: "cat notes.txt"}}
  - expect: {tool_results: [{tool_use_id: call_read_1}]}
    content:
      - tool_use: {id: call_wc_1, name: exec_command, input: {cmd: "wc -l notes.txt", workdir: "$WS"}}
      - tool_use: {id: call_cat_2, name: exec_command, input: {cmd: "cat missing.txt"}}
  - content: [{text: "notes.txt has 2 lines."}]
`, "check the notes", "", map[string]string{"notes.txt": "hello\nline two\n"})
		archive := fromAndEval(t, mainSession(t, run.rec), map[string]int{"exec_command": 3})
		for _, want := range []string{
			"agent: codex\n",
			"recorded on the wire by retrace mock serve --record",
			// The workdir the recorded call gave is the scenario's workspace.
			`input: {"cmd":"wc -l notes.txt","workdir":"."}`,
			"-- workspace/notes.txt --\nhello\nline two\n",
			`{failure: "tool_error", tool: "exec_command", count: 1}`,
		} {
			if !strings.Contains(archive, want) {
				t.Errorf("the scenario lacks %q:\n%s", want, archive)
			}
		}
	})
}

// fromAndEval makes the scenario of the recording, runs it with retrace
// eval and its real client, and returns the scenario's text after
// checking that it passed and that its run made calls per tool.
func fromAndEval(t *testing.T, recording string, calls map[string]int) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "from_client.txtar")
	if code, stdout, stderr := runCLI(t, nil, "scenario", "from", recording, "-o", file); code != ExitOK {
		t.Fatalf("scenario from: exit %d\n%s%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runCLI(t, nil, "eval", file, "--format", "json", "--out", out, "--require-agents", "--require-isolation")
	if code != ExitOK {
		t.Fatalf("retrace eval of the scenario: exit %d\n%s\n%s\n%s", code, stdout, stderr, data)
	}
	var res results.Results
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("eval --format json: %v\n%s", err, stdout)
	}
	if len(res.Scenarios) != 1 || res.Scenarios[0].Verdict != results.VerdictPass {
		t.Fatalf("want one passing scenario, got %+v", res.Scenarios)
	}
	if len(res.Scenarios[0].Runs) != 1 || len(res.Scenarios[0].Runs[0].Warnings) > 0 {
		t.Fatalf("want one run without warnings (a run in a network namespace), got %+v", res.Scenarios[0].Runs)
	}
	// The run's main session made the recorded calls.
	got := map[string]int{}
	evs, err := trajectory.ReadFile(res.Scenarios[0].Runs[0].Trajectory)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if p, ok := ev.Payload.(*trajectory.ToolCall); ok {
			got[p.Tool]++
		}
	}
	for tool, n := range calls {
		if got[tool] != n {
			t.Errorf("the replayed session called %s %d times, want %d (all: %v)", tool, got[tool], n, got)
		}
	}
	return string(data)
}

// mainSession is the one trajectory in dir that is no subagent's.
func mainSession(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var mains []string
	for _, f := range files {
		evs, err := trajectory.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if start, ok := evs[0].Payload.(*trajectory.SessionStart); ok && start.ParentSession == "" {
			mains = append(mains, f)
		}
	}
	if len(mains) != 1 {
		t.Fatalf("%s holds %d main sessions, want 1: %v", dir, len(mains), mains)
	}
	return mains[0]
}
