package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/replay"
	"github.com/retrace-dev/retrace/trajectory"
)

// volatileScript reads a file and, when volatile, prints a random nonce of
// letters g–z (no digits or hex, so no built-in normalisation rule takes it
// away), which differs on every run.
func volatileScript(volatile bool) string {
	cmd := "cat notes.txt"
	if volatile {
		cmd = "printf 'nonce: %s\\n' $(tr -dc g-z </dev/urandom | head -c 16)"
	}
	return fmt.Sprintf("turns:\n  - content: [{tool_use: {id: toolu_1, name: bash, input: {command: %q}}}]\n  - content: [{text: done}]\n", cmd)
}

// recordSessions records n sessions with retrace run and a scripted model
// into one directory; the sessions whose index is in volatile print a
// random nonce. Each workspace allows bash (bypass mode) and is trusted,
// as the replays trust the recordings.
func recordSessions(t *testing.T, n int, volatile map[int]bool) string {
	t.Helper()
	runs := filepath.Join(t.TempDir(), "runs")
	for i := range n {
		ws := t.TempDir()
		write(t, filepath.Join(ws, "notes.txt"), fmt.Sprintf("notes of session %d\n", i))
		write(t, filepath.Join(ws, "retrace.yaml"), "permissions:\n  mode: bypass\n")
		script := write(t, filepath.Join(t.TempDir(), "script.yaml"), volatileScript(volatile[i]))
		code, _, stderr := runCLI(t, map[string]string{"RETRACE_DIR": runs}, "run", "--script", script, "--workspace", ws,
			"--trust-workspace", "--headless", "Read the notes.")
		if code != ExitOK {
			t.Fatalf("record session %d: exit %d\n%s", i, code, stderr)
		}
	}
	return runs
}

