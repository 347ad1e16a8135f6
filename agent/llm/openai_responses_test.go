package llm

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// Responses API wire fixtures, in the shapes of the API reference.

const respUsage = `"usage":{"input_tokens":125,"input_tokens_details":{"cached_tokens":100},"output_tokens":15,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":140}`

func respObject(status, extra, output string) string {
	return `{"id":"resp_1","object":"response","created_at":1,"status":` + status + `,"model":"gpt-test","output":[` + output + `],` + extra + respUsage + `}`
}

const respMessageItem = `{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello world","annotations":[]}]}`

func respTextSSE(status string) string {
	events := []string{
		`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"gpt-test","output":[]}}`,
		`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`,
		`{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`,
		`{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello"}`,
		`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" world"}`,
		`{"type":"response.output_text.done","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Hello world"}`,
		`{"type":"response.output_item.done","sequence_number":6,"output_index":0,"item":` + respMessageItem + `}`,
	}
	if status != "" {
		events = append(events, `{"type":"response.completed","sequence_number":7,"response":`+respObject(status, "", respMessageItem)+`}`)
	}
	return sseEvents(events...)
}

func fcItem(id, call, args, status string) string {
	b, _ := json.Marshal(args)
	return `{"id":"` + id + `","type":"function_call","status":"` + status + `","call_id":"` + call + `","name":"read","arguments":` + string(b) + `}`
}

func argsDelta(seq, index int, id, delta string) string {
	b, _ := json.Marshal(delta)
	return `{"type":"response.function_call_arguments.delta","sequence_number":` + itoa(seq) + `,"item_id":"` + id + `","output_index":` + itoa(index) + `,"delta":` + string(b) + `}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

var respToolsSSE = sseEvents(
	`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"gpt-test","output":[]}}`,
	`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":`+fcItem("fc_1", "call_01", "", "in_progress")+`}`,
	argsDelta(2, 0, "fc_1", `{"file_pa`),
	argsDelta(3, 0, "fc_1", `th":"a.ts"}`),
	`{"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":`+fcItem("fc_2", "call_02", "", "in_progress")+`}`,
	argsDelta(5, 1, "fc_2", `{"file_path"`),
	`{"type":"response.output_item.done","sequence_number":6,"output_index":0,"item":`+fcItem("fc_1", "call_01", `{"file_path":"a.ts"}`, "completed")+`}`,
	argsDelta(7, 1, "fc_2", `:"b.ts","limit":20}`),
	`{"type":"response.function_call_arguments.done","sequence_number":8,"item_id":"fc_2","output_index":1,"arguments":"{\"file_path\":\"b.ts\",\"limit\":20}"}`,
	`{"type":"response.output_item.done","sequence_number":9,"output_index":1,"item":`+fcItem("fc_2", "call_02", `{"file_path":"b.ts","limit":20}`, "completed")+`}`,
	`{"type":"response.completed","sequence_number":10,"response":`+respObject(`"completed"`, "", fcItem("fc_1", "call_01", `{"file_path":"a.ts"}`, "completed")+","+fcItem("fc_2", "call_02", `{"file_path":"b.ts","limit":20}`, "completed"))+`}`,
)

var respToolsJSON = respObject(`"completed"`, "", fcItem("fc_1", "call_01", `{"file_path":"a.ts"}`, "completed")+","+fcItem("fc_2", "call_02", `{"file_path":"b.ts","limit":20}`, "completed"))

var respCutSSE = sseEvents(
	`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":`+fcItem("fc_1", "call_01", "", "in_progress")+`}`,
	argsDelta(2, 0, "fc_1", `{"file_path":"a.ts"}`),
	`{"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":`+fcItem("fc_1", "call_01", `{"file_path":"a.ts"}`, "completed")+`}`,
	`{"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":`+fcItem("fc_2", "call_02", "", "in_progress")+`}`,
	argsDelta(5, 1, "fc_2", `{"command":"rm -rf bu`),
	`{"type":"response.incomplete","sequence_number":6,"response":`+respObject(`"incomplete"`, `"incomplete_details":{"reason":"max_output_tokens"},`, fcItem("fc_1", "call_01", `{"file_path":"a.ts"}`, "completed"))+`}`,
)

var respCutJSON = respObject(`"incomplete"`, `"incomplete_details":{"reason":"max_output_tokens"},`, fcItem("fc_2", "call_02", `{"command":"rm -rf bu`, "incomplete"))

