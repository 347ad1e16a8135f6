package llm

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// Chat Completions wire fixtures, in the shapes of the API reference.

func chunk(choices string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[` + choices + `]}`
}

const chatUsageChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":125,"completion_tokens":15,"total_tokens":140,"prompt_tokens_details":{"cached_tokens":100}}}`

func chatTextSSE(finish string) string {
	return sseData(true,
		chunk(`{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"content":"Hello"},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"content":" world"},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{},"finish_reason":`+finish+`}`),
		chatUsageChunk,
	)
}

func chatTextJSON(finish string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"Hello world","refusal":null},"finish_reason":` + finish + `,"logprobs":null}],"usage":{"prompt_tokens":125,"completion_tokens":15,"total_tokens":140,"prompt_tokens_details":{"cached_tokens":100}}}`
}

var chatToolsSSE = sseData(true,
	chunk(`{"index":0,"delta":{"role":"assistant","content":"Reading both."},"finish_reason":null}`),
	chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_01","type":"function","function":{"name":"read","arguments":""}}]},"finish_reason":null}`),
	chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"file_pa"}}]},"finish_reason":null}`),
	chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a.ts\"}"}}]},"finish_reason":null}`),
	chunk(`{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_02","type":"function","function":{"name":"read","arguments":"{\"file_path\""}}]},"finish_reason":null}`),
	chunk(`{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":\"b.ts\",\"limit\":20}"}}]},"finish_reason":null}`),
	chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`),
	chatUsageChunk,
)

const chatToolsJSON = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"Reading both.","refusal":null,"tool_calls":[{"id":"call_01","type":"function","function":{"name":"read","arguments":"{\"file_path\":\"a.ts\"}"}},{"id":"call_02","type":"function","function":{"name":"read","arguments":"{\"file_path\":\"b.ts\",\"limit\":20}"}}]},"finish_reason":"tool_calls","logprobs":null}],"usage":{"prompt_tokens":125,"completion_tokens":15,"total_tokens":140,"prompt_tokens_details":{"cached_tokens":100}}}`

var chatCutSSE = sseData(true,
	chunk(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_01","type":"function","function":{"name":"read","arguments":"{\"file_path\":\"a.ts\"}"}}]},"finish_reason":null}`),
	chunk(`{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_02","type":"function","function":{"name":"bash","arguments":"{\"command\":\"rm -rf bu"}}]},"finish_reason":null}`),
	chunk(`{"index":0,"delta":{},"finish_reason":"length"}`),
)

// chatCutJSON is a non-streamed reply cut by the length limit: its
// arguments string is not valid JSON.
const chatCutJSON = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_02","type":"function","function":{"name":"bash","arguments":"{\"command\":\"rm -rf bu"}}]},"finish_reason":"length","logprobs":null}]}`

func newTestChat(t testing.TB, url string, opts Options) *OpenAIChat {
	t.Helper()
	opts.BaseURL = url
	opts.APIKey = "test-key"
	if opts.Model == "" {
		opts.Model = "gpt-test"
	}
	p, err := NewOpenAIChat(opts)
	if err != nil {
		t.Fatal(err)
	}
	fast(&p.retry)
	return p
}

