package mockllm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

const subagentScript = "testdata/subagent_conversations.yaml"

// ccTools are tools of the kind Claude Code offers; main agent and
// subagent send the same list, as Claude Code does.
var ccTools = []anthropic.ToolUnionParam{
	{OfTool: &anthropic.ToolParam{Name: "Task", Description: anthropic.String("Launch a subagent"), InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"prompt": map[string]any{"type": "string"}}}}},
	{OfTool: &anthropic.ToolParam{Name: "Read", Description: anthropic.String("Read a file"), InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"file_path": map[string]any{"type": "string"}}}}},
	{OfTool: &anthropic.ToolParam{Name: "Bash", Description: anthropic.String("Run a command"), InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"command": map[string]any{"type": "string"}}}}},
}

// agentConv is one conversation of a Claude-Code-style client: it sends
// its messages, answers every tool_use of a reply with a result (whose
// volatile parts — duration, timestamp, temporary path — change with run)
// and goes on until the model ends its turn. Replies alternate between
// JSON and SSE.
type agentConv struct {
	system string
	header string // the ConversationHeader value to send, "" for none
	run    int
	msgs   []anthropic.MessageParam
	stream bool
	got    []string // each reply's blocks: "text:…" or "tool_use:NAME:ID"
	done   bool
}

