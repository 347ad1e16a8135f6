package mockllm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

func mustParse(t testing.TB, yml string) *Script {
	t.Helper()
	s, err := ParseScript([]byte(yml), "test.yaml")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return s
}

func userText(text string) trajectory.Message {
	return trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: text}}}
}

func TestEveryTestdataScriptParses(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.yaml")
	if len(files) < 4 {
		t.Fatalf("found %d scripts in testdata, want at least 4", len(files))
	}
	for _, f := range files {
		if _, err := LoadScript(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestScriptParseErrorsNameTheFileLineAndFix(t *testing.T) {
	cases := []struct {
		name, yml string
		line      int
		want      string
	}{
		{"an unknown top-level key is rejected with the known keys", "model: m\nturn:\n  - content: []\n", 2, `unknown key "turn"`},
		{"an unknown key in a turn names the turn", "turns:\n  - content: [{text: hi}]\n  - contnet: [{text: hi}]\n", 3, `unknown key "contnet" in turn 2`},
		{"a stop reason the API never sends is rejected", "turns:\n  - content: [{text: hi}]\n    stop_reason: done\n", 3, `stop_reason "done"`},
		{"a fault status that is not an HTTP error is rejected", "turns:\n  - fault: {status: 200}\n", 2, "not an HTTP error"},
		{"a retry_after that is not a duration is rejected", "turns:\n  - fault: {status: 529, retry_after: soon}\n", 2, "duration such as 1s"},
		{"times without a status says to add one", "turns:\n  - fault:\n      times: 2\n", 3, "add status"},
		{"cutting a tool_use needs a tool_use", "turns:\n  - content: [{text: hi}]\n    fault: {max_tokens_in_tool_use: true}\n", 2, "needs a tool_use"},
		{"a tool_use without a name is rejected", "turns:\n  - content:\n      - tool_use: {id: a}\n", 3, "needs a name"},
		{"two tool_use blocks with one id are rejected", "turns:\n  - content:\n      - tool_use: {id: a, name: x}\n      - tool_use: {id: a, name: y}\n", 4, "used twice"},
		{"a block with two kinds is rejected", "turns:\n  - content:\n      - {text: a, thinking: b}\n", 3, "exactly one of"},
		{"tool input must be a mapping", "turns:\n  - content:\n      - tool_use: {name: x, input: [1]}\n", 3, "input must be a mapping"},
		{"usage must be whole numbers", "turns:\n  - usage: {input_tokens: lots}\n", 2, "whole number"},
		{"a stop reason and missing_stop_reason conflict", "turns:\n  - stop_reason: end_turn\n    fault: {missing_stop_reason: true}\n", 2, "keep one"},
		{"a script without turns is rejected", "model: m\n", 1, "`turns` must be a list"},
		{"broken YAML keeps its line", "turns:\n  - content: [\n", 2, "not valid YAML"},
		{"a repeated key is rejected", "turns:\n  - content: []\n    content: []\n", 3, "appears twice"},
		{"an is_error that is not a boolean is rejected", "turns:\n  - expect: {tool_results: [{tool_use_id: a, is_error: maybe}]}\n", 2, "true or false"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseScript([]byte(c.yml), "dir/s.yaml")
			var se *ScriptError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *ScriptError", err)
			}
			if se.Line != c.line || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %q (line %d), want line %d and %q", err, se.Line, c.line, c.want)
			}
			if !strings.HasPrefix(err.Error(), "dir/s.yaml:") {
				t.Fatalf("%q does not start with the file name", err)
			}
		})
	}
}

