package llm

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// Anthropic wire fixtures, in the shapes of the Messages API docs.

const anthStartJSON = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1,"cache_read_input_tokens":100,"cache_creation_input_tokens":7}}}`

func anthTextSSE(stop string) string {
	events := []string{
		anthStartJSON,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"ping"}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" world"}}`,
		`{"type":"content_block_stop","index":0}`,
	}
	if stop != "" {
		events = append(events, `{"type":"message_delta","delta":{"stop_reason":`+stop+`,"stop_sequence":null},"usage":{"output_tokens":15}}`)
	}
	events = append(events, `{"type":"message_stop"}`)
	return sseEvents(events...)
}

func anthTextJSON(stop string) string {
	return `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"Hello world"}],"stop_reason":` + stop + `,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":15,"cache_read_input_tokens":100,"cache_creation_input_tokens":7}}`
}

// anthToolsSSE is a reply with text and two parallel tool_use blocks whose
// inputs arrive in several pieces.
var anthToolsSSE = sseEvents(
	anthStartJSON,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Reading both."}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"read","input":{}}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"file_pa"}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\":\"a.ts\"}"}}`,
	`{"type":"content_block_stop","index":1}`,
	`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_02","name":"read","input":{}}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\""}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":":\"b.ts\",\"limit\":"}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"20}"}}`,
	`{"type":"content_block_stop","index":2}`,
	`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}`,
	`{"type":"message_stop"}`,
)

const anthToolsJSON = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"Reading both."},{"type":"tool_use","id":"toolu_01","name":"read","input":{"file_path":"a.ts"}},{"type":"tool_use","id":"toolu_02","name":"read","input":{"file_path":"b.ts","limit":20}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":40,"cache_read_input_tokens":100,"cache_creation_input_tokens":7}}`

// anthCutSSE is cut off by max_tokens in the middle of the second tool_use.
var anthCutSSE = sseEvents(
	anthStartJSON,
	`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01","name":"read","input":{}}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\":\"a.ts\"}"}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_02","name":"bash","input":{}}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\":\"rm -rf bu"}}`,
	`{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":64}}`,
	`{"type":"message_stop"}`,
)

func newTestAnthropic(t testing.TB, url string, opts Options) *Anthropic {
	t.Helper()
	opts.BaseURL = url
	opts.APIKey = "test-key"
	if opts.Model == "" {
		opts.Model = "claude-test"
	}
	p, err := NewAnthropic(opts)
	if err != nil {
		t.Fatal(err)
	}
	fast(&p.retry)
	return p
}

var helloRequest = Request{
	System:   "You are terse.",
	Messages: []trajectory.Message{{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "hi"}}}},
}

