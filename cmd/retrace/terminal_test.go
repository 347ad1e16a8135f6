package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/trajectory"
)

// hostile is what a model or a tool may write to take over the terminal
// or a CI log: clear the screen, set the title (an OSC ended by BEL),
// overwrite a line with CR, a C1 CSI, a bidi override, and a GitHub
// workflow command on a line of its own.
const hostile = "\x1b[2J\x1b]0;owned\x07\rhidden\n::error file=x::owned\n\u009b2J \u202egnp.exe"

// wantSafeForTerminal fails when out holds anything a terminal or a
// workflow runner would obey.
func wantSafeForTerminal(t *testing.T, where, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\r", "\x07", "\u009b", "\u202e"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s: %q reaches the terminal:\n%s", where, bad, out)
		}
	}
	if !utf8.ValidString(out) {
		t.Errorf("%s: not UTF-8", where)
	}
	for _, line := range strings.Split(out, "\n") {
		if l := strings.TrimLeft(line, " \t"); strings.HasPrefix(l, "::") && !strings.HasPrefix(l, "::warning file=") && !strings.HasPrefix(l, "::error file=") && !strings.HasPrefix(l, "::notice file=") || strings.HasPrefix(l, "::error file=x") {
			t.Errorf("%s: a line that a model wrote starts a workflow command: %q", where, line)
		}
	}
}