func newMainConv(run int, header string) *agentConv {
	return &agentConv{run: run, header: header,
		system: fmt.Sprintf("You are Claude Code, Anthropic's official CLI for Claude.\nToday's date is 2026-12-%02d.", 1+run%28),
		msgs:   []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Fix the failing test in parse_test.go"))}}
}

func newSubConv(run int, header string) *agentConv {
	return &agentConv{run: run, header: header, stream: true,
		system: fmt.Sprintf("You are a file search specialist for Claude Code.\nToday's date is 2026-12-%02d.", 1+run%28),
		msgs:   []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Find where ParseDate is tested"))}}
}

var (
	wantMain = []string{"text:I'll have an agent find the test while I read the code.", "tool_use:Task:toolu_main_1",
		"tool_use:Read:toolu_main_2", "text:The bug is the month offset on line 12."}
	wantSub = []string{"tool_use:Bash:toolu_sub_1", "tool_use:Read:toolu_sub_2", "text:ParseDate is tested in parse_test.go:8."}
)

// step sends the conversation's next request and takes in the reply.
func (a *agentConv) step(ctx context.Context, c anthropic.Client) error {
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 4096,
		System: []anthropic.TextBlockParam{{Text: a.system}}, Tools: ccTools, Messages: a.msgs}
	var opts []option.RequestOption
	if a.header != "" {
		opts = append(opts, option.WithHeader(ConversationHeader, a.header))
	}
	var msg anthropic.Message
	if a.stream {
		s := c.Messages.NewStreaming(ctx, params, opts...)
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				return err
			}
		}
		if err := s.Err(); err != nil {
			return err
		}
	} else {
		m, err := c.Messages.New(ctx, params, opts...)
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
			out := fmt.Sprintf("output of %s (took %dms at 2026-12-01T10:%02d:07Z in /tmp/cc-%d/work)", b.ID, 10+a.run, a.run%60, 1000+a.run)
			results = append(results, anthropic.NewToolResultBlock(b.ID, out, false))
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

// runConcurrently plays a session as Claude Code does with a background
// subagent: the main agent's first reply starts the subagent, and both
// conversations then send their requests at the same time.
func runConcurrently(t *testing.T, c anthropic.Client, main, sub *agentConv) {
	t.Helper()
	ctx := context.Background()
	if err := main.step(ctx, c); err != nil {
		t.Fatalf("main turn 1: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for name, conv := range map[string]*agentConv{"main": main, "explore": sub} {
		wg.Go(func() {
			for !conv.done {
				if err := conv.step(ctx, c); err != nil {
					errs <- fmt.Errorf("%s after %d replies: %w", name, len(conv.got), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func assertServed(t *testing.T, main, sub *agentConv) {
	t.Helper()
	if !slices.Equal(main.got, wantMain) {
		t.Errorf("the main conversation received\n  %q\nwant\n  %q", main.got, wantMain)
	}
	if !slices.Equal(sub.got, wantSub) {
		t.Errorf("the subagent conversation received\n  %q\nwant\n  %q", sub.got, wantSub)
	}
}

func TestAConversationRoutedScriptServesAMainAgentAndItsSubagentConcurrently(t *testing.T) {
	data, err := os.ReadFile(subagentScript)
	if err != nil {
		t.Fatal(err)
	}
	byHeader := strings.NewReplacer(`match: {system_contains: "official CLI for Claude"}`, `match: {header: main}`,
		`match: {first_user_contains: "Find where ParseDate is tested"}`, `match: {header: explore}`).Replace(string(data))
	cases := []struct {
		name             string
		script           string
		mainHdr, subHdr  string
		wantConversation bool
	}{
		{"conversations matched by system prompt and first user message get their own turns", string(data), "", "", true},
		{"conversations matched by the X-Retrace-Conversation header get their own turns", byHeader, "main", "explore", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for run := range 8 {
				script, err := ParseScript([]byte(tc.script), "subagent.yaml")
				if err != nil {
					t.Fatal(err)
				}
				srv, url := startServer(t, script)
				main, sub := newMainConv(run, tc.mainHdr), newSubConv(run, tc.subHdr)
				runConcurrently(t, anthropicClient(url), main, sub)
				assertServed(t, main, sub)
				if err := script.Verify(); err != nil {
					t.Fatalf("run %d: Verify: %v", run, err)
				}
				for _, lg := range srv.Requests() {
					if lg.Conversation != "main" && lg.Conversation != "explore" {
						t.Fatalf("request answered by conversation %q, want main or explore", lg.Conversation)
					}
				}
				_ = srv.Close()
			}
		})
	}
}

// recordInterleaved records the session through the server's Transcript,
// the conversations taking turns (main, explore, main, ...), as
// `mock serve --record` would, and returns the recorded events.
func recordInterleaved(t *testing.T) []trajectory.Event {
	t.Helper()
	script := loadScript(t, subagentScript)
	var buf bytes.Buffer
	rec := recorder.New(&buf, recorder.Options{})
	tr := NewTranscript(rec)
	srv := NewServer(script, Options{OnAccept: tr.Accept, OnAnswer: tr.Answer})
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := anthropicClient(url)
	main, sub := newMainConv(0, ""), newSubConv(0, "")
	ctx := context.Background()
	for !main.done || !sub.done {
		for _, conv := range []*agentConv{main, sub} {
			if conv.done || (conv == sub && len(main.got) == 0) {
				continue
			}
			if err := conv.step(ctx, c); err != nil {
				t.Fatalf("recording: %v", err)
			}
		}
	}
	assertServed(t, main, sub)
	if _, err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	var events []trajectory.Event
	dec := trajectory.NewDecoder(bytes.NewReader(buf.Bytes()), "recorded.jsonl")
	for {
		ev, err := dec.Next()
		if err != nil {
			break
		}
		events = append(events, ev)
	}
	if n := countType(events, trajectory.TypeModelResponse); n != 6 {
		t.Fatalf("the recording holds %d model responses, want 6", n)
	}
	return events
}

func countType(events []trajectory.Event, typ trajectory.EventType) int {
	n := 0
	for _, ev := range events {
		if ev.Payload.EventType() == typ {
			n++
		}
	}
	return n
}

func TestARecordingOfInterleavedConversationsReplaysConcurrentlyThroughTheSDK(t *testing.T) {
	events := recordInterleaved(t)
	cases := []struct {
		name string
		opts ReplayOptions
	}{
		{"mode match answers each request with the response to the same recorded request, dates and durations normalised", ReplayOptions{Mode: ModeMatch}},
		{"mode ordered routed by prompt answers each conversation with its own recorded responses in order", ReplayOptions{Mode: ModeOrdered, Route: RoutePrompt}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for run := 1; run <= 8; run++ {
				r, err := NewReplayWith(events, tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				srv, url := startServer(t, r)
				main, sub := newMainConv(run, ""), newSubConv(run, "")
				runConcurrently(t, anthropicClient(url), main, sub)
				assertServed(t, main, sub)
				if err := r.Verify(); err != nil {
					t.Fatalf("run %d: Verify: %v", run, err)
				}
				if r.Used() != 6 {
					t.Fatalf("run %d: %d recorded responses used, want 6", run, r.Used())
				}
				_ = srv.Close()
			}
		})
	}
}

func TestAReplayMissFailsClosedThroughTheSDKAndInProcess(t *testing.T) {
	events := recordInterleaved(t)
	cases := []struct {
		name    string
		opts    ReplayOptions
		prepare func(t *testing.T, c anthropic.Client, main *agentConv)
		want    string
	}{
		{"mode match refuses a request whose tool result changed beyond the volatile parts",
			ReplayOptions{Mode: ModeMatch},
			func(t *testing.T, c anthropic.Client, m *agentConv) {
				if err := m.step(context.Background(), c); err != nil {
					t.Fatal(err)
				}
				m.got = nil
				last := m.msgs[len(m.msgs)-1]
				last.OfUser.Content[0].OfToolResult.Content[0].OfText.Text = "exit status 1: permission denied"
			},
			"no recorded request asks the same after normalisation; the closest is recorded response 3, which shares the first 2 messages: messages[2] differs"},
		{"mode match refuses a system prompt it never recorded",
			ReplayOptions{Mode: ModeMatch},
			func(_ *testing.T, _ anthropic.Client, m *agentConv) { m.system = "You are a different agent." },
			"no recorded request has this system prompt and these tools"},
		{"mode ordered routed by prompt refuses a conversation it never recorded",
			ReplayOptions{Route: RoutePrompt},
			func(_ *testing.T, _ anthropic.Client, m *agentConv) {
				m.msgs = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("a new task"))}
			},
			"no recorded conversation has this system prompt and first user message"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReplayWith(events, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			srv, url := startServer(t, r)
			// The SDK's own retries are on: a miss must not be retried.
			c := anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey("k"), option.WithMaxRetries(2))
			main := newMainConv(3, "")
			tc.prepare(t, c, main)
			before := srv.Stats().Requests
			err = main.step(context.Background(), c)
			var ae *anthropic.Error
			if !errors.As(err, &ae) || ae.StatusCode != http.StatusInternalServerError || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an HTTP 500 saying %q", err, tc.want)
			}
			if len(main.got) != 0 {
				t.Fatalf("the client received %q from a miss", main.got)
			}
			if n := srv.Stats().Requests - before; n != 1 {
				t.Fatalf("the server saw %d attempts of the request, want 1 (a miss says x-should-retry: false)", n)
			}
			if err := r.Verify(); !errors.Is(err, llm.ErrReplayMiss) || !strings.Contains(err.Error(), "recorded responses were used") {
				t.Fatalf("Verify: %v, want the miss and the unused responses", err)
			}
		})
	}
	t.Run("in process a miss is a *MissError in an *llm.Error of kind replay_miss", func(t *testing.T) {
		r, err := NewReplayWith(events, ReplayOptions{Mode: ModeMatch})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Complete(context.Background(), llm.Request{System: "unknown", Messages: []trajectory.Message{userText("hi")}})
		var me *MissError
		var le *llm.Error
		if !errors.As(err, &me) || !errors.As(err, &le) || le.Kind != trajectory.ModelReplayMiss || le.Retryable() || !errors.Is(err, llm.ErrReplayMiss) || me.Request != 1 {
			t.Fatalf("got %v, want a non-retryable *MissError for request 1", err)
		}
	})
}

func TestModeMatchServesARepeatedRequestOncePerRecording(t *testing.T) {
	events := recordInterleaved(t)
	r, err := NewReplayWith(events, ReplayOptions{Mode: ModeMatch})
	if err != nil {
		t.Fatal(err)
	}
	_, url := startServer(t, r)
	c := anthropicClient(url)
	first := newMainConv(0, "")
	if err := first.step(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	again := newMainConv(5, "")
	err = again.step(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "already answered") {
		t.Fatalf("the same first request again got %v, want a miss saying it was already answered", err)
	}
}

func TestReplayOptionsThatCannotWorkAreRefused(t *testing.T) {
	cases := []struct {
		name string
		opts ReplayOptions
		want string
	}{
		{"a recording cannot be routed by a header it never kept", ReplayOptions{Route: RouteHeader}, "cannot be routed by header"},
		{"mode match takes no route", ReplayOptions{Mode: ModeMatch, Route: RoutePrompt}, "takes no route"},
		{"an unknown mode is refused, not treated as ordered", ReplayOptions{Mode: Mode(7)}, "unknown replay mode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewReplayWith(nil, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
	for _, s := range []string{"Ordered", "matched", ""} {
		if _, err := ParseMode(s); err == nil {
			t.Errorf("ParseMode(%q) succeeded, want an error", s)
		}
		if _, err := ParseRoute(s); err == nil {
			t.Errorf("ParseRoute(%q) succeeded, want an error", s)
		}
	}
}

// longSession builds the events of a recorded n-turn session, each turn a
// tool call whose result carries a duration, as the recorder writes them.
func longSession(n int) ([]trajectory.Event, []llm.Request) {
	msgs := []trajectory.Message{userText("work through the list")}
	var events []trajectory.Event
	var reqs []llm.Request
	var prev *llm.Request
	var conv trajectory.Conversation
	for i := range n {
		req := llm.Request{System: "You are an agent. Today's date is 2026-12-01.", Messages: slices.Clone(msgs)}
		reqs = append(reqs, req)
		use := trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: fmt.Sprintf("toolu_%d", i), Name: "bash", Input: []byte(`{"command":"make step"}`)}
		events = append(events,
			trajectory.Event{Payload: llm.RequestEvent(req, prev, &conv, 0, false)},
			trajectory.Event{Payload: &trajectory.ModelResponse{Content: []trajectory.ContentBlock{use}, StopReason: trajectory.StopToolUse}})
		msgs = append(msgs, trajectory.Message{Role: trajectory.RoleAssistant, Content: []trajectory.ContentBlock{use}},
			trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockToolResult, ToolUseID: use.ID,
				Content: fmt.Sprintf("step %d done in %dms", i, 10+i)}}})
		prev = &reqs[len(reqs)-1]
	}
	return events, reqs
}

func TestModeMatchReplaysALongSessionInAnyOrder(t *testing.T) {
	events, reqs := longSession(50)
	r, err := NewReplayWith(events, ReplayOptions{Mode: ModeMatch})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(reqs) - 1; i >= 0; i-- {
		rep, err := r.Next(context.Background(), &reqs[i])
		if err != nil || rep.Response.Content[0].ID != fmt.Sprintf("toolu_%d", i) {
			t.Fatalf("request %d got %+v (%v), want its own recorded response", i, rep.Response.Content, err)
		}
	}
	if err := r.Verify(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkReplayMatch measures ModeMatch over a 200-turn session, every
// request carrying the whole history as an agent sends it.
func BenchmarkReplayMatch(b *testing.B) {
	const turns = 200
	events, reqs := longSession(turns)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := NewReplayWith(events, ReplayOptions{Mode: ModeMatch})
		if err != nil {
			b.Fatal(err)
		}
		for i := range reqs {
			if _, err := r.Next(context.Background(), &reqs[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*turns)/b.Elapsed().Seconds(), "requests/s")
}

func TestAReplayRefusesARecordingWhoseResponsesAnswerOtherRequests(t *testing.T) {
	use := func(id string) []trajectory.ContentBlock {
		return []trajectory.ContentBlock{{Type: trajectory.BlockToolUse, ID: id, Name: "bash", Input: []byte(`{}`)}}
	}
	first := func(task string) llm.Request {
		return llm.Request{System: "s", Messages: []trajectory.Message{userText(task)}}
	}
	second := func(task, id string) llm.Request {
		r := first(task)
		r.Messages = append(r.Messages, trajectory.Message{Role: trajectory.RoleAssistant, Content: use(id)},
			trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockToolResult, ToolUseID: id, Content: "ok"}}})
		return r
	}
	a1, b1, a2, b2 := first("task a"), first("task b"), second("task a", "ida"), second("task b", "idb")
	done := []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "done"}}
	type step struct {
		req  *llm.Request
		resp []trajectory.ContentBlock
	}
	build := func(steps []step) []trajectory.Event {
		var events []trajectory.Event
		var prev *llm.Request
		var conv trajectory.Conversation
		for _, s := range steps {
			if s.req != nil {
				events = append(events, trajectory.Event{Payload: llm.RequestEvent(*s.req, prev, &conv, 0, false)})
				prev = s.req
			}
			if s.resp != nil {
				events = append(events, trajectory.Event{Payload: &trajectory.ModelResponse{Content: s.resp}})
			}
		}
		return events
	}
	cases := []struct {
		name  string
		steps []step
		want  string // "" when the recording must load
	}{
		{"conversations recorded one turn at a time load", []step{{&a1, use("ida")}, {&b1, use("idb")}, {&a2, done}, {&b2, done}}, ""},
		{"a response written after another conversation's request is refused",
			[]step{{&a1, nil}, {&b1, use("ida")}, {&b1, use("idb")}, {&a2, done}, {&b2, done}},
			`the recording pairs responses with the wrong requests: recorded response 1 does not answer the request recorded before it: the conversation goes on with the reply tool_use idb, the response is tool_use ida`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, opts := range []ReplayOptions{{Mode: ModeMatch}, {Route: RoutePrompt}} {
				_, err := NewReplayWith(build(tc.steps), opts)
				if tc.want == "" && err != nil {
					t.Fatalf("%s: %v", opts.Mode, err)
				}
				if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
					t.Fatalf("%s: got %v, want an error saying %q", opts.Mode, err, tc.want)
				}
			}
		})
	}
}