func TestAnthropicReplies(t *testing.T) {
	cases := []struct {
		name  string
		sse   string
		json  string
		check func(t *testing.T, stream bool, resp Response, c *collector)
	}{
		{
			name: "a text reply keeps its text, stop reason, model and all four usage counters",
			sse:  anthTextSSE(`"end_turn"`), json: anthTextJSON(`"end_turn"`),
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				if len(resp.Content) != 1 || resp.Content[0].Type != trajectory.BlockText || resp.Content[0].Text != "Hello world" {
					t.Errorf("content = %+v, want one text block \"Hello world\"", resp.Content)
				}
				if resp.StopReason != trajectory.StopEndTurn || resp.StopReasonRaw != "end_turn" {
					t.Errorf("stop = %q (raw %q), want end_turn", resp.StopReason, resp.StopReasonRaw)
				}
				want := trajectory.Usage{InputTokens: 25, OutputTokens: 15, CacheReadTokens: 100, CacheCreationTokens: 7}
				if resp.Usage != want {
					t.Errorf("usage = %+v, want %+v", resp.Usage, want)
				}
				if resp.Model != "claude-test" {
					t.Errorf("model = %q", resp.Model)
				}
				if stream {
					if c.text.String() != "Hello world" {
						t.Errorf("streamed text = %q, want the deltas in order", c.text.String())
					}
					if resp.TTFT <= 0 || resp.TTFT > resp.Duration {
						t.Errorf("TTFT = %v with duration %v, want 0 < TTFT <= duration", resp.TTFT, resp.Duration)
					}
				}
			},
		},
		{
			name: "two parallel tool_use blocks whose input came in pieces are both complete and reported in order",
			sse:  anthToolsSSE, json: anthToolsJSON,
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				uses := resp.ToolUses()
				if len(uses) != 2 || uses[0].ID != "toolu_01" || uses[1].ID != "toolu_02" {
					t.Fatalf("tool uses = %+v, want toolu_01 and toolu_02", uses)
				}
				sameJSON(t, uses[0].Input, `{"file_path":"a.ts"}`)
				sameJSON(t, uses[1].Input, `{"file_path":"b.ts","limit":20}`)
				if resp.StopReason != trajectory.StopToolUse || resp.TruncatedToolUse() {
					t.Errorf("stop = %q truncated = %v, want tool_use and not truncated", resp.StopReason, resp.TruncatedToolUse())
				}
				if stream {
					if len(c.tools) != 2 || c.tools[0].ID != "toolu_01" || c.tools[1].ID != "toolu_02" {
						t.Fatalf("reported tool uses = %+v, want both in order", c.tools)
					}
					sameJSON(t, c.tools[1].Input, `{"file_path":"b.ts","limit":20}`)
				}
			},
		},
		{
			name: "a null stop reason is missing, never done",
			sse:  anthTextSSE(""), json: anthTextJSON("null"),
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				if resp.StopReason != trajectory.StopMissing || resp.StopReasonRaw != "" {
					t.Errorf("stop = %q (raw %q), want missing", resp.StopReason, resp.StopReasonRaw)
				}
			},
		},
		{
			name: "a stop reason nobody listed is unknown and its raw value is kept",
			sse:  anthTextSSE(`"pause_turn"`), json: anthTextJSON(`"pause_turn"`),
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				if resp.StopReason != trajectory.StopUnknown || resp.StopReasonRaw != "pause_turn" {
					t.Errorf("stop = %q (raw %q), want unknown with raw pause_turn", resp.StopReason, resp.StopReasonRaw)
				}
			},
		},
		{
			name: "a max_tokens stop is normalised to max_tokens",
			sse:  anthTextSSE(`"max_tokens"`), json: anthTextJSON(`"max_tokens"`),
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				if resp.StopReason != trajectory.StopMaxTokens {
					t.Errorf("stop = %q, want max_tokens", resp.StopReason)
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
				p := newTestAnthropic(t, api.URL(), Options{})
				resp, c, err := call(t, p, m.stream, context.Background(), helloRequest)
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, m.stream, resp, c)
				if resp.RequestBytes != len(api.rawBody(0)) {
					t.Errorf("RequestBytes = %d, the server received %d", resp.RequestBytes, len(api.rawBody(0)))
				}
				if got := get(api.body(0), "stream"); (got == true) != m.stream {
					t.Errorf("request stream = %v, want %v", got, m.stream)
				}
			})
		}
	}
}

func TestAnthropicStreamCutInsideToolUse(t *testing.T) {
	api := newFakeAPI(t, reply{body: anthCutSSE, sse: true})
	p := newTestAnthropic(t, api.URL(), Options{})
	c := &collector{}
	resp, err := p.Stream(context.Background(), helloRequest, c.on)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != trajectory.StopMaxTokens {
		t.Errorf("stop = %q, want max_tokens", resp.StopReason)
	}
	if !resp.TruncatedToolUse() {
		t.Errorf("TruncatedToolUse = false, want true for %+v", resp.Content)
	}
	uses := resp.ToolUses()
	if len(uses) != 2 {
		t.Fatalf("tool uses = %+v, want the complete one and the cut one", uses)
	}
	if uses[1].PartialInput != `{"command":"rm -rf bu` || len(uses[1].Input) != 0 {
		t.Errorf("cut block = %+v, want the received bytes as PartialInput and no Input", uses[1])
	}
	if len(c.tools) != 1 || c.tools[0].ID != "toolu_01" {
		t.Errorf("reported tool uses = %+v, want only the complete toolu_01", c.tools)
	}
}

