package mockllm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/retrace-dev/retrace/trajectory"
)

// startServer serves script over loopback for the length of the test.
func startServer(t testing.TB, src Source) (*Server, string) {
	t.Helper()
	srv := NewServer(src, Options{})
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, url
}

func loadScript(t testing.TB, path string) *Script {
	t.Helper()
	s, err := LoadScript(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func anthropicClient(url string, opts ...option.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]option.RequestOption{option.WithBaseURL(url), option.WithAPIKey("test-key"), option.WithMaxRetries(0)}, opts...)...)
}

var readTool = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name:        "read",
	Description: anthropic.String("Read a file"),
	InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"file_path": map[string]any{"type": "string"}}, Required: []string{"file_path"}},
}}

// anthropicTurn sends one request, streamed or not, and returns the message
// as the SDK reconstructs it.
func anthropicTurn(t *testing.T, c anthropic.Client, stream bool, params anthropic.MessageNewParams) (anthropic.Message, []string) {
	t.Helper()
	ctx := context.Background()
	if !stream {
		m, err := c.Messages.New(ctx, params)
		if err != nil {
			t.Fatalf("Messages.New: %v", err)
		}
		return *m, nil
	}
	s := c.Messages.NewStreaming(ctx, params)
	var msg anthropic.Message
	var events []string
	for s.Next() {
		ev := s.Current()
		events = append(events, ev.Type)
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("accumulate: %v", err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return msg, events
}

func TestAnthropicSDKGetsTheScriptedTurnsStreamedAndNot(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "a JSON reply", true: "an SSE stream"}[stream]
		t.Run("two parallel tool_use blocks then tool_results checked by expect, as "+name, func(t *testing.T) {
			script := loadScript(t, "testdata/parallel.yaml")
			srv, url := startServer(t, script)
			c := anthropicClient(url)
			params := anthropic.MessageNewParams{
				Model:     "claude-unknown-model-x",
				MaxTokens: 1024,
				System:    []anthropic.TextBlockParam{{Text: "You are careful."}},
				Tools:     []anthropic.ToolUnionParam{readTool},
				Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("read a.go and b"))},
			}
			msg, events := anthropicTurn(t, c, stream, params)
			if msg.Model != "claude-unknown-model-x" || msg.Role != "assistant" || msg.StopReason != anthropic.StopReasonToolUse {
				t.Fatalf("model %q role %q stop %q", msg.Model, msg.Role, msg.StopReason)
			}
			if !strings.HasPrefix(msg.ID, "msg_") {
				t.Fatalf("id %q does not look like msg_…", msg.ID)
			}
			if len(msg.Content) != 3 || msg.Content[0].Text != "Reading both files." {
				t.Fatalf("content %+v", msg.Content)
			}
			wantInputs := map[string]string{
				"toolu_a": `{"file_path":"a.go","limit":20}`,
				"toolu_b": `{"file_path":"docs/ünïcode.md","flags":["x","y"],"deep":{"n":1.5,"ok":true,"none":null}}`,
			}
			var results []anthropic.ContentBlockParamUnion
			for _, b := range msg.Content[1:] {
				if b.Type != "tool_use" || b.Name != "read" || string(b.Input) != wantInputs[b.ID] {
					t.Fatalf("tool_use %s %s input %s, want %s", b.ID, b.Name, b.Input, wantInputs[b.ID])
				}
				results = append(results, anthropic.NewToolResultBlock(b.ID, "result of "+b.ID, b.ID == "toolu_b"))
			}
			if stream {
				want := "message_start content_block_start content_block_delta" // the SDK drops ping
				if got := strings.Join(events, " "); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "content_block_stop message_delta message_stop") {
					t.Fatalf("events %s", got)
				}
				deltas := 0
				for _, e := range events {
					if e == "content_block_delta" {
						deltas++
					}
				}
				if deltas < 8 {
					t.Fatalf("only %d deltas: tool inputs must arrive in several chunks", deltas)
				}
			}
			params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(results...))
			final, _ := anthropicTurn(t, c, stream, params)
			if final.StopReason != anthropic.StopReasonEndTurn || final.Content[0].Text != "a.go is fine; b was missing." {
				t.Fatalf("final %q %+v", final.StopReason, final.Content)
			}
			if err := script.Verify(); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 || reqs[1].Endpoint != EndpointMessages || reqs[1].Stream != stream || reqs[1].Turn != 2 {
				t.Fatalf("logged %+v", reqs)
			}
			r := reqs[1].Request
			if r.System != "You are careful." || len(r.Tools) != 1 || r.Tools[0].Name != "read" || len(r.Messages) != 3 {
				t.Fatalf("decoded request %+v", r)
			}
			if got := r.Messages[2].Content[1]; got.Type != trajectory.BlockToolResult || got.ToolUseID != "toolu_b" || !got.IsError {
				t.Fatalf("decoded tool_result %+v", got)
			}
			if reqs[0].Header.Get("Anthropic-Version") == "" || reqs[0].Header.Get("X-Api-Key") != "" {
				t.Fatalf("logged headers %v: want anthropic-version kept and the API key dropped", reqs[0].Header)
			}
		})
	}
}