// The acceptance scenario of batch replay: a directory of 20 recordings,
// two of which print volatile output, diverges in exactly those two (exit 3
// with --strict, the summary names them), and replays identically once a
// normalisation rule covers the volatile part.
func TestABatchOfTwentyWithTwoVolatileSessionsExitsThreeAndZeroWithNormalisation(t *testing.T) {
	runs := recordSessions(t, 20, map[int]bool{4: true, 13: true})
	files, err := trajectory.Expand(runs)
	if err != nil || len(files) != 20 {
		t.Fatalf("recordings %d (%v)", len(files), err)
	}
	volatileFiles := map[string]bool{}
	for _, f := range files {
		if data, _ := os.ReadFile(f); strings.Contains(string(data), "nonce: ") {
			volatileFiles[f] = true
		}
	}
	if len(volatileFiles) != 2 {
		t.Fatalf("%d recordings print a nonce, want 2", len(volatileFiles))
	}

	code, stdout, stderr := runCLI(t, nil, "replay", runs, "--strict", "--trust-recording", "--out", t.TempDir(), "-j", "2")
	if code != ExitGate {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "20 recordings: 18 identical, 2 diverged, 0 failed") ||
		!strings.Contains(stdout, "divergence classes: tool_output_changed 2") {
		t.Fatalf("the summary lacks the totals or the classes:\n%s", stdout)
	}
	for f := range volatileFiles {
		if !strings.Contains(stdout, f) || !lineWith(stdout, f, "diverged") {
			t.Fatalf("the summary does not list %s as diverged:\n%s", f, stdout)
		}
	}

	// The same batch as JSON: every session with its verdict.
	code, stdout, _ = runCLI(t, nil, "replay", runs, "--trust-recording", "--out", t.TempDir(), "--format", "json")
	var sum replay.BatchSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || code != ExitOK {
		t.Fatalf("exit %d (want 0 without --strict), json %v\n%s", code, err, stdout)
	}
	for _, s := range sum.Sessions {
		if want := map[bool]replay.Verdict{true: replay.VerdictDiverged, false: replay.VerdictIdentical}[volatileFiles[s.Recording]]; s.Verdict != want {
			t.Fatalf("%s: %s, want %s", s.Recording, s.Verdict, want)
		}
	}

	// With a rule that covers the nonce, the batch is identical.
	code, stdout, stderr = runCLI(t, nil, "replay", runs, "--strict", "--trust-recording", "--out", t.TempDir(),
		"--normalize", `nonce: [g-z]+=>nonce: <n>`)
	if code != ExitOK || !strings.Contains(stdout, "20 recordings: 20 identical, 0 diverged, 0 failed") {
		t.Fatalf("with --normalize: exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}
}

// lineWith reports whether some line of s contains every one of parts.
func lineWith(s string, parts ...string) bool {
	for _, l := range strings.Split(s, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

func TestBatchReplayOfBadInputSaysWhatToDoAndExitsTwo(t *testing.T) {
	runs := recordSessions(t, 2, nil)
	empty := t.TempDir()
	withJunk := t.TempDir()
	for _, f := range mustExpand(t, runs) {
		copyRecording(t, f, withJunk)
	}
	write(t, filepath.Join(withJunk, "junk.jsonl"), "this is not a trajectory\n")
	mock := t.TempDir()
	copyRecording(t, mustMockRecording(t), mock)
	ws := t.TempDir()
	cases := []struct {
		name       string
		args       []string
		code       ExitCode
		out, inErr string
	}{
		{"a directory with no recordings is bad input", []string{"replay", empty}, ExitInvalid, "", "holds no .jsonl files"},
		{"a directory with one file that is not a trajectory lists it as failed and exits 2 after replaying the others",
			[]string{"replay", withJunk, "--trust-recording"}, ExitInvalid, "3 recordings: 2 identical, 0 diverged, 1 failed", ""},
		{"a recording of mock serve is named as not replayable here, with what to use instead",
			[]string{"replay", mock}, ExitInvalid, "not replayable here", ""},
		{"--workspace is refused for a batch", []string{"replay", runs, "--workspace", ws}, ExitInvalid, "", "its own temporary workspace"},
		{"a bad --config says what is wrong", []string{"replay", runs, "--config", write(t, filepath.Join(t.TempDir(), "bad.yaml"), "permissions: {mode: yolo}\n")},
			ExitInvalid, "", "fix the file or leave --config out"},
		{"-j 0 is a usage error", []string{"replay", runs, "-j", "0"}, ExitInvalid, "", "at least 1"},
		{"a pattern that matches nothing is bad input", []string{"replay", filepath.Join(empty, "*.jsonl")}, ExitInvalid, "", "matched no files"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append(c.args, "--out", t.TempDir())
			code, stdout, stderr := runCLI(t, nil, args...)
			if code != c.code || !strings.Contains(stdout, c.out) || !strings.Contains(stderr, c.inErr) {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, c.code, stdout, stderr)
			}
		})
	}
}

// Replay's temporary workspaces are removed after a batch, whatever the
// verdicts.
func TestBatchReplayRemovesItsTemporaryWorkspaces(t *testing.T) {
	runs := recordSessions(t, 3, map[int]bool{1: true})
	code, stdout, _ := runCLI(t, nil, "replay", runs, "--trust-recording", "--out", t.TempDir(), "--format", "json")
	var sum replay.BatchSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || code != ExitOK || len(sum.Sessions) != 3 {
		t.Fatalf("exit %d %v\n%s", code, err, stdout)
	}
	for _, s := range sum.Sessions {
		if s.Workspace != "" {
			t.Fatalf("%s: the workspace %s was kept without --keep", s.Recording, s.Workspace)
		}
	}
	code, stdout, stderr := runCLI(t, nil, "replay", runs, "--trust-recording", "--out", t.TempDir(), "--format", "json", "--keep")
	sum = replay.BatchSummary{}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || code != ExitOK {
		t.Fatalf("exit %d %v\n%s", code, err, stdout)
	}
	for _, s := range sum.Sessions {
		if s.Workspace == "" || !exists(filepath.Join(s.Workspace, "notes.txt")) || !strings.Contains(stderr, "kept: "+s.Workspace) {
			t.Fatalf("%s: --keep did not keep the workspace %q\n%s", s.Recording, s.Workspace, stderr)
		}
		os.RemoveAll(s.Workspace)
	}
}

func mustExpand(t *testing.T, dir string) []string {
	t.Helper()
	files, err := trajectory.Expand(dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// copyRecording copies a recording and its blobs into dir.
func copyRecording(t *testing.T, rec, dir string) {
	t.Helper()
	if err := os.CopyFS(filepath.Join(dir, strings.TrimSuffix(filepath.Base(rec), ".jsonl")+".blobs"), os.DirFS(strings.TrimSuffix(rec, ".jsonl")+".blobs")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, filepath.Base(rec)), string(data))
}

// mustMockRecording records one exchange through retrace mock serve
// --record and returns the trajectory.
func mustMockRecording(t *testing.T) string {
	t.Helper()
	runs := t.TempDir()
	var stderr syncBuffer
	m := serveMock(t, &mockServeOptions{script: "../../mockllm/testdata/read_then_answer.yaml", addr: "127.0.0.1:0", record: runs}, &stderr)
	res, err := http.Post(m.url+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"read README"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	m.stop(t)
	files := mustExpand(t, runs)
	if len(files) != 1 {
		t.Fatalf("mock serve recorded %v\n%s", files, stderr.String())
	}
	return files[0]
}

// On a terminal a batch shows its progress on stderr, and clears the line
// when it is done; piped, stderr gets no progress (see the other tests).
func TestBatchReplayShowsProgressOnATerminal(t *testing.T) {
	runs := recordSessions(t, 2, nil)
	ptmx, tty := openPty(t)
	screen := &ptyOutput{}
	go func() { _, _ = copyUntilClosed(screen, ptmx) }()
	var stdout bytes.Buffer
	sys := &IO{In: strings.NewReader(""), Out: &stdout, Err: tty, Getenv: func(string) string { return "" }, Now: fixedClock}
	if code := run(sys, []string{"replay", runs, "--trust-recording", "--out", t.TempDir()}); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stdout.String())
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(screen.String(), "replays: "); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal shows %q", screen.String())
		}
	}
	// The line is throttled, so it may skip a step; each replay is listed
	// above it as it ends, and it is erased (a carriage return and ESC [ K)
	// before the summary.
	if s := screen.String(); !strings.Contains(s, "\rreplay: ") || !strings.Contains(s, "/2, ") ||
		strings.Count(s, "identical  ") != 2 || !strings.Contains(s, "\r\x1b[Kreplays: ") {
		t.Fatalf("the terminal shows %q, want the progress, the replays listed and the line erased", s)
	}
	if strings.Contains(stdout.String(), "replay: ") {
		t.Fatalf("progress went to stdout:\n%s", stdout.String())
	}
}