func TestAnthropicStreamDroppedConnectionKeepsPartialToolUse(t *testing.T) {
	// The body ends (the server hangs up) inside a tool_use without any stop.
	body := sseEvents(
		anthStartJSON,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_09","name":"read","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\":\"a.ts\"}"}}`,
	)
	api := newFakeAPI(t, reply{body: body, sse: true})
	p := newTestAnthropic(t, api.URL(), Options{})
	c := &collector{}
	resp, err := p.Stream(context.Background(), helloRequest, c.on)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != trajectory.StopMissing {
		t.Errorf("stop = %q, want missing", resp.StopReason)
	}
	if !resp.TruncatedToolUse() || len(c.tools) != 0 {
		t.Errorf("truncated = %v, reported = %+v: a tool_use without its stop must never count as complete", resp.TruncatedToolUse(), c.tools)
	}
}

func TestAnthropicRequestShape(t *testing.T) {
	temp := 0.5
	req := Request{
		System:      "You are terse.",
		MaxTokens:   1000,
		Temperature: &temp,
		Tools: []ToolDef{{
			Name: "read", Description: "Read a file.",
			Schema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"],"additionalProperties":false}`),
		}},
		Messages: []trajectory.Message{
			{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "read a and b"}}},
			{Role: trajectory.RoleAssistant, Content: []trajectory.ContentBlock{
				{Type: trajectory.BlockText, Text: "Reading both."},
				{Type: trajectory.BlockToolUse, ID: "toolu_01", Name: "read", Input: json.RawMessage(`{"file_path":"a.ts"}`)},
				{Type: trajectory.BlockToolUse, ID: "toolu_02", Name: "read", Input: json.RawMessage(`{"file_path":"b.ts"}`)},
			}},
			{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{
				{Type: trajectory.BlockToolResult, ToolUseID: "toolu_01", Content: "export const a = 1"},
				{Type: trajectory.BlockToolResult, ToolUseID: "toolu_02", Content: "ENOENT: b.ts does not exist", IsError: true},
			}},
		},
	}
	for _, m := range modes {
		t.Run("a tool_result round trip sends both results in one user message/"+m.name, func(t *testing.T) {
			rep := reply{body: anthTextJSON(`"end_turn"`)}
			if m.stream {
				rep = reply{body: anthTextSSE(`"end_turn"`), sse: true}
			}
			api := newFakeAPI(t, rep)
			p := newTestAnthropic(t, api.URL(), Options{})
			if _, _, err := call(t, p, m.stream, context.Background(), req); err != nil {
				t.Fatal(err)
			}
			body := api.body(0)
			if api.paths[0] != "/v1/messages" {
				t.Errorf("path = %q, want /v1/messages", api.paths[0])
			}
			if get(body, "system", 0, "text") != "You are terse." {
				t.Errorf("system = %v, want the system prompt at the top level", get(body, "system"))
			}
			if get(body, "max_tokens") != 1000.0 || get(body, "temperature") != 0.5 || get(body, "model") != "claude-test" {
				t.Errorf("max_tokens/temperature/model = %v/%v/%v", get(body, "max_tokens"), get(body, "temperature"), get(body, "model"))
			}
			if get(body, "tools", 0, "name") != "read" || get(body, "tools", 0, "input_schema", "type") != "object" ||
				get(body, "tools", 0, "input_schema", "required", 0) != "file_path" ||
				get(body, "tools", 0, "input_schema", "additionalProperties") != false ||
				get(body, "tools", 0, "input_schema", "properties", "file_path", "type") != "string" {
				t.Errorf("tools = %v, want the schema as input_schema", get(body, "tools"))
			}
			msgs, _ := get(body, "messages").([]any)
			if len(msgs) != 3 {
				t.Fatalf("messages = %v, want 3", msgs)
			}
			if get(msgs, 1, "content", 1, "type") != "tool_use" || get(msgs, 1, "content", 2, "input", "file_path") != "b.ts" {
				t.Errorf("assistant message = %v, want its tool_use blocks with object input", msgs[1])
			}
			results, _ := get(msgs, 2, "content").([]any)
			if get(msgs, 2, "role") != "user" || len(results) != 2 {
				t.Fatalf("third message = %v, want one user message holding both results", msgs[2])
			}
			if get(results, 0, "type") != "tool_result" || get(results, 0, "tool_use_id") != "toolu_01" ||
				get(results, 1, "tool_use_id") != "toolu_02" || get(results, 1, "is_error") != true ||
				get(results, 1, "content", 0, "text") != "ENOENT: b.ts does not exist" {
				t.Errorf("results = %v, want tool_result blocks with ids, content and is_error", results)
			}
		})
	}
}

