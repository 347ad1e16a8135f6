package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/retrace-dev/retrace/trajectory"
)

const subagentScript = "../../mockllm/testdata/subagent_conversations.yaml"

// cliServer is `retrace mock serve ARGS...` run through the command tree
// in this process, until stop interrupts it as Ctrl-C would.
type cliServer struct {
	url    string
	stderr *syncBuffer
	cancel context.CancelFunc
	done   chan ExitCode
}

func serveCLI(t *testing.T, args ...string) *cliServer {
	t.Helper()
	var out syncBuffer
	m := &cliServer{stderr: &syncBuffer{}, done: make(chan ExitCode, 1)}
	sys := &IO{In: strings.NewReader(""), Out: &out, Err: m.stderr, Getenv: func(string) string { return "" }, Now: time.Now}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	t.Cleanup(cancel)
	root := newRootCmd(sys)
	root.SetArgs(append([]string{"mock", "serve", "--addr", "127.0.0.1:0"}, args...))
	go func() { m.done <- exitCodeOf(root.ExecuteContext(ctx)) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		select {
		case code := <-m.done:
			t.Fatalf("mock serve %v ended early with exit %d: %s", args, code, m.stderr.String())
		default:
		}
		if first, _, ok := strings.Cut(out.String(), "\n"); ok {
			m.url = strings.TrimPrefix(first, "mock LLM listening on ")
			return m
		}
		if time.Now().After(deadline) {
			t.Fatal("mock serve printed no URL within 10s")
		}
	}
}

// stop interrupts the server and returns its exit code.
func (m *cliServer) stop(t *testing.T) ExitCode {
	t.Helper()
	m.cancel()
	select {
	case code := <-m.done:
		return code
	case <-time.After(30 * time.Second):
		t.Fatal("mock serve did not stop within 30s of the interrupt")
		return 0
	}
}

// exitCodeOf maps a command's error to its exit code, as run does.
func exitCodeOf(err error) ExitCode {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitHarness
}

// conv is one conversation of a Claude-Code-style client (see
// mockllm's conversation_test.go): it answers every tool_use with a result
// whose duration and timestamp change with run, until the model ends.
type conv struct {
	system string
	run    int
	msgs   []anthropic.MessageParam
	stream bool
	got    []string
	done   bool
}

func mainConv(run int) *conv {
	return &conv{run: run, system: fmt.Sprintf("You are Claude Code, Anthropic's official CLI for Claude.\nToday's date is 2026-12-%02d.", 1+run),
		msgs: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Fix the failing test in parse_test.go"))}}
}

func subConv(run int) *conv {
	return &conv{run: run, stream: true, system: fmt.Sprintf("You are a file search specialist for Claude Code.\nToday's date is 2026-12-%02d.", 1+run),
		msgs: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Find where ParseDate is tested"))}}
}

func (a *conv) step(c anthropic.Client) error {
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 4096,
		System: []anthropic.TextBlockParam{{Text: a.system}}, Messages: a.msgs}
	var msg anthropic.Message
	if a.stream {
		s := c.Messages.NewStreaming(context.Background(), params)
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				return err
			}
		}
		if err := s.Err(); err != nil {
			return err
		}
	} else {
		m, err := c.Messages.New(context.Background(), params)
		if err != nil {
			return err
		}
		msg = *m
	}
	a.stream = !a.stream
	var results []anthropic.ContentBlockParamUnion
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			a.got = append(a.got, "text:"+b.Text)
		case "tool_use":
			a.got = append(a.got, "tool_use:"+b.Name+":"+b.ID)
			results = append(results, anthropic.NewToolResultBlock(b.ID, fmt.Sprintf("done in %dms at 2026-12-01T10:%02d:00Z", 5+a.run, a.run), false))
		}
	}
	a.msgs = append(a.msgs, msg.ToParam())
	if msg.StopReason != anthropic.StopReasonToolUse {
		a.done = true
		return nil
	}
	a.msgs = append(a.msgs, anthropic.NewUserMessage(results...))
	return nil
}

var (
	wantMainReplies = []string{"text:I'll have an agent find the test while I read the code.", "tool_use:Task:toolu_main_1",
		"tool_use:Read:toolu_main_2", "text:The bug is the month offset on line 12."}
	wantSubReplies = []string{"tool_use:Bash:toolu_sub_1", "tool_use:Read:toolu_sub_2", "text:ParseDate is tested in parse_test.go:8."}
)

func sdkClient(url string) anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey("k"), option.WithMaxRetries(0))
}

