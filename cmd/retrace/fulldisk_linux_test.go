package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// mountTmpfs mounts a tmpfs of the given size on a new directory under
// t.TempDir and unmounts it when the test ends. Mounting needs root (or
// CAP_SYS_ADMIN); where it is not allowed the test is skipped, saying so.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a %s tmpfs on %s to fill it up (mounting needs root or CAP_SYS_ADMIN, which CI has): %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fullDiskSession writes a workspace (on the normal disk) whose policy
// allows every command and a script of turns bash calls, each of which
// leaves a marker named for its tool_use id, and returns the arguments of
// a run that records into runs.
func fullDiskSession(t *testing.T, runs string, turns int) (ws string, args []string) {
	t.Helper()
	root := t.TempDir()
	ws = filepath.Join(root, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	configPath := filepath.Join(root, "retrace.yaml")
	if err := os.WriteFile(configPath, []byte("permissions:\n  mode: bypass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	script.WriteString("model: full-disk\nturns:\n")
	for i := 1; i <= turns; i++ {
		// Two calls a turn, in one parallel batch: a failure may fall
		// between a batch's tool_calls and its tools.
		fmt.Fprintf(&script, "  - content:\n")
		for _, side := range []string{"a", "b"} {
			id := fmt.Sprintf("toolu_%03d%s", i, side)
			fmt.Fprintf(&script, "      - tool_use: {id: %s, name: bash, input: {command: %q}}\n", id, "touch m/"+id+"; echo "+strings.Repeat("output ", 40))
		}
	}
	script.WriteString("  - content:\n      - text: \"done\"\n")
	scriptPath := filepath.Join(root, "script.yaml")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws, []string{"run", "--script", scriptPath, "--config", configPath, "--workspace", ws, "--runs", runs,
		"--headless", "--max-turns", fmt.Sprint(turns + 5), "Touch the markers."}
}

// TestRunStopsWhenTheDiskFillsUp runs a long session recording onto a
// small tmpfs: the disk fills up mid-session, and the run must stop there,
// with no tool run without its tool_call on disk, and exit 1 naming the
// file and the error.
func TestRunStopsWhenTheDiskFillsUp(t *testing.T) {
	const turns = 200
	runs := mountTmpfs(t, "96k")
	ws, args := fullDiskSession(t, runs, turns)
	code, _, stderr := runCLI(t, nil, args...)
	if code != ExitHarness {
		t.Fatalf("exit %d, want %d (harness error); stderr:\n%s", code, ExitHarness, tail(stderr))
	}
	d := readKilled(t, runs)
	if d == nil {
		t.Fatalf("no trajectory in %s; stderr:\n%s", runs, tail(stderr))
	}
	if !strings.Contains(stderr, "no space left on device") || !strings.Contains(stderr, d.path) || !strings.Contains(stderr, "record_failed") {
		t.Errorf("stderr does not name the file %s, the error and the end reason:\n%s", d.path, tail(stderr))
	}
	ran := markers(t, ws)
	if len(ran) == 0 || len(ran) >= 2*turns {
		t.Fatalf("%d of %d calls ran: the disk should fill up mid-session", len(ran), 2*turns)
	}
	for _, id := range ran {
		if !d.calls[id] {
			t.Errorf("%s ran without its tool_call on disk", id)
		}
	}
	t.Logf("%d of %d calls ran before the disk filled up; %d events on disk (torn last line: %v)", len(ran), 2*turns, len(d.events), d.torn)
}

// TestRunOnAFullDiskRunsNothing records onto a tmpfs that is full before
// the session starts: nothing runs, no trajectory path is printed (there
// is no file), and the run exits 1 naming the error.
func TestRunOnAFullDiskRunsNothing(t *testing.T) {
	runs := mountTmpfs(t, "64k")
	fill(t, filepath.Join(runs, "filler"))
	ws, args := fullDiskSession(t, runs, 5)
	code, _, stderr := runCLI(t, nil, args...)
	if code != ExitHarness {
		t.Fatalf("exit %d, want %d (harness error); stderr:\n%s", code, ExitHarness, tail(stderr))
	}
	if ran := markers(t, ws); len(ran) > 0 {
		t.Errorf("calls ran on a full disk: %q", ran)
	}
	files, _ := filepath.Glob(filepath.Join(runs, "*"+".jsonl"))
	if len(files) > 0 {
		t.Errorf("trajectory files on a full disk: %q", files)
	}
	if !strings.Contains(stderr, "no space left on device") || !strings.Contains(stderr, "trajectory: none written") {
		t.Errorf("stderr does not name the error, or names no file:\n%s", tail(stderr))
	}
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "trajectory: ") && line != "trajectory: none written" {
			t.Errorf("a trajectory path is printed for a file that does not exist: %q", line)
		}
	}
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !strings.Contains(err.Error(), "no space left") {
				t.Fatalf("filling %s: %v", path, err)
			}
			return
		}
	}
}

// TestMockServeRecordOnAFullDiskAnswersWithAnError records a client's
// calls onto a small tmpfs until it is full: every reply the client got
// is on disk, and from the failure on every call is answered with an
// error naming it, which the server logs as it happens.
func TestMockServeRecordOnAFullDiskAnswersWithAnError(t *testing.T) {
	dir := mountTmpfs(t, "64k")
	script := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(script, []byte("repeat: true\nturns:\n  - content: [{text: \"ok\"}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := serveCLI(t, "--script", script, "--record", dir)
	served, refused := 0, 0
	for i := range 100 {
		// A growing conversation: each request adds a 2 KB message.
		var msgs []string
		for j := 0; j <= i; j++ {
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"message %d %s"}`, j, strings.Repeat("x", 2000)), `{"role":"assistant","content":"ok"}`)
		}
		body := fmt.Sprintf(`{"model":"m","max_tokens":5,"messages":[%s]}`, strings.Join(msgs[:len(msgs)-1], ","))
		res, err := http.Post(m.url+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		reply, _ := io.ReadAll(res.Body)
		res.Body.Close()
		switch {
		case res.StatusCode == http.StatusOK && refused == 0:
			served++
		case res.StatusCode == http.StatusInternalServerError && strings.Contains(string(reply), "no space left on device"):
			refused++
		default:
			t.Fatalf("call %d: status %d after %d served and %d refused: %s", i, res.StatusCode, served, refused, reply)
		}
	}
	if served == 0 || refused == 0 {
		t.Fatalf("%d served, %d refused: the disk should fill up in between", served, refused)
	}
	if !strings.Contains(m.stderr.String(), "no space left on device; the client gets an error") {
		t.Errorf("the server did not log the failure:\n%s", tail(m.stderr.String()))
	}
	m.stop(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*"+trajectory.Ext))
	if len(files) != 1 {
		t.Fatalf("want one trajectory, got %q", files)
	}
	events, err := trajectory.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	responses := 0
	for _, ev := range events {
		if ev.Type() == trajectory.TypeModelResponse {
			responses++
		}
	}
	if responses != served {
		t.Errorf("%d replies served, %d model_responses on disk: every reply served must be recorded", served, responses)
	}
	t.Logf("%d calls served and recorded, then %d refused", served, refused)
}