func TestScriptToolInputKeepsKeyOrderAndTypes(t *testing.T) {
	s, err := LoadScript("testdata/parallel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Complete(context.Background(), llm.Request{Messages: []trajectory.Message{userText("go")}})
	if err != nil {
		t.Fatal(err)
	}
	uses := resp.ToolUses()
	if len(uses) != 2 {
		t.Fatalf("got %d tool uses, want 2", len(uses))
	}
	want := `{"file_path":"docs/ünïcode.md","flags":["x","y"],"deep":{"n":1.5,"ok":true,"none":null}}`
	if string(uses[1].Input) != want {
		t.Fatalf("input %s, want %s", uses[1].Input, want)
	}
	if resp.StopReason != trajectory.StopToolUse || resp.StopReasonRaw != "tool_use" {
		t.Fatalf("stop %q/%q, want the tool_use default", resp.StopReason, resp.StopReasonRaw)
	}
}

func TestScriptChecksExpectationsAndNamesTheTurnAndField(t *testing.T) {
	s, err := LoadScript("testdata/parallel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := s.Complete(ctx, llm.Request{Messages: []trajectory.Message{userText("read both")}})
	if err != nil {
		t.Fatal(err)
	}
	history := []trajectory.Message{userText("read both"), {Role: trajectory.RoleAssistant, Content: first.Content}}
	onlyA := append(history, trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{
		{Type: trajectory.BlockToolResult, ToolUseID: "toolu_a", Content: "package a"},
	}})
	_, err = s.Complete(ctx, llm.Request{Messages: onlyA})
	var te *TurnError
	if !errors.As(err, &te) || !errors.Is(err, ErrExpectation) || te.Turn != 2 || te.Field != "tool_results" {
		t.Fatalf("got %v, want a turn 2 tool_results expectation error", err)
	}
	if want := "turn 2: expected a tool_result for toolu_b with is_error true, the request has none"; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("message %q, want it to start with %q", err, want)
	}
	wrongFlag := append(history, trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{
		{Type: trajectory.BlockToolResult, ToolUseID: "toolu_a", Content: "package a"},
		{Type: trajectory.BlockToolResult, ToolUseID: "toolu_b", Content: "missing"},
	}})
	if _, err = s.Complete(ctx, llm.Request{Messages: wrongFlag}); err == nil || !strings.Contains(err.Error(), "the request's has is_error false") {
		t.Fatalf("got %v, want the is_error mismatch named", err)
	}
	good := append(history, trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{
		{Type: trajectory.BlockToolResult, ToolUseID: "toolu_b", Content: "missing", IsError: true},
		{Type: trajectory.BlockToolResult, ToolUseID: "toolu_a", Content: "package a"},
	}})
	resp, err := s.Complete(ctx, llm.Request{Messages: good})
	if err != nil || resp.StopReason != trajectory.StopEndTurn {
		t.Fatalf("got %v, %v; want the final answer once both results are there", resp.StopReason, err)
	}
	_, err = s.Complete(ctx, llm.Request{Messages: good})
	if !errors.Is(err, ErrOutOfTurns) || !strings.HasPrefix(err.Error(), "turn 3: ") {
		t.Fatalf("got %v, want running out of turns at turn 3", err)
	}
	if err := s.Verify(); err == nil || !strings.Contains(err.Error(), "turn 3") || !strings.Contains(err.Error(), "turn 2") {
		t.Fatalf("Verify = %v, want the failed expectations and the extra request reported", err)
	}
}