func TestMockServeRecordsInterleavedConversationsAndReplaysThemConcurrently(t *testing.T) {
	runs := t.TempDir()
	rec := serveCLI(t, "--script", subagentScript, "--record", runs, "--strict")
	c := sdkClient(rec.url)
	main, sub := mainConv(0), subConv(0)
	for !main.done || !sub.done {
		for _, cv := range []*conv{main, sub} {
			if cv.done || (cv == sub && len(main.got) == 0) {
				continue
			}
			if err := cv.step(c); err != nil {
				t.Fatalf("recording: %v", err)
			}
		}
	}
	if code := rec.stop(t); code != ExitOK {
		t.Fatalf("recording server exited %d, want 0 (every turn used): %s", code, rec.stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(runs, "*.jsonl"))
	if len(files) != 2 {
		t.Fatalf("recorded %v, want a trajectory for the main agent and one for its subagent", files)
	}
	linked := 0
	for _, f := range files {
		events, err := trajectory.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if start := events[0].Payload.(*trajectory.SessionStart); start.ParentToolUseID == "toolu_main_1" && start.ParentSession != "" {
			linked++
		}
	}
	if linked != 1 {
		t.Fatalf("%d of the recorded sessions name the Task call toolu_main_1 as their parent, want the subagent's", linked)
	}

	for _, mode := range [][]string{{"--mode", "match"}, {"--mode", "ordered", "--route", "prompt"}} {
		t.Run(strings.Join(mode, " "), func(t *testing.T) {
			replayConcurrently(t, append([]string{"--from", files[0], "--from", files[1], "--strict"}, mode...))
		})
	}
}

// replayConcurrently serves a recording of the main agent and its
// subagent with args and plays both conversations at once against it.
func replayConcurrently(t *testing.T, args []string) {
	srv := serveCLI(t, args...)
	c := sdkClient(srv.url)
	main, sub := mainConv(4), subConv(4)
	if err := main.step(c); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, cv := range []*conv{main, sub} {
		wg.Go(func() {
			for !cv.done {
				if err := cv.step(c); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("replay: %v\n%s", err, srv.stderr.String())
	}
	if !slices.Equal(main.got, wantMainReplies) || !slices.Equal(sub.got, wantSubReplies) {
		t.Fatalf("replayed main %q and subagent %q, want %q and %q", main.got, sub.got, wantMainReplies, wantSubReplies)
	}
	if code := srv.stop(t); code != ExitOK {
		t.Fatalf("replaying server exited %d, want 0 (every recorded response used): %s", code, srv.stderr.String())
	}
	if strings.Contains(srv.stderr.String(), "note:") {
		t.Fatalf("a full replay left notes:\n%s", srv.stderr.String())
	}
}

func TestMockServeStrictExitsThreeWhenTheSessionDidNotGoAsScripted(t *testing.T) {
	recording := "../../trajectory/testdata/valid/basic.jsonl"
	cases := []struct {
		name     string
		args     []string
		requests int // first requests of the main conversation to send
		other    bool
		wantCode ExitCode
		wantNote string
	}{
		{"unused turns of a conversation make --strict exit 3", []string{"--script", subagentScript, "--strict"}, 1, false, ExitGate,
			"note: " + subagentScript + ": conversation main: 1 of 3 turns were used; turn 2 (line 14) was never requested"},
		{"without --strict unused turns are only noted", []string{"--script", subagentScript}, 1, false, ExitOK,
			"conversation explore: 0 of 3 turns were used"},
		{"a request no conversation takes makes --strict exit 3", []string{"--script", subagentScript, "--strict"}, 0, true, ExitGate,
			"the request matches no conversation of the script"},
		{"a miss of a match-mode replay makes --strict exit 3", []string{"--from", recording, "--mode", "match", "--strict"}, 0, true, ExitGate,
			`replay_miss: replay (match) request 1: no recorded request has this system prompt and these tools (1 messages, first user message "hi")`},
		{"unused recorded responses make --strict exit 3", []string{"--from", recording, "--strict"}, 0, false, ExitGate,
			"note: replay: 0 of 2 recorded responses were used; recorded response 1 was never requested"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := serveCLI(t, tc.args...)
			c := sdkClient(srv.url)
			main := mainConv(0)
			for range tc.requests {
				if err := main.step(c); err != nil {
					t.Fatal(err)
				}
			}
			if tc.other {
				other := &conv{system: "You are another agent.", msgs: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
				if err := other.step(c); err == nil {
					t.Fatalf("a request with no scripted or recorded answer got %q, want an error", other.got)
				}
			}
			code := srv.stop(t)
			stderr := srv.stderr.String()
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantNote) {
				t.Fatalf("exit %d, want %d, with %q in stderr:\n%s", code, tc.wantCode, tc.wantNote, stderr)
			}
		})
	}
}

func TestMockServeRefusesModesAndRoutesThatCannotWork(t *testing.T) {
	recording := "../../trajectory/testdata/valid/basic.jsonl"
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"an unknown mode is refused", []string{"--script", subagentScript, "--mode", "fuzzy"}, `--mode: unknown replay mode "fuzzy"; use one of ordered, match`},
		{"an unknown route is refused", []string{"--from", recording, "--route", "session"}, `--route: unknown conversation route "session"`},
		{"a script has no recorded requests to match", []string{"--script", subagentScript, "--mode", "match"}, "--mode match needs --from"},
		{"a recording keeps no conversation header", []string{"--from", recording, "--route", "header"}, "cannot be routed by header"},
		{"match mode needs no route", []string{"--from", recording, "--mode", "match", "--route", "prompt"}, "takes no route"},
		{"a conversations script routes by its own matchers", []string{"--script", subagentScript, "--route", "header"}, "drop --route header"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut syncBuffer
			sys := &IO{In: strings.NewReader(""), Out: &out, Err: &errOut, Getenv: func(string) string { return "" }, Now: time.Now}
			code := run(sys, append([]string{"mock", "serve", "--addr", "127.0.0.1:0"}, tc.args...))
			if code != ExitInvalid || !strings.Contains(errOut.String(), tc.want) {
				t.Fatalf("exit %d, want 2, with %q in stderr:\n%s", code, tc.want, errOut.String())
			}
			if out.String() != "" {
				t.Fatalf("a refused command started serving: %s", out.String())
			}
		})
	}
}

func TestMockServeHelpTeachesModesAndRoutes(t *testing.T) {
	var out, errOut syncBuffer
	sys := &IO{In: strings.NewReader(""), Out: &out, Err: &errOut, Getenv: func(string) string { return "" }, Now: time.Now}
	if code := run(sys, []string{"mock", "serve", "--help"}); code != ExitOK {
		t.Fatalf("--help exited %d", code)
	}
	for _, want := range []string{"--mode", "--route", "--strict", "conversations:", "X-Retrace-Conversation", "ordered", "match", "normalised", "3 with\n--strict"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("mock serve --help does not mention %q", want)
		}
	}
}