func TestAnthropicUsageAndHeadersMatchTheRealAPI(t *testing.T) {
	_, url := startServer(t, loadScript(t, "testdata/read_then_answer.yaml"))
	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"read README"}]}`
	res, err := http.Post(url+"/v1/messages?beta=true", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Request-Id"), "req_") || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d headers %v", res.StatusCode, res.Header)
	}
	for _, k := range []string{"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"} {
		if _, ok := m[k]; !ok {
			t.Errorf("reply lacks %q: %v", k, m)
		}
	}
	u := m["usage"].(map[string]any)
	if u["input_tokens"] != 1200.0 || u["output_tokens"] != 80.0 || u["cache_read_input_tokens"] != 0.0 || u["cache_creation_input_tokens"] != 0.0 {
		t.Fatalf("usage %v", u)
	}
}

func TestAnthropicRawStreamIsTheRealEventSequence(t *testing.T) {
	_, url := startServer(t, loadScript(t, "testdata/read_then_answer.yaml"))
	body := `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"read README"}]}`
	res, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var names []string
	for _, line := range strings.Split(string(raw), "\n") {
		if name, ok := strings.CutPrefix(line, "event: "); ok && (len(names) == 0 || names[len(names)-1] != name) {
			names = append(names, name)
		}
	}
	want := "message_start ping content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("events %s (content-type %q), want %s", got, res.Header.Get("Content-Type"), want)
	}
}

func TestAnthropicAcceptsWhatRealClientsSend(t *testing.T) {
	body := `{"model":"claude-whatever","max_tokens":100,"stream":false,"unknown_field":{"x":1},
	"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],
	"thinking":{"type":"enabled","budget_tokens":1024},
	"tools":[{"name":"read","description":"d","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"},"x-extra":true},
	         {"type":"web_search_20250305","name":"web_search","max_uses":3}],
	"messages":[{"role":"user","content":[{"type":"text","text":"README"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]}`
	srv, url := startServer(t, loadScript(t, "testdata/read_then_answer.yaml"))
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages?beta=true", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Anthropic-Beta", "prompt-caching-2024-07-31,interleaved-thinking-2025-05-14")
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("X-Unknown-Header", "1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("status %d, want 200 for a request the real API accepts", res.StatusCode)
	}
	lg := srv.Requests()[0]
	if lg.Path != "/v1/messages?beta=true" || lg.Header.Get("Anthropic-Beta") == "" || lg.Request.System != "sys" || len(lg.Request.Tools) != 2 {
		t.Fatalf("logged %+v", lg)
	}
}

func TestAnthropicProtocolViolationsGet400WithTheRealErrorBody(t *testing.T) {
	userText := `{"role":"user","content":"hi"}`
	toolUse := func(ids ...string) string {
		var blocks []string
		for _, id := range ids {
			blocks = append(blocks, `{"type":"tool_use","id":"`+id+`","name":"read","input":{}}`)
		}
		return `{"role":"assistant","content":[` + strings.Join(blocks, ",") + `]}`
	}
	toolResult := func(ids ...string) string {
		var blocks []string
		for _, id := range ids {
			blocks = append(blocks, `{"type":"tool_result","tool_use_id":"`+id+`","content":"ok"}`)
		}
		return `{"role":"user","content":[` + strings.Join(blocks, ",") + `]}`
	}
	msgs := func(m ...string) string {
		return `{"model":"m","max_tokens":5,"messages":[` + strings.Join(m, ",") + `]}`
	}
	cases := []struct {
		name, body, want string
	}{
		{"a tool_use without a tool_result in the next message", msgs(userText, toolUse("toolu_x", "toolu_y"), toolResult("toolu_x")),
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_y"},
		{"a tool_use followed by plain text", msgs(userText, toolUse("toolu_x"), userText),
			"ids were found without `tool_result` blocks immediately after: toolu_x"},
		{"a tool_result whose id matches no tool_use", msgs(userText, toolUse("toolu_x"), toolResult("toolu_x", "toolu_zz")),
			"unexpected `tool_use_id` found in `tool_result` blocks: toolu_zz"},
		{"a tool_result with no tool_use before it at all", msgs(toolResult("toolu_q")),
			"unexpected `tool_use_id` found in `tool_result` blocks: toolu_q"},
		{"a request without max_tokens", `{"model":"m","messages":[` + userText + `]}`, "max_tokens: Field required"},
		{"a request without messages", `{"model":"m","max_tokens":5,"messages":[]}`, "at least one message"},
		{"a message with an unknown role", msgs(`{"role":"system","content":"x"}`), "messages.0.role"},
		{"a body that is not JSON", `{"model":`, "not valid JSON"},
		{"a field of the wrong type", `{"model":"m","max_tokens":"five","messages":[` + userText + `]}`, "max_tokens: Input should be a valid number"},
	}
	_, url := startServer(t, loadScript(t, "testdata/repeat.yaml"))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
				RequestID string `json:"request_id"`
			}
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != 400 || body.Type != "error" || body.Error.Type != "invalid_request_error" || !strings.Contains(body.Error.Message, c.want) || body.RequestID == "" {
				t.Fatalf("status %d body %+v, want 400 invalid_request_error containing %q", res.StatusCode, body, c.want)
			}
		})
	}
}

func TestAnthropicSDKSeesViolationsAsTypedErrors(t *testing.T) {
	_, url := startServer(t, loadScript(t, "testdata/repeat.yaml"))
	c := anthropicClient(url)
	_, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "m", MaxTokens: 10,
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("hi")),
			anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_x", map[string]any{}, "read")),
			anthropic.NewUserMessage(anthropic.NewTextBlock("forgot the result")),
		},
	})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Type() != "invalid_request_error" || !strings.Contains(ae.Message, "toolu_x") {
		t.Fatalf("got %v, want a 400 invalid_request_error naming toolu_x", err)
	}
}

func TestContentTypeBodySizeAndUnknownPathsAreRejectedClearly(t *testing.T) {
	script := loadScript(t, "testdata/repeat.yaml")
	srv := NewServer(script, Options{MaxBodyBytes: 1024})
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cases := []struct {
		name, path, ctype, body string
		status                  int
		want                    string
	}{
		{"a form body is refused with a hint to send JSON", "/v1/messages", "application/x-www-form-urlencoded", "a=b", 400, "application/json"},
		{"a body over the cap is refused with 413", "/v1/messages", "application/json", `{"x":"` + strings.Repeat("a", 2000) + `"}`, 413, "larger than the 1024 bytes"},
		{"an unknown path lists the endpoints", "/v2/complete", "application/json", "{}", 404, "/v1/chat/completions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := http.Post(url+c.path, c.ctype, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			_ = json.NewDecoder(res.Body).Decode(&body)
			if res.StatusCode != c.status || !strings.Contains(body.Error.Message, c.want) {
				t.Fatalf("status %d message %q, want %d and %q", res.StatusCode, body.Error.Message, c.status, c.want)
			}
		})
	}
}

func TestAnthropicSDKRetriesAn529AndThenSucceeds(t *testing.T) {
	script := loadScript(t, "testdata/faults.yaml")
	srv, url := startServer(t, script)
	c := anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey("k"), option.WithMaxRetries(3))
	msg, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "m", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	if err != nil {
		t.Fatalf("the SDK should have retried past two 529s: %v", err)
	}
	if msg.Content[0].Text != "after two overloads" {
		t.Fatalf("content %+v", msg.Content)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].Status != 529 || reqs[1].Status != 529 || reqs[2].Status != 200 {
		t.Fatalf("statuses %d requests, want 529, 529, 200", len(reqs))
	}
	if reqs[2].Header.Get("X-Stainless-Retry-Count") != "2" {
		t.Fatalf("the third attempt says retry count %q, want 2", reqs[2].Header.Get("X-Stainless-Retry-Count"))
	}
}

func TestAnthropic529WithoutRetriesIsAnOverloadedError(t *testing.T) {
	_, url := startServer(t, loadScript(t, "testdata/faults.yaml"))
	c := anthropicClient(url)
	_, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "m", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 529 || ae.Type() != "overloaded_error" || ae.Response.Header.Get("Retry-After") != "1" || ae.Response.Header.Get("Retry-After-Ms") != "10" {
		t.Fatalf("got %v, want a 529 overloaded_error with Retry-After", err)
	}
}

func TestAnthropicStreamFaults(t *testing.T) {
	ask := anthropic.MessageNewParams{Model: "m", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}

	t.Run("a tool_use cut by max_tokens streams half its input and stops with max_tokens", func(t *testing.T) {
		_, url := startServer(t, mustParse(t, "turns:\n  - content:\n      - text: writing\n      - tool_use: {id: toolu_w, name: write, input: {file_path: a.txt, content: hello world hello world}}\n      - text: never sent\n    fault: {max_tokens_in_tool_use: true}\n"))
		c := anthropicClient(url)
		s := c.Messages.NewStreaming(context.Background(), ask)
		var partial strings.Builder
		var msg anthropic.Message
		chunks := 0
		for s.Next() {
			ev := s.Current()
			if ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta" && ev.Delta.PartialJSON != "" {
				partial.WriteString(ev.Delta.PartialJSON)
				chunks++
			}
			if err := msg.Accumulate(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		full := `{"file_path":"a.txt","content":"hello world hello world"}`
		if p := partial.String(); json.Valid([]byte(p)) || !strings.HasPrefix(full, p) || len(p) < 10 || chunks < 2 {
			t.Fatalf("partial input %q in %d chunks, want a proper prefix of %s in several chunks", p, chunks, full)
		}
		if msg.StopReason != anthropic.StopReasonMaxTokens || len(msg.Content) != 2 {
			t.Fatalf("stop %q, %d blocks; want max_tokens and the blocks after the cut dropped", msg.StopReason, len(msg.Content))
		}
	})

	t.Run("a missing stop reason arrives as null", func(t *testing.T) {
		_, url := startServer(t, mustParse(t, "turns:\n  - content: [{text: hm}]\n    fault: {missing_stop_reason: true}\n  - content: [{text: hm}]\n    fault: {missing_stop_reason: true}\n"))
		c := anthropicClient(url)
		msg, _ := anthropicTurn(t, c, true, ask)
		if msg.StopReason != "" || msg.Content[0].Text != "hm" {
			t.Fatalf("stop %q, want none", msg.StopReason)
		}
		m, err := c.Messages.New(context.Background(), ask)
		if err != nil || m.StopReason != "" || !strings.Contains(m.RawJSON(), `"stop_reason":null`) {
			t.Fatalf("JSON reply stop %q err %v, want null", m.StopReason, err)
		}
	})

	t.Run("a stalled stream is abandoned by a client with a short timeout", func(t *testing.T) {
		_, url := startServer(t, mustParse(t, "turns:\n  - content: [{text: one two three four five six}]\n    fault: {stall: 10m}\n"))
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		c := anthropicClient(url)
		s := c.Messages.NewStreaming(ctx, ask)
		var got []string
		for s.Next() {
			got = append(got, s.Current().Type)
		}
		if !errors.Is(s.Err(), context.DeadlineExceeded) {
			t.Fatalf("err %v, want the client's deadline", s.Err())
		}
		if strings.Join(got, " ") != "message_start content_block_start content_block_delta" {
			t.Fatalf("events before the stall: %v", got)
		}
	})

	t.Run("a stalled JSON reply sends no byte until the client gives up", func(t *testing.T) {
		_, url := startServer(t, mustParse(t, "turns:\n  - content: [{text: hi}]\n    fault: {stall: 10m}\n"))
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		c := anthropicClient(url)
		if _, err := c.Messages.New(ctx, ask); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want the client's deadline", err)
		}
	})

	t.Run("a malformed frame makes the SDK's stream fail", func(t *testing.T) {
		_, url := startServer(t, mustParse(t, "turns:\n  - content: [{text: hello there}]\n    fault: {malformed_sse: true}\n"))
		c := anthropicClient(url)
		s := c.Messages.NewStreaming(context.Background(), ask)
		for s.Next() {
		}
		if s.Err() == nil {
			t.Fatal("the stream ended without an error")
		}
	})

	t.Run("running out of turns is a 500 naming the turn that the SDK does not retry", func(t *testing.T) {
		srv, url := startServer(t, mustParse(t, "turns:\n  - content: [{text: only}]\n"))
		c := anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey("k"), option.WithMaxRetries(3))
		if _, err := c.Messages.New(context.Background(), ask); err != nil {
			t.Fatal(err)
		}
		_, err := c.Messages.New(context.Background(), ask)
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != 500 || !strings.Contains(ae.Message, "turn 2") {
			t.Fatalf("got %v, want a 500 naming turn 2", err)
		}
		if n := len(srv.Requests()); n != 2 {
			t.Fatalf("%d requests reached the server, want 2 (no retries of a script error)", n)
		}
	})
}

func TestCountTokensAndModels(t *testing.T) {
	_, url := startServer(t, loadScript(t, "testdata/read_then_answer.yaml"))
	c := anthropicClient(url)
	n, err := c.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: "m",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(strings.Repeat("word ", 100)))}})
	if err != nil || n.InputTokens < 100 || n.InputTokens > 200 {
		t.Fatalf("count_tokens %v %v, want about 125", n, err)
	}
	page, err := c.Models.List(context.Background(), anthropic.ModelListParams{})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != "mock-1" {
		t.Fatalf("models %+v %v", page, err)
	}
	m, err := c.Models.Get(context.Background(), "claude-x", anthropic.ModelGetParams{})
	if err != nil || m.ID != "claude-x" {
		t.Fatalf("model %+v %v", m, err)
	}
}