func TestAnthropicRetries(t *testing.T) {
	errBody := func(typ string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"whatever the wording is today"}}`
	}
	cases := []struct {
		name      string
		first     reply
		retried   bool
		kind      trajectory.ModelErrorKind
		status    int
		backoffIs time.Duration // 0: only check it is positive
	}{
		{
			name:    "a 429 with retry-after-ms is retried after exactly the server's wait",
			first:   reply{status: 429, header: map[string]string{"retry-after-ms": "30"}, body: errBody("rate_limit_error")},
			retried: true, kind: trajectory.ModelRateLimited, status: 429, backoffIs: 30 * time.Millisecond,
		},
		{
			name:    "a 429 with Retry-After in seconds is retried after that many seconds",
			first:   reply{status: 429, header: map[string]string{"Retry-After": "0.05"}, body: errBody("rate_limit_error")},
			retried: true, kind: trajectory.ModelRateLimited, status: 429, backoffIs: 50 * time.Millisecond,
		},
		{
			name:    "a 529 overloaded is retried with backoff",
			first:   reply{status: 529, body: errBody("overloaded_error")},
			retried: true, kind: trajectory.ModelOverloaded, status: 529,
		},
		{
			name:    "a 500 is retried as a server error",
			first:   reply{status: 500, body: errBody("api_error")},
			retried: true, kind: trajectory.ModelServerError, status: 500,
		},
		{
			name:  "a 400 is not retried",
			first: reply{status: 400, body: errBody("invalid_request_error")},
			kind:  trajectory.ModelBadRequest, status: 400,
		},
		{
			name:  "a 401 is not retried",
			first: reply{status: 401, body: errBody("authentication_error")},
			kind:  trajectory.ModelAuth, status: 401,
		},
		{
			name:  "a 413 is not retried",
			first: reply{status: 413, body: errBody("request_too_large")},
			kind:  trajectory.ModelBadRequest, status: 413,
		},
		{
			name:  "a 200 whose body is not JSON is an invalid response",
			first: reply{body: "<html>gateway</html>{"},
			kind:  trajectory.ModelInvalidResponse,
		},
	}
	for _, tc := range cases {
		for _, m := range modes {
			if tc.kind == trajectory.ModelInvalidResponse && m.stream {
				continue
			}
			t.Run(tc.name+"/"+m.name, func(t *testing.T) {
				replies := []reply{tc.first}
				if tc.retried {
					ok := reply{body: anthTextJSON(`"end_turn"`)}
					if m.stream {
						ok = reply{body: anthTextSSE(`"end_turn"`), sse: true}
					}
					replies = append(replies, ok)
				}
				api := newFakeAPI(t, replies...)
				var got retries
				p := newTestAnthropic(t, api.URL(), Options{OnRetry: got.add})
				resp, _, err := call(t, p, m.stream, context.Background(), helloRequest)
				events := got.all()
				if len(events) != 1 {
					t.Fatalf("OnRetry called %d times, want once: %+v", len(events), events)
				}
				ev := events[0]
				if ev.Err.Kind != tc.kind || ev.Err.StatusCode != tc.status || ev.Attempt != 1 || ev.WillRetry != tc.retried {
					t.Errorf("event = kind %q status %d attempt %d will_retry %v, want %q %d 1 %v",
						ev.Err.Kind, ev.Err.StatusCode, ev.Attempt, ev.WillRetry, tc.kind, tc.status, tc.retried)
				}
				if !tc.retried {
					if err == nil || errorKind(t, err) != tc.kind {
						t.Fatalf("err = %v, want %q", err, tc.kind)
					}
					return
				}
				if err != nil {
					t.Fatalf("want success after one retry, got %v", err)
				}
				if resp.StopReason != trajectory.StopEndTurn {
					t.Errorf("stop = %q after the retry", resp.StopReason)
				}
				if tc.backoffIs > 0 && ev.Backoff != tc.backoffIs {
					t.Errorf("backoff = %v, want the server's %v", ev.Backoff, tc.backoffIs)
				}
				if ev.Backoff <= 0 {
					t.Errorf("backoff = %v, want a wait before the retry", ev.Backoff)
				}
			})
		}
	}
}

func TestAnthropicStreamErrorEventIsClassifiedByType(t *testing.T) {
	body := sseEvents(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	api := newFakeAPI(t, reply{body: body, sse: true}, reply{body: anthTextSSE(`"end_turn"`), sse: true})
	var got retries
	p := newTestAnthropic(t, api.URL(), Options{OnRetry: got.add})
	resp, err := p.Stream(context.Background(), helloRequest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != trajectory.StopEndTurn {
		t.Errorf("stop = %q", resp.StopReason)
	}
	if ev := got.all(); len(ev) != 1 || ev[0].Err.Kind != trajectory.ModelOverloaded || !ev[0].WillRetry {
		t.Errorf("events = %+v, want one retried overloaded", ev)
	}
}

func TestAnthropicTimeoutsAndCancellation(t *testing.T) {
	cases := []struct {
		name   string
		rep    reply
		opts   Options
		cancel bool
		kind   trajectory.ModelErrorKind
		modes  []bool
	}{
		{
			name: "a server that sends no headers fails with a first-byte timeout",
			rep:  reply{stallBeforeHeaders: true},
			opts: Options{FirstByteTimeout: 50 * time.Millisecond, MaxRetries: -1},
			kind: trajectory.ModelFirstByteTimeout, modes: []bool{false, true},
		},
		{
			name: "a stream that stalls after its first events fails with an idle timeout",
			rep: reply{sse: true, stallAfterBody: true, body: sseEvents(anthStartJSON,
				`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)},
			opts: Options{IdleTimeout: 50 * time.Millisecond, MaxRetries: -1},
			kind: trajectory.ModelIdleTimeout, modes: []bool{true},
		},
		{
			name:   "cancelling the context aborts the call and it is not retried",
			rep:    reply{stallBeforeHeaders: true},
			cancel: true,
			kind:   trajectory.ModelAborted, modes: []bool{false, true},
		},
	}
	for _, tc := range cases {
		for _, stream := range tc.modes {
			t.Run(tc.name+"/"+map[bool]string{false: "complete", true: "stream"}[stream], func(t *testing.T) {
				api := newFakeAPI(t, tc.rep)
				var got retries
				tc.opts.OnRetry = got.add
				p := newTestAnthropic(t, api.URL(), tc.opts)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancel {
					go func() {
						<-api.arrived
						cancel()
					}()
				}
				_, _, err := call(t, p, stream, ctx, helloRequest)
				if err == nil {
					t.Fatal("want an error")
				}
				if k := errorKind(t, err); k != tc.kind {
					t.Errorf("kind = %q, want %q (err %v)", k, tc.kind, err)
				}
				if ev := got.all(); len(ev) != 1 || ev[0].WillRetry {
					t.Errorf("events = %+v, want one final attempt", ev)
				}
			})
		}
	}
}

