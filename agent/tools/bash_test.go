package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestBashResults(t *testing.T) {
	cases := []struct {
		name    string
		command string
		output  string
		code    string // "" for success
	}{
		{"stdout and stderr are combined in the order written", "echo out; echo err >&2; echo out2", "out\nerr\nout2\n", ""},
		{"a non-zero exit is a tool error with the status as code and trailer", "echo partial; exit 3", "partial\nexit status 3", "exit:3"},
		{"a failure without output still names the exit status", "false", "exit status 1", "exit:1"},
		{"a command killed by a signal names the signal", "echo before; kill -TERM $$", "before\nkilled by signal SIGTERM", "signal:SIGTERM"},
		{"stdin is empty, so a command reading it ends at once", "cat; echo after", "after\n", ""},
		{"a command with no output succeeds with empty output", "true", "", ""},
		{"output without a final newline gets one before the trailer", "printf x; exit 2", "x\nexit status 2", "exit:2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestEnv(t)
			res := run(t, BashTool{}, env, bashInput{Command: tc.command})
			if res.Output != tc.output {
				t.Errorf("output = %q, want %q", res.Output, tc.output)
			}
			if res.IsError != (tc.code != "") || res.ErrorCode != tc.code {
				t.Errorf("IsError=%v ErrorCode=%q, want code %q", res.IsError, res.ErrorCode, tc.code)
			}
		})
	}
}

func TestBashRunsInTheWorkspace(t *testing.T) {
	env := newTestEnv(t)
	res := run(t, BashTool{}, env, bashInput{Command: "pwd; echo hi > made.txt"})
	if strings.TrimSpace(res.Output) != env.Workspace() {
		t.Errorf("pwd = %q, want %q", res.Output, env.Workspace())
	}
	if got := readBack(t, filepath.Join(env.Workspace(), "made.txt")); got != "hi\n" {
		t.Errorf("made.txt = %q", got)
	}
}

// processGone reports whether pid has exited (a zombie counts as gone:
// it runs no more), waiting a while for the kernel to finish the kill.
func processGone(pid int) bool {
	for range 200 {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		// The state follows the parenthesised command name.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// waitForFile waits until the command under test wrote path, and returns
// its content.
func waitForFile(t *testing.T, path string) string {
	t.Helper()
	for range 500 {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			return string(b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s was never written", path)
	return ""
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(waitForFile(t, path)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

func TestBashTimeoutKillsTheWholeProcessGroup(t *testing.T) {
	env := newTestEnv(t)
	input := mustJSON(t, bashInput{Command: "echo started; sleep 30 & echo $! > child.pid; wait", Timeout: 300})
	res, err := BashTool{}.Run(context.Background(), env, input)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want one that errors.Is DeadlineExceeded", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("a timeout also matches Canceled, so the executor could not tell it from an abort")
	}
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("err %T is not a *TimeoutError", err)
	}
	if te.After != 300*time.Millisecond || !strings.Contains(te.Output, "started") {
		t.Errorf("TimeoutError = %+v, want After 300ms and the output so far", te)
	}
	if res.Output != "started\n" || res.IsError || res.Modify != nil {
		t.Errorf("Result = %+v, want only the partial output next to the error", res)
	}
	child := readPID(t, filepath.Join(env.Workspace(), "child.pid"))
	if !processGone(child) {
		t.Errorf("the sleep child %d survived the timeout", child)
	}
}

func TestBashCancellationKillsTheGroupAndReportsCanceled(t *testing.T) {
	env := newTestEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := BashTool{}.Run(ctx, env, mustJSON(t, bashInput{Command: "sleep 30 & echo $! > child.pid; wait"}))
		done <- outcome{res, err}
	}()
	child := readPID(t, filepath.Join(env.Workspace(), "child.pid"))
	cancel()
	got := <-done
	if !errors.Is(got.err, context.Canceled) {
		t.Fatalf("err = %v, want one that errors.Is Canceled", got.err)
	}
	var te *TimeoutError
	if errors.As(got.err, &te) {
		t.Errorf("a cancellation is reported as the tool's own timeout")
	}
	if !processGone(child) {
		t.Errorf("the sleep child %d survived the cancellation", child)
	}
}

func TestBashDoesNotWaitForBackgroundChildren(t *testing.T) {
	env := newTestEnv(t)
	// If Run waited for the child that holds the output pipe, it would hit
	// the 60 s timeout and return an error instead of the result.
	input := mustJSON(t, bashInput{Command: "sleep 100 & echo $! > bg.pid; echo done", Timeout: 60_000})
	res, err := BashTool{}.Run(context.Background(), env, input)
	if err != nil {
		t.Fatalf("Run waited for the background child: %v", err)
	}
	readPID(t, filepath.Join(env.Workspace(), "bg.pid"))
	if res.IsError || res.Output != "done\n" {
		t.Errorf("result = %+v, want done", res)
	}
}

func TestBashConcurrencySafetyFollowsTheCommand(t *testing.T) {
	cases := map[string]struct {
		input string
		safe  bool
	}{
		"a read-only pipeline may run in parallel":  {`{"command":"ls -la && wc -l *.go"}`, true},
		"git status may run in parallel":            {`{"command":"git status"}`, true},
		"a redirection writes a file":               {`{"command":"cat a.go > b.go"}`, false},
		"git commit changes the repository":         {`{"command":"git commit -m x"}`, false},
		"piping into sh can do anything":            {`{"command":"curl http://x | sh"}`, false},
		"input that does not decode is not safe":    {`{"command":1}`, false},
		"an empty command is not safe":              {`{"command":""}`, false},
		"a command that does not parse is not safe": {`{"command":"echo 'unterminated"}`, false},
		"input that is not JSON at all is not safe": {`ls`, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := (BashTool{}).ConcurrencySafe([]byte(tc.input)); got != tc.safe {
				t.Errorf("ConcurrencySafe(%s) = %v, want %v", tc.input, got, tc.safe)
			}
		})
	}
	if got := (BashTool{}).Command([]byte(`{"command":"rm -rf x"}`)); got != "rm -rf x" {
		t.Errorf("Command = %q", got)
	}
	if got := (BashTool{}).Command([]byte(`nope`)); got != "" {
		t.Errorf("Command of bad input = %q, want empty", got)
	}
}

func TestCaptureWriterKeepsHeadAndTail(t *testing.T) {
	w := &captureWriter{max: 10}
	for _, chunk := range []string{"abc", "defgh", "ijklmnop", "qrstuvwxyz"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	want := "abcde\n… [16 bytes of output dropped] …\nvwxyz"
	if got := w.String(); got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	small := &captureWriter{max: 100}
	_, _ = small.Write([]byte("short"))
	if got := small.String(); got != "short" {
		t.Errorf("String of a short output = %q", got)
	}
}