func TestScriptVerifyReportsUnusedTurns(t *testing.T) {
	s := mustParse(t, "turns:\n  - content: [{text: a}]\n  - content: [{text: b}]\n")
	if _, err := s.Complete(context.Background(), llm.Request{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(); err == nil || !strings.Contains(err.Error(), "turn 2 (line 3) was never requested") {
		t.Fatalf("Verify = %v, want the unused turn 2 named with its line", err)
	}
}

func TestScriptOtherExpectations(t *testing.T) {
	yml := "turns:\n  - expect: {last_user_contains: README, system_contains: careful, tools: [read, bash]}\n    content: [{text: ok}]\n"
	cases := []struct {
		name  string
		req   llm.Request
		field string
	}{
		{"the last user message must contain the text", llm.Request{System: "be careful", Tools: []llm.ToolDef{{Name: "read"}, {Name: "bash"}}, Messages: []trajectory.Message{userText("hello")}}, "last_user_contains"},
		{"the system prompt must contain the text", llm.Request{System: "hi", Tools: []llm.ToolDef{{Name: "read"}, {Name: "bash"}}, Messages: []trajectory.Message{userText("README")}}, "system_contains"},
		{"every named tool must be offered", llm.Request{System: "careful", Tools: []llm.ToolDef{{Name: "read"}}, Messages: []trajectory.Message{userText("README")}}, "tools"},
		{"a request meeting every check gets the turn", llm.Request{System: "careful", Tools: []llm.ToolDef{{Name: "read"}, {Name: "bash"}}, Messages: []trajectory.Message{userText("read README")}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := mustParse(t, yml).Complete(context.Background(), c.req)
			var te *TurnError
			if c.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.As(err, &te) || te.Field != c.field {
				t.Fatalf("got %v, want a failure of %s", err, c.field)
			}
		})
	}
}

func TestScriptFaultsInProcess(t *testing.T) {
	s, err := LoadScript("testdata/faults.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := llm.Request{Messages: []trajectory.Message{userText("go")}}
	for attempt := 1; attempt <= 2; attempt++ {
		_, err := s.Complete(ctx, req)
		var le *llm.Error
		if !errors.As(err, &le) || le.Kind != trajectory.ModelOverloaded || le.StatusCode != 529 || le.RetryAfter != 10*time.Millisecond || !le.Retryable() {
			t.Fatalf("attempt %d: got %v, want a retryable overloaded 529 with Retry-After", attempt, err)
		}
	}
	if r, err := s.Complete(ctx, req); err != nil || r.Content[0].Text != "after two overloads" {
		t.Fatalf("third attempt: %v %v, want the turn's text", r.Content, err)
	}
	r, err := s.Complete(ctx, req)
	if err != nil || !r.TruncatedToolUse() || r.StopReason != trajectory.StopMaxTokens {
		t.Fatalf("cut turn: %+v %v, want a truncated tool_use with max_tokens", r, err)
	}
	if p := r.Content[0].PartialInput; json.Valid([]byte(p)) || !strings.HasPrefix(`{"file_path":"out.txt","content":"a long body that is cut in the middle"}`, p) {
		t.Fatalf("partial input %q should be a proper prefix that is not JSON", p)
	}
	if r, err := s.Complete(ctx, req); err != nil || r.StopReason != trajectory.StopMissing || r.StopReasonRaw != "" {
		t.Fatalf("missing stop: %v %v", r.StopReason, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	var le *llm.Error
	if _, err := s.Stream(cctx, req, func(llm.StreamEvent) {}); !errors.As(err, &le) || le.Kind != trajectory.ModelAborted {
		t.Fatalf("stall: got %v, want aborted once the context ends", err)
	}
	if _, err := s.Stream(ctx, req, func(llm.StreamEvent) {}); !errors.As(err, &le) || le.Kind != trajectory.ModelInvalidResponse {
		t.Fatalf("malformed: got %v, want invalid_response", err)
	}
}

func TestScriptStreamReportsTextAndCompleteToolUses(t *testing.T) {
	s, err := LoadScript("testdata/parallel.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var texts, tools []string
	resp, err := s.Stream(context.Background(), llm.Request{}, func(ev llm.StreamEvent) {
		if ev.TextDelta != "" {
			texts = append(texts, ev.TextDelta)
		}
		if ev.ToolUse != nil {
			tools = append(tools, ev.ToolUse.ID)
		}
	})
	if err != nil || strings.Join(texts, "") != "Reading both files." || strings.Join(tools, ",") != "toolu_a,toolu_b" || len(resp.Content) != 3 {
		t.Fatalf("texts %q tools %q err %v", texts, tools, err)
	}
}

func TestScriptIsSafeForConcurrentUseAndHandsOutEachTurnOnce(t *testing.T) {
	var b strings.Builder
	b.WriteString("turns:\n")
	const n = 200
	for i := 0; i < n; i++ {
		b.WriteString("  - content: [{text: t}]\n")
	}
	s := mustParse(t, b.String())
	var wg sync.WaitGroup
	seen := make([]int, n+1)
	var mu sync.Mutex
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n/8; i++ {
				rep, err := s.Next(context.Background(), &llm.Request{})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[rep.Turn]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i := 1; i <= n; i++ {
		if seen[i] != 1 {
			t.Fatalf("turn %d was handed out %d times", i, seen[i])
		}
	}
	if err := s.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestRepeatingScriptStartsOver(t *testing.T) {
	s, err := LoadScript("testdata/repeat.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Complete(context.Background(), llm.Request{}); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
}

func TestLoadScriptReportsAMissingFile(t *testing.T) {
	_, err := LoadScript(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want a wrapped not-exist error", err)
	}
}

func BenchmarkScriptTurn(b *testing.B) {
	s, err := LoadScript("testdata/repeat.yaml")
	if err != nil {
		b.Fatal(err)
	}
	req := llm.Request{Model: "m", System: "You are careful.", Messages: []trajectory.Message{userText("read the README please")}}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := s.Complete(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/turn")
}

func FuzzParseScript(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range files {
		data, _ := os.ReadFile(p)
		f.Add(data)
	}
	f.Add([]byte("turns: [{content: [{tool_use: {name: x, input: {a: &x [1, *x]}}}]}]"))
	f.Add([]byte("conversations:\n  - {name: a, match: {header: a}, turns: [{content: [{text: x}]}]}\n  - {match: {system_contains: s, first_user_contains: u}, turns: [{content: [{tool_use: {name: r}}]}]}\n"))
	f.Add([]byte("conversations: [{name: &n a, match: {header: *n}, turns: [{content: [{text: x}]}]}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Parse it plain and routed by header; a conversations script
		// refuses the route, so both paths are exercised.
		for _, route := range []Route{RouteNone, RouteHeader} {
			fuzzScript(t, data, route)
		}
	})
}

// fuzzScript parses data and plays every turn of it, from two
// conversations, checking that nothing but the documented errors comes out.
func fuzzScript(t *testing.T, data []byte, route Route) {
	s, err := ParseScriptWith(data, "fuzz.yaml", ScriptOptions{Route: route, MaxConversations: 1})
	if err != nil {
		var se *ScriptError
		if !errors.As(err, &se) {
			t.Fatalf("error %v is not a *ScriptError", err)
		}
		return
	}
	req := &llm.Request{System: "s", Messages: []trajectory.Message{userText("u")}}
	for _, id := range []string{"a", "b"} {
		ctx := WithConversation(context.Background(), id)
		for range min(s.Len(), 64) {
			rep, err := s.Next(ctx, req)
			var te *TurnError
			if err != nil && !errors.As(err, &te) && !errors.Is(err, ErrNoConversation) && !errors.Is(err, ErrTooManyConversations) {
				t.Fatalf("Next: %v is none of the documented errors", err)
			}
			if err != nil {
				continue
			}
			for _, b := range rep.Response.Content {
				if len(b.Input) > 0 && !json.Valid(b.Input) {
					t.Fatalf("turn %d: tool input %s is not JSON", rep.Turn, b.Input)
				}
			}
		}
	}
	_ = s.Verify()
}