func newTestResponses(t testing.TB, url string, opts Options) *OpenAIResponses {
	t.Helper()
	opts.BaseURL = url
	opts.APIKey = "test-key"
	if opts.Model == "" {
		opts.Model = "gpt-test"
	}
	p, err := NewOpenAIResponses(opts)
	if err != nil {
		t.Fatal(err)
	}
	fast(&p.retry)
	return p
}

func TestResponsesReplies(t *testing.T) {
	cases := []struct {
		name  string
		sse   string
		json  string
		check func(t *testing.T, stream bool, resp Response, c *collector)
	}{
		{
			name: "a text reply is end_turn from status completed, and usage takes the cached tokens out of the input",
			sse:  respTextSSE(`"completed"`), json: respObject(`"completed"`, "", respMessageItem),
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				if len(resp.Content) != 1 || resp.Content[0].Text != "Hello world" {
					t.Errorf("content = %+v", resp.Content)
				}
				if resp.StopReason != trajectory.StopEndTurn || resp.StopReasonRaw != "completed" {
					t.Errorf("stop = %q (raw %q)", resp.StopReason, resp.StopReasonRaw)
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
			name: "two function calls whose arguments came in pieces are tool_use blocks keyed by call_id, reported in order",
			sse:  respToolsSSE, json: respToolsJSON,
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				uses := resp.ToolUses()
				if len(uses) != 2 || uses[0].ID != "call_01" || uses[1].ID != "call_02" {
					t.Fatalf("tool uses = %+v", uses)
				}
				sameJSON(t, uses[0].Input, `{"file_path":"a.ts"}`)
				sameJSON(t, uses[1].Input, `{"file_path":"b.ts","limit":20}`)
				if resp.StopReason != trajectory.StopToolUse || resp.StopReasonRaw != "completed" {
					t.Errorf("stop = %q (raw %q), want tool_use from completed with calls", resp.StopReason, resp.StopReasonRaw)
				}
				if stream && (len(c.tools) != 2 || c.tools[0].ID != "call_01" || c.tools[1].ID != "call_02") {
					t.Errorf("reported = %+v", c.tools)
				}
			},
		},
		{
			name: "an incomplete reply cut by max_output_tokens inside a call keeps it as PartialInput",
			sse:  respCutSSE, json: respCutJSON,
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				if resp.StopReason != trajectory.StopMaxTokens || resp.StopReasonRaw != "incomplete:max_output_tokens" {
					t.Errorf("stop = %q (raw %q)", resp.StopReason, resp.StopReasonRaw)
				}
				if !resp.TruncatedToolUse() {
					t.Errorf("TruncatedToolUse = false for %+v", resp.Content)
				}
				uses := resp.ToolUses()
				if last := uses[len(uses)-1]; last.ID != "call_02" || last.PartialInput != `{"command":"rm -rf bu` {
					t.Errorf("cut call = %+v", last)
				}
				if stream && (len(c.tools) != 1 || c.tools[0].ID != "call_01") {
					t.Errorf("reported = %+v, want only the finished call", c.tools)
				}
			},
		},
		{
			name: "a reply without a final status is missing, never done",
			sse:  respTextSSE(""), json: `{"id":"resp_1","object":"response","created_at":1,"model":"gpt-test","output":[` + respMessageItem + `]}`,
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				if resp.StopReason != trajectory.StopMissing {
					t.Errorf("stop = %q, want missing", resp.StopReason)
				}
			},
		},
		{
			name: "a status nobody listed is unknown and its raw value is kept",
			sse:  respTextSSE(`"paused"`), json: respObject(`"paused"`, "", respMessageItem),
			check: func(t *testing.T, stream bool, resp Response, c *collector) {
				if resp.StopReason != trajectory.StopUnknown || resp.StopReasonRaw != "paused" {
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
				p := newTestResponses(t, api.URL(), Options{})
				resp, c, err := call(t, p, m.stream, context.Background(), helloRequest)
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, m.stream, resp, c)
				if resp.RequestBytes != len(api.rawBody(0)) {
					t.Errorf("RequestBytes = %d, the server received %d", resp.RequestBytes, len(api.rawBody(0)))
				}
				if api.paths[0] != "/responses" {
					t.Errorf("path = %q", api.paths[0])
				}
			})
		}
	}
}