func TestChatReplies(t *testing.T) {
	cases := []struct {
		name  string
		sse   string
		json  string
		check func(t *testing.T, stream bool, resp Response, c *collector)
	}{
		{
			name: "a text reply keeps its text and finish reason, and usage takes the cached tokens out of the input",
			sse:  chatTextSSE(`"stop"`), json: chatTextJSON(`"stop"`),
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				if len(resp.Content) != 1 || resp.Content[0].Text != "Hello world" {
					t.Errorf("content = %+v", resp.Content)
				}
				if resp.StopReason != trajectory.StopEndTurn || resp.StopReasonRaw != "stop" {
					t.Errorf("stop = %q (raw %q), want end_turn from stop", resp.StopReason, resp.StopReasonRaw)
				}
				want := trajectory.Usage{InputTokens: 25, OutputTokens: 15, CacheReadTokens: 100}
				if resp.Usage != want {
					t.Errorf("usage = %+v, want %+v", resp.Usage, want)
				}
				if resp.Model != "gpt-test" {
					t.Errorf("model = %q", resp.Model)
				}
				if stream && c.text.String() != "Hello world" {
					t.Errorf("streamed text = %q", c.text.String())
				}
			},
		},
		{
			name: "two parallel tool calls whose arguments came in pieces by index are parsed and reported in order",
			sse:  chatToolsSSE, json: chatToolsJSON,
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				uses := resp.ToolUses()
				if len(uses) != 2 || uses[0].ID != "call_01" || uses[1].ID != "call_02" || uses[1].Name != "read" {
					t.Fatalf("tool uses = %+v", uses)
				}
				sameJSON(t, uses[0].Input, `{"file_path":"a.ts"}`)
				sameJSON(t, uses[1].Input, `{"file_path":"b.ts","limit":20}`)
				if resp.StopReason != trajectory.StopToolUse || resp.Content[0].Text != "Reading both." {
					t.Errorf("stop = %q, content = %+v", resp.StopReason, resp.Content)
				}
				if stream && (len(c.tools) != 2 || c.tools[0].ID != "call_01" || c.tools[1].ID != "call_02") {
					t.Errorf("reported = %+v, want both calls in order", c.tools)
				}
			},
		},
		{
			name: "a length stop in the middle of a call keeps its arguments as PartialInput and never reports it",
			sse:  chatCutSSE, json: chatCutJSON,
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				if resp.StopReason != trajectory.StopMaxTokens || !resp.TruncatedToolUse() {
					t.Errorf("stop = %q truncated = %v, want max_tokens and truncated", resp.StopReason, resp.TruncatedToolUse())
				}
				uses := resp.ToolUses()
				last := uses[len(uses)-1]
				if last.ID != "call_02" || last.PartialInput != `{"command":"rm -rf bu` || len(last.Input) != 0 {
					t.Errorf("cut call = %+v", last)
				}
				for _, r := range c.tools {
					if r.ID == "call_02" {
						t.Errorf("the cut call was reported as complete")
					}
				}
				if stream && (len(c.tools) != 1 || c.tools[0].ID != "call_01") {
					t.Errorf("reported = %+v, want only the call the stream moved past", c.tools)
				}
			},
		},
		{
			name: "a null finish reason is missing, never done",
			sse:  chatTextSSE("null"), json: chatTextJSON("null"),
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				if resp.StopReason != trajectory.StopMissing {
					t.Errorf("stop = %q, want missing", resp.StopReason)
				}
			},
		},
		{
			name: "a finish reason nobody listed is unknown and its raw value is kept",
			sse:  chatTextSSE(`"tool_budget"`), json: chatTextJSON(`"tool_budget"`),
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				if resp.StopReason != trajectory.StopUnknown || resp.StopReasonRaw != "tool_budget" {
					t.Errorf("stop = %q (raw %q)", resp.StopReason, resp.StopReasonRaw)
				}
			},
		},
	}
	for _, tc := range cases {
		for _, m := range modes {
			t.Run(tc.name+"/"+m.name, func(t *testing.T) {
				rep := reply{body: tc.json}
				if m.stream {
					rep = reply{body: tc.sse, sse: true}
				}
				api := newFakeAPI(t, rep)
				p := newTestChat(t, api.URL(), Options{})
				resp, c, err := call(t, p, m.stream, context.Background(), helloRequest)
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, m.stream, resp, c)
				if resp.RequestBytes != len(api.rawBody(0)) {
					t.Errorf("RequestBytes = %d, the server received %d", resp.RequestBytes, len(api.rawBody(0)))
				}
				if api.paths[0] != "/chat/completions" {
					t.Errorf("path = %q", api.paths[0])
				}
			})
		}
	}
}

