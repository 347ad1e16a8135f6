package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// syncBuffer is a bytes.Buffer the server's goroutines and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMockServePrintsItsURLServesTheScriptAndStopsOnCancel(t *testing.T) {
	var out, errOut syncBuffer
	sys := &IO{In: strings.NewReader(""), Out: &out, Err: &errOut, Getenv: func(string) string { return "" },
		Now: func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	runs := t.TempDir()
	go func() {
		done <- runMockServe(ctx, sys, &mockServeOptions{script: "../../mockllm/testdata/read_then_answer.yaml", addr: "127.0.0.1:0", record: runs})
	}()
	var url string
	for url == "" {
		select {
		case err := <-done:
			t.Fatalf("serve ended early: %v; stderr %s", err, errOut.String())
		default:
		}
		first, _, found := strings.Cut(out.String(), "\n")
		if found {
			var ok bool
			if url, ok = strings.CutPrefix(first, "mock LLM listening on "); !ok {
				t.Fatalf("first line %q does not give the URL", first)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "ANTHROPIC_BASE_URL="+url) || !strings.Contains(out.String(), "OPENAI_BASE_URL="+url+"/v1") {
		t.Fatalf("stdout %q should say how to point the SDKs at the server", out.String())
	}
	res, err := http.Post(url+"/v1/messages", "application/json",
		strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"read README"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "toolu_1") {
		t.Fatalf("status %d body %s", res.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v after cancel, want nil", err)
	}
	logs := errOut.String()
	if !strings.Contains(logs, "12:00:00.000 POST /v1/messages 200 anthropic.messages turn=1 model=m messages=1") {
		t.Fatalf("stderr %q lacks the request line", logs)
	}
	if !strings.Contains(logs, "stopped after 1 request") || !strings.Contains(logs, "turn 2 (line 10) was never requested") {
		t.Fatalf("stderr %q should report the stop and the unused turn", logs)
	}
	// --record: the conversation so far is a valid trajectory, honestly
	// without a session_end because the agent stopped in the middle of a turn.
	files, err := trajectory.Expand(runs)
	if err != nil || len(files) != 1 || !strings.Contains(logs, "trajectory: "+files[0]) || !strings.Contains(logs, "no session_end") {
		t.Fatalf("recorded files %v (%v); stderr %q", files, err, logs)
	}
	rep, err := trajectory.ValidateFile(files[0])
	if err != nil || len(rep.Problems) != 0 || rep.Events != 3 {
		t.Fatalf("recorded trajectory: %d events, problems %v (%v)", rep.Events, rep.Problems, err)
	}
}

func TestMockServeRejectsBadInputWithExitTwo(t *testing.T) {
	dir := t.TempDir()
	bad := dir + "/bad.yaml"
	if err := os.WriteFile(bad, []byte("turns:\n  - content: [{text: hi}]\n    stop_reason: finished\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"an invalid script is reported as file:line", []string{"mock", "serve", "--script", bad}, bad + ":3: turn 1: stop_reason \"finished\""},
		{"a missing script is reported", []string{"mock", "serve", "--script", dir + "/none.yaml"}, "no such file"},
		{"no script and no replay is a usage error", []string{"mock", "serve"}, "exactly one of --script FILE or --from RUN.jsonl"},
		{"an unknown flag is a usage error", []string{"mock", "serve", "--scrpit", bad}, "unknown flag"},
		{"a zero timeout is a usage error", []string{"mock", "serve", "--script", bad, "--read-timeout", "0"}, "--read-timeout 0s: give a positive duration"},
		{"a negative timeout is a usage error", []string{"mock", "serve", "--script", bad, "--idle-timeout=-1s"}, "--idle-timeout -1s: give a positive duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, c.args...)
			if code != ExitInvalid || stdout != "" || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d stdout %q stderr %q, want 2 and %q", code, stdout, stderr, c.want)
			}
		})
	}
}

func TestMockServeHelpTeachesTheScriptFormat(t *testing.T) {
	code, stdout, _ := runCLI(t, nil, "mock", "serve", "--help")
	for _, want := range []string{"tool_use:", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "fault:", "--addr"} {
		if code != ExitOK || !strings.Contains(stdout, want) {
			t.Fatalf("help (exit %d) lacks %q:\n%s", code, want, stdout)
		}
	}
}
