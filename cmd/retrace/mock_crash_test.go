package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/retrace-dev/retrace/trajectory"
)

var mockCrashTrials = flag.Int("mock.crash.trials", 3, "SIGKILL trials of TestMockServeRecordKeepsEveryReceivedReplyWhenKilled (raise it, e.g. to 100, for a long run)")

// mockHelperEnv carries the command line of TestMockServeHelperProcess,
// one argument a line.
const mockHelperEnv = "RETRACE_MOCK_HELPER_ARGS"

// TestMockServeHelperProcess is not a test: it runs retrace's CLI (the
// same code as the built binary) in a child process that a test can kill.
func TestMockServeHelperProcess(t *testing.T) {
	args := os.Getenv(mockHelperEnv)
	if args == "" {
		t.Skip("runs only as the child process of the mock serve crash test")
	}
	sys := &IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Getenv: os.Getenv, Now: time.Now}
	os.Exit(int(run(sys, strings.Split(args, "\n"))))
}

// startMockServeProcess starts `retrace mock serve args...` in a child
// process and returns it with the URL it printed.
func startMockServeProcess(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestMockServeHelperProcess$")
	cmd.Env = append(os.Environ(), mockHelperEnv+"="+strings.Join(append([]string{"mock", "serve"}, args...), "\n"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "mock LLM listening on ")
	if err != nil || !ok {
		t.Fatalf("mock serve printed %q (%v); stderr:\n%s", line, err, stderr.String())
	}
	go func() { _, _ = bufio.NewReader(out).WriteTo(discard{}) }()
	return cmd, url
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// longScript writes a script of n tool-calling turns and a final answer,
// each tool_use with its own id.
func longScript(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("turns:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - content:\n      - text: \"Step %d.\"\n      - tool_use: {id: toolu_%d, name: read, input: {file_path: f%d.txt}}\n", i, i, i)
	}
	b.WriteString("  - content: [{text: \"Done.\"}]\n")
	path := filepath.Join(t.TempDir(), "long.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// converse drives a tool-calling conversation with the official Anthropic
// SDK, alternating streamed and JSON replies, until the server stops
// answering. It reports the tool_use id of every reply it received whole.
func converse(url string, received func(id string)) {
	c := anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey("test-key"), option.WithMaxRetries(0),
		option.WithRequestTimeout(10*time.Second))
	read := anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: "read",
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"file_path": map[string]any{"type": "string"}}}}}
	params := anthropic.MessageNewParams{Model: "claude-x", MaxTokens: 1024, Tools: []anthropic.ToolUnionParam{read},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("read the files"))}}
	for turn := 0; ; turn++ {
		var msg anthropic.Message
		if turn%2 == 0 {
			s := c.Messages.NewStreaming(context.Background(), params)
			for s.Next() {
				if err := msg.Accumulate(s.Current()); err != nil {
					return
				}
			}
			if s.Err() != nil {
				return
			}
		} else {
			m, err := c.Messages.New(context.Background(), params)
			if err != nil {
				return
			}
			msg = *m
		}
		var results []anthropic.ContentBlockParamUnion
		for _, b := range msg.Content {
			if b.Type == "tool_use" {
				received(b.ID)
				results = append(results, anthropic.NewToolResultBlock(b.ID, "contents of "+b.ID, false))
			}
		}
		if len(results) == 0 {
			received("final")
			return
		}
		params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(results...))
	}
}

func TestMockServeRecordKeepsEveryReceivedReplyWhenKilled(t *testing.T) {
	script := longScript(t, 400)
	for trial := range *mockCrashTrials {
		t.Run(fmt.Sprintf("trial %d", trial+1), func(t *testing.T) {
			runs := t.TempDir()
			cmd, url := startMockServeProcess(t, "--script", script, "--record", runs)
			var mu sync.Mutex
			var got []string
			progress := make(chan struct{}, 1000)
			done := make(chan struct{})
			go func() {
				defer close(done)
				converse(url, func(id string) {
					mu.Lock()
					got = append(got, id)
					mu.Unlock()
					progress <- struct{}{}
				})
			}()
			// Kill after a random number of replies and a random delay, so
			// the kill lands anywhere in a request or a reply.
			replies := 1 + rand.IntN(60)
			for range replies {
				select {
				case <-progress:
				case <-done:
					t.Fatal("the conversation ended before the kill")
				case <-time.After(30 * time.Second):
					t.Fatal("no reply for 30s")
				}
			}
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-done
			_ = cmd.Wait()
			mu.Lock()
			defer mu.Unlock()

			files, err := trajectory.Expand(runs)
			if err != nil || len(files) != 1 {
				t.Fatalf("recorded files %v (%v), want one", files, err)
			}
			rep, err := trajectory.ValidateFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range rep.Problems {
				t.Errorf("killed after %d replies, the file has a problem: %v", len(got), p)
			}
			for _, w := range rep.Warnings {
				if !strings.Contains(w.Msg, "no session_end") && !strings.Contains(w.Msg, "torn") && !strings.Contains(w.Msg, "last line") {
					t.Errorf("unexpected warning: %v", w)
				}
			}
			onDisk := map[string]bool{}
			f, err := os.Open(files[0])
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			dec := trajectory.NewDecoder(f, files[0])
			for {
				ev, err := dec.Next()
				if err != nil {
					break
				}
				if r, ok := ev.Payload.(*trajectory.ModelResponse); ok {
					for _, b := range r.ToolUses() {
						onDisk[b.ID] = true
					}
				}
			}
			for _, id := range got {
				if !onDisk[id] {
					t.Fatalf("the client received the reply with %s but it is not on disk (received %d replies, %d on disk)", id, len(got), len(onDisk))
				}
			}
			if len(onDisk) > len(got)+1 {
				t.Fatalf("%d replies on disk, the client received %d: at most the one being sent may be ahead", len(onDisk), len(got))
			}
		})
	}
}