func TestAnthropicTimeoutIsRetriedWhenRetriesAreOn(t *testing.T) {
	api := newFakeAPI(t, reply{stallBeforeHeaders: true}, reply{body: anthTextSSE(`"end_turn"`), sse: true})
	var got retries
	p := newTestAnthropic(t, api.URL(), Options{FirstByteTimeout: 50 * time.Millisecond, OnRetry: got.add})
	if _, err := p.Stream(context.Background(), helloRequest, nil); err != nil {
		t.Fatal(err)
	}
	if ev := got.all(); len(ev) != 1 || ev[0].Err.Kind != trajectory.ModelFirstByteTimeout || !ev[0].WillRetry {
		t.Errorf("events = %+v, want one retried first_byte_timeout", ev)
	}
}

func TestAnthropicStreamIsNotRetriedAfterItDeliveredEvents(t *testing.T) {
	// A retry would repeat text and maybe tool calls the consumer already started.
	api := newFakeAPI(t, reply{sse: true, stallAfterBody: true, body: sseEvents(anthStartJSON,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`)})
	var got retries
	p := newTestAnthropic(t, api.URL(), Options{IdleTimeout: 50 * time.Millisecond, OnRetry: got.add})
	c := &collector{}
	resp, err := p.Stream(context.Background(), helloRequest, c.on)
	if err == nil || errorKind(t, err) != trajectory.ModelIdleTimeout {
		t.Fatalf("err = %v, want idle_timeout", err)
	}
	if ev := got.all(); len(ev) != 1 || ev[0].WillRetry {
		t.Errorf("events = %+v, want a single attempt that is not retried", ev)
	}
	if len(resp.Content) != 1 || resp.Content[0].Text != "Hel" || c.text.String() != "Hel" {
		t.Errorf("partial reply = %+v, want the text received before the stall", resp.Content)
	}
}

func TestAnthropicConnectionRefused(t *testing.T) {
	srv := newFakeAPI(t)
	url := srv.URL()
	srv.srv.Close()
	var got retries
	p := newTestAnthropic(t, url, Options{MaxRetries: 1, OnRetry: got.add})
	_, err := p.Complete(context.Background(), helloRequest)
	if err == nil || errorKind(t, err) != trajectory.ModelConnection {
		t.Fatalf("err = %v, want connection", err)
	}
	if ev := got.all(); len(ev) != 2 || !ev[0].WillRetry || ev[1].WillRetry || ev[1].Attempt != 2 {
		t.Errorf("events = %+v, want attempt 1 retried and attempt 2 final", ev)
	}
}

func TestAnthropicSendsNoRequestWhenASchemaIsBroken(t *testing.T) {
	api := newFakeAPI(t)
	p := newTestAnthropic(t, api.URL(), Options{})
	req := helloRequest
	req.Tools = []ToolDef{{Name: "bad", Schema: json.RawMessage(`[1,2]`)}}
	_, err := p.Complete(context.Background(), req)
	var se *ToolSchemaError
	if err == nil || !errors.As(err, &se) || se.Tool != "bad" {
		t.Fatalf("err = %v, want a ToolSchemaError naming the tool", err)
	}
}