func TestChatRequestShape(t *testing.T) {
	req := Request{
		System:    "You are terse.",
		MaxTokens: 1000,
		Tools: []ToolDef{{Name: "read", Description: "Read a file.",
			Schema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}`)}},
		Messages: []trajectory.Message{
			{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "read a and b"}}},
			{Role: trajectory.RoleAssistant, Content: []trajectory.ContentBlock{
				{Type: trajectory.BlockText, Text: "Reading both."},
				{Type: trajectory.BlockToolUse, ID: "call_01", Name: "read", Input: json.RawMessage(`{"file_path":"a.ts"}`)},
				{Type: trajectory.BlockToolUse, ID: "call_02", Name: "read", Input: json.RawMessage(`{"file_path":"b.ts"}`)},
			}},
			{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{
				{Type: trajectory.BlockToolResult, ToolUseID: "call_01", Content: "export const a = 1"},
				{Type: trajectory.BlockToolResult, ToolUseID: "call_02", Content: "ENOENT", IsError: true},
			}},
		},
	}
	for _, m := range modes {
		t.Run("a tool_result round trip sends one tool message per result, with its tool_call_id/"+m.name, func(t *testing.T) {
			rep := reply{body: chatTextJSON(`"stop"`)}
			if m.stream {
				rep = reply{body: chatTextSSE(`"stop"`), sse: true}
			}
			api := newFakeAPI(t, rep)
			p := newTestChat(t, api.URL(), Options{StrictTools: true})
			if _, _, err := call(t, p, m.stream, context.Background(), req); err != nil {
				t.Fatal(err)
			}
			body := api.body(0)
			msgs, _ := get(body, "messages").([]any)
			if len(msgs) != 5 {
				t.Fatalf("messages = %v, want system, user, assistant and two tool messages", msgs)
			}
			if get(msgs, 0, "role") != "system" || get(msgs, 0, "content") != "You are terse." {
				t.Errorf("first message = %v, want the system prompt", msgs[0])
			}
			if get(msgs, 2, "role") != "assistant" || get(msgs, 2, "content") != "Reading both." ||
				get(msgs, 2, "tool_calls", 1, "id") != "call_02" || get(msgs, 2, "tool_calls", 1, "type") != "function" ||
				get(msgs, 2, "tool_calls", 1, "function", "arguments") != `{"file_path":"b.ts"}` {
				t.Errorf("assistant message = %v, want tool_calls with string arguments", msgs[2])
			}
			for i, id := range []string{"call_01", "call_02"} {
				if get(msgs, 3+i, "role") != "tool" || get(msgs, 3+i, "tool_call_id") != id {
					t.Errorf("message %d = %v, want a tool message for %s", 3+i, msgs[3+i], id)
				}
			}
			if get(body, "tools", 0, "type") != "function" || get(body, "tools", 0, "function", "name") != "read" ||
				get(body, "tools", 0, "function", "strict") != true ||
				get(body, "tools", 0, "function", "parameters", "required", 0) != "file_path" {
				t.Errorf("tools = %v, want function definitions with parameters", get(body, "tools"))
			}
			if get(body, "max_completion_tokens") != 1000.0 {
				t.Errorf("max_completion_tokens = %v", get(body, "max_completion_tokens"))
			}
			if m.stream && get(body, "stream_options", "include_usage") != true {
				t.Errorf("stream_options = %v, want usage included", get(body, "stream_options"))
			}
		})
	}
}

func TestChatRetriesAndFailures(t *testing.T) {
	errBody := `{"error":{"message":"whatever","type":"server_error","param":null,"code":null}}`
	cases := []struct {
		name      string
		first     reply
		opts      Options
		retried   bool
		kind      trajectory.ModelErrorKind
		backoffIs time.Duration
		modes     []bool
	}{
		{
			name:    "a 429 with retry-after-ms is retried after the server's wait",
			first:   reply{status: 429, header: map[string]string{"retry-after-ms": "20"}, body: errBody},
			retried: true, kind: trajectory.ModelRateLimited, backoffIs: 20 * time.Millisecond, modes: []bool{false, true},
		},
		{
			name:    "a 503 is retried as a server error",
			first:   reply{status: 503, body: errBody},
			retried: true, kind: trajectory.ModelServerError, modes: []bool{false, true},
		},
		{
			name:  "a 400 is not retried",
			first: reply{status: 400, body: errBody},
			kind:  trajectory.ModelBadRequest, modes: []bool{false, true},
		},
		{
			name:  "a 403 is an auth failure and is not retried",
			first: reply{status: 403, body: errBody},
			kind:  trajectory.ModelAuth, modes: []bool{false, true},
		},
		{
			name:  "a server that sends no headers fails with a first-byte timeout",
			first: reply{stallBeforeHeaders: true},
			opts:  Options{FirstByteTimeout: 50 * time.Millisecond, MaxRetries: -1},
			kind:  trajectory.ModelFirstByteTimeout, modes: []bool{false, true},
		},
		{
			name: "a stream that stalls after its first chunk fails with an idle timeout",
			first: reply{sse: true, stallAfterBody: true,
				body: sseData(false, chunk(`{"index":0,"delta":{"role":"assistant"},"finish_reason":null}`))},
			opts: Options{IdleTimeout: 50 * time.Millisecond, MaxRetries: -1},
			kind: trajectory.ModelIdleTimeout, modes: []bool{true},
		},
	}
	for _, tc := range cases {
		for _, stream := range tc.modes {
			t.Run(tc.name+"/"+map[bool]string{false: "complete", true: "stream"}[stream], func(t *testing.T) {
				replies := []reply{tc.first}
				if tc.retried {
					ok := reply{body: chatTextJSON(`"stop"`)}
					if stream {
						ok = reply{body: chatTextSSE(`"stop"`), sse: true}
					}
					replies = append(replies, ok)
				}
				api := newFakeAPI(t, replies...)
				var got retries
				tc.opts.OnRetry = got.add
				p := newTestChat(t, api.URL(), tc.opts)
				_, _, err := call(t, p, stream, context.Background(), helloRequest)
				ev := got.all()
				if len(ev) != 1 || ev[0].Err.Kind != tc.kind || ev[0].WillRetry != tc.retried {
					t.Fatalf("events = %+v, want one %q with will_retry %v", ev, tc.kind, tc.retried)
				}
				if tc.retried {
					if err != nil {
						t.Fatalf("want success after the retry, got %v", err)
					}
					if tc.backoffIs > 0 && ev[0].Backoff != tc.backoffIs {
						t.Errorf("backoff = %v, want %v", ev[0].Backoff, tc.backoffIs)
					}
					return
				}
				if err == nil || errorKind(t, err) != tc.kind {
					t.Fatalf("err = %v, want %q", err, tc.kind)
				}
			})
		}
	}
}

func TestChatCancellationAborts(t *testing.T) {
	for _, m := range modes {
		t.Run("cancelling the context aborts the call/"+m.name, func(t *testing.T) {
			api := newFakeAPI(t, reply{stallBeforeHeaders: true})
			p := newTestChat(t, api.URL(), Options{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				<-api.arrived
				cancel()
			}()
			_, _, err := call(t, p, m.stream, ctx, helloRequest)
			if err == nil || errorKind(t, err) != trajectory.ModelAborted {
				t.Fatalf("err = %v, want aborted", err)
			}
		})
	}
}

func TestChatStreamWithoutFinishReasonKeepsLastCallPartial(t *testing.T) {
	// The stream ends cleanly but without a finish reason: a gateway that
	// drops it must not make the last call look complete.
	body := sseData(true,
		chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_01","type":"function","function":{"name":"read","arguments":"{\"file_path\":\"a.ts\"}"}}]},"finish_reason":null}`),
	)
	api := newFakeAPI(t, reply{body: body, sse: true})
	p := newTestChat(t, api.URL(), Options{})
	c := &collector{}
	resp, err := p.Stream(context.Background(), helloRequest, c.on)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != trajectory.StopMissing || !resp.TruncatedToolUse() || len(c.tools) != 0 {
		t.Errorf("stop = %q truncated = %v reported = %+v, want missing, truncated, nothing reported", resp.StopReason, resp.TruncatedToolUse(), c.tools)
	}
}