// hostileSession records a session whose model reply, tool name, tool
// input and tool output are hostile, and returns the runs directory and
// what retrace run printed.
func hostileSession(t *testing.T) (runs, stdout, stderr string) {
	t.Helper()
	ws, outside := t.TempDir(), t.TempDir()
	runs = t.TempDir()
	plantFile(t, filepath.Join(ws, "README.md"), "# service\n")
	script := filepath.Join(outside, "script.yaml")
	plantFile(t, script, fmt.Sprintf(`model: mock-1
turns:
  - content:
      - text: %q
      - tool_use: {id: toolu_1, name: bash, input: {command: %q}}
      - tool_use: {id: toolu_2, name: %q, input: {path: %q}}
  - content:
      - text: %q
`, "Working. "+hostile, `printf '\033[2J\033]0;owned\007\r::error::from the tool\n'`, "ev<img src=x>il\x1b[2J", hostile, "Done. "+hostile))
	cfg := filepath.Join(outside, "retrace.yaml")
	plantFile(t, cfg, "permissions:\n  mode: bypass\n")
	code, stdout, stderr := runCLI(t, nil, "run", "--script", script, "--config", cfg, "--workspace", ws, "--runs", runs, "--headless", "Do the task")
	if code != ExitOK {
		t.Fatalf("run: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
	return runs, stdout, stderr
}

// Every printer of what a model or tool wrote — the live transcript of
// run, detect's table, Markdown and GitHub annotations, query's table,
// CSV and Markdown, and replay — shows it escaped.
func TestHostileModelOutputReachesNoTerminalRaw(t *testing.T) {
	runs, stdout, stderr := hostileSession(t)
	wantSafeForTerminal(t, "run stdout", stdout)
	wantSafeForTerminal(t, "run transcript", stderr)
	// The text is shown, escaped, not dropped.
	for _, want := range []string{`Working. \x1b[2J\x1b]0;owned\x07 hidden ::error file=x::owned \u009b2J \u202egnp.exe`, `⎿ \x1b[2J\x1b]0;owned\x07 ::error::from the tool`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the transcript lacks %q:\n%s", want, stderr)
		}
	}

	files, err := trajectory.Expand(runs)
	if err != nil || len(files) != 1 {
		t.Fatalf("trajectories %v, %v", files, err)
	}
	raw, _ := os.ReadFile(files[0])
	if !strings.Contains(string(raw), `\u001b[2J`) {
		t.Fatal("the hostile text is not in the trajectory: the test would prove nothing")
	}

	for _, format := range []string{"table", "markdown", "github"} {
		_, out, errOut := runCLI(t, nil, "detect", runs, "--format", format)
		wantSafeForTerminal(t, "detect --format "+format, out)
		wantSafeForTerminal(t, "detect --format "+format+" (stderr)", errOut)
		if !strings.Contains(out, "hallucinated_tool") {
			t.Errorf("detect --format %s: no hallucinated_tool finding to show the tool's name:\n%s", format, out)
		}
		if format == "markdown" && (strings.Contains(strings.ReplaceAll(out, `\<img`, ""), "<img") || !strings.Contains(out, `ev\<img src=x\>il`)) {
			t.Errorf("detect --format markdown: the model's HTML is not escaped:\n%s", out)
		}
	}
	for _, format := range []string{"table", "markdown", "csv"} {
		code, out, errOut := runCLI(t, nil, "query", "select tool from tool_calls", runs, "--format", format)
		if code != ExitOK || !strings.Contains(out, "il") {
			t.Fatalf("query --format %s: exit %d\n%s\n%s", format, code, out, errOut)
		}
		wantSafeForTerminal(t, "query --format "+format, out)
	}
	for _, format := range []string{"table", "markdown"} {
		_, out, errOut := runCLI(t, nil, "replay", files[0], "--format", format, "--details", "--out", t.TempDir())
		wantSafeForTerminal(t, "replay --format "+format, out)
		wantSafeForTerminal(t, "replay --format "+format+" (stderr)", errOut)
	}
}

// eval's summary quotes what the session did when an expectation fails:
// a hostile tool name and reply are shown escaped there too.
func TestHostileModelOutputInAnEvalSummaryIsEscaped(t *testing.T) {
	suite := t.TempDir()
	plantFile(t, filepath.Join(suite, "hostile.txtar"), `A scenario whose model writes escape sequences.
-- scenario.yaml --
name: hostile
prompt: Read the README.
model:
  turns:
    - content: [{tool_use: {name: read, input: {file_path: "README\e]0;t\a\u202e\u009b2J.md"}}}]
    - content: [{text: "Done.\e[2J\r\n::error::owned \u202e"}]
expect:
  outcome: {reason: max_turns}
  events:
    - {tool_called: read, input: {file_path: NOTES.md}}
-- workspace/README.md --
A project.
`)
	for _, format := range []string{"table", "markdown"} {
		code, out, errOut := runCLI(t, nil, "eval", suite, "--format", format)
		if code != ExitGate {
			t.Fatalf("eval --format %s: exit %d, want 3\n%s\n%s", format, code, out, errOut)
		}
		if !strings.Contains(out, "hostile") {
			t.Fatalf("eval --format %s: no summary of the scenario:\n%s", format, out)
		}
		want := `\u202e\u009b2J`
		if format == "markdown" {
			// Markdown shows a backslash written as two.
			want = `\\u202e\\u009b2J`
		}
		if !strings.Contains(out, want) {
			t.Errorf("eval --format %s: the model's file_path is not in the summary, escaped:\n%s", format, out)
		}
		wantSafeForTerminal(t, "eval --format "+format, out)
		wantSafeForTerminal(t, "eval --format "+format+" (stderr)", errOut)
	}
}

// An error names what it was given (a file, a flag's value), and a name
// can hold anything: the error line retrace prints is escaped too.
func TestAnErrorNamingAHostilePathReachesNoTerminalRaw(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "a\x1b]0;owned\x07\rb\u202e.jsonl")
	for _, args := range [][]string{{"validate", name}, {"replay", name}, {"metrics", "--no-cache", name}} {
		code, _, stderr := runCLI(t, nil, args...)
		if code != ExitInvalid {
			t.Errorf("%s: exit %d, want %d: %s", args[0], code, ExitInvalid, stderr)
		}
		if !strings.Contains(stderr, `a\x1b]0;owned\x07\rb\u202e.jsonl`) {
			t.Errorf("%s: the error does not name the file, escaped: %q", args[0], stderr)
		}
		wantSafeForTerminal(t, args[0], stderr)
	}
}

// mock serve logs each request with what the client sent: its path, its
// conversation and its model name, any of which may be hostile.
func TestAMockLogLineReachesNoTerminalRaw(t *testing.T) {
	line := mockLogLine(mockllm.Logged{Method: "POST", Path: "/v1/messages" + hostile, Status: 200,
		Endpoint: "anthropic", Conversation: hostile, Request: &llm.Request{Model: "m" + hostile}})
	wantSafeForTerminal(t, "mock serve's log", line)
	if strings.Contains(line, "\n") || !strings.Contains(line, `model=m\x1b[2J`) {
		t.Errorf("the log line is not one line naming the model, escaped: %q", line)
	}
}