func TestResponsesRequestShape(t *testing.T) {
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
		t.Run("a tool_result round trip sends function_call and function_call_output items/"+m.name, func(t *testing.T) {
			rep := reply{body: respObject(`"completed"`, "", respMessageItem)}
			if m.stream {
				rep = reply{body: respTextSSE(`"completed"`), sse: true}
			}
			api := newFakeAPI(t, rep)
			p := newTestResponses(t, api.URL(), Options{})
			if _, _, err := call(t, p, m.stream, context.Background(), req); err != nil {
				t.Fatal(err)
			}
			body := api.body(0)
			if get(body, "instructions") != "You are terse." || get(body, "max_output_tokens") != 1000.0 || get(body, "store") != false {
				t.Errorf("instructions/max_output_tokens/store = %v/%v/%v", get(body, "instructions"), get(body, "max_output_tokens"), get(body, "store"))
			}
			items, _ := get(body, "input").([]any)
			if len(items) != 6 {
				t.Fatalf("input = %v, want user message, assistant message, 2 function_call and 2 function_call_output items", items)
			}
			if get(items, 0, "role") != "user" || get(items, 1, "role") != "assistant" || get(items, 1, "content") != "Reading both." {
				t.Errorf("messages = %v %v", items[0], items[1])
			}
			if get(items, 3, "type") != "function_call" || get(items, 3, "call_id") != "call_02" || get(items, 3, "name") != "read" ||
				get(items, 3, "arguments") != `{"file_path":"b.ts"}` {
				t.Errorf("function_call = %v", items[3])
			}
			if get(items, 4, "type") != "function_call_output" || get(items, 4, "call_id") != "call_01" || get(items, 4, "output") != "export const a = 1" ||
				get(items, 5, "call_id") != "call_02" {
				t.Errorf("function_call_output = %v %v", items[4], items[5])
			}
			if get(body, "tools", 0, "type") != "function" || get(body, "tools", 0, "name") != "read" ||
				get(body, "tools", 0, "parameters", "properties", "file_path", "type") != "string" {
				t.Errorf("tools = %v", get(body, "tools"))
			}
		})
	}
}

func TestResponsesRetriesAndFailures(t *testing.T) {
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
			name:    "a 429 with Retry-After is retried after the server's wait",
			first:   reply{status: 429, header: map[string]string{"Retry-After": "0.02"}, body: errBody},
			retried: true, kind: trajectory.ModelRateLimited, backoffIs: 20 * time.Millisecond, modes: []bool{false, true},
		},
		{
			name:    "a 502 is retried as a server error",
			first:   reply{status: 502, body: errBody},
			retried: true, kind: trajectory.ModelServerError, modes: []bool{false, true},
		},
		{
			name:  "a 404 is not retried",
			first: reply{status: 404, body: errBody},
			kind:  trajectory.ModelBadRequest, modes: []bool{false, true},
		},
		{
			name:  "a server that sends no headers fails with a first-byte timeout",
			first: reply{stallBeforeHeaders: true},
			opts:  Options{FirstByteTimeout: 50 * time.Millisecond, MaxRetries: -1},
			kind:  trajectory.ModelFirstByteTimeout, modes: []bool{false, true},
		},
		{
			name: "a stream that stalls after its first event fails with an idle timeout",
			first: reply{sse: true, stallAfterBody: true,
				body: sseEvents(`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1,"status":"in_progress","model":"gpt-test","output":[]}}`)},
			opts: Options{IdleTimeout: 50 * time.Millisecond, MaxRetries: -1},
			kind: trajectory.ModelIdleTimeout, modes: []bool{true},
		},
		{
			name:    "an error event in the stream is a server error and is retried before anything was delivered",
			first:   reply{sse: true, body: sseEvents(`{"type":"error","sequence_number":0,"code":"server_error","message":"oops","param":null}`)},
			retried: true, kind: trajectory.ModelServerError, modes: []bool{true},
		},
	}
	for _, tc := range cases {
		for _, stream := range tc.modes {
			t.Run(tc.name+"/"+map[bool]string{false: "complete", true: "stream"}[stream], func(t *testing.T) {
				replies := []reply{tc.first}
				if tc.retried {
					ok := reply{body: respObject(`"completed"`, "", respMessageItem)}
					if stream {
						ok = reply{body: respTextSSE(`"completed"`), sse: true}
					}
					replies = append(replies, ok)
				}
				api := newFakeAPI(t, replies...)
				var got retries
				tc.opts.OnRetry = got.add
				p := newTestResponses(t, api.URL(), tc.opts)
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

func TestResponsesCancellationAborts(t *testing.T) {
	for _, m := range modes {
		t.Run("cancelling the context aborts the call/"+m.name, func(t *testing.T) {
			api := newFakeAPI(t, reply{stallBeforeHeaders: true})
			p := newTestResponses(t, api.URL(), Options{})
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
