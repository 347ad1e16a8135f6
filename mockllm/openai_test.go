package mockllm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/retrace-dev/retrace/trajectory"
)

func openaiClient(url string, retries int) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("test-key"), option.WithMaxRetries(retries))
}

var chatReadTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name: "read", Description: openai.String("Read a file"),
	Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"file_path": map[string]any{"type": "string"}}, "extra_key": 1},
})

var parallelInputs = map[string]string{
	"toolu_a": `{"file_path":"a.go","limit":20}`,
	"toolu_b": `{"file_path":"docs/ünïcode.md","flags":["x","y"],"deep":{"n":1.5,"ok":true,"none":null}}`,
}

func chatTurn(t *testing.T, c openai.Client, stream bool, params openai.ChatCompletionNewParams) openai.ChatCompletion {
	t.Helper()
	ctx := context.Background()
	if !stream {
		r, err := c.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatalf("Chat.Completions.New: %v", err)
		}
		return *r
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := c.Chat.Completions.NewStreaming(ctx, params)
	acc := openai.ChatCompletionAccumulator{}
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return acc.ChatCompletion
}

func TestOpenAIChatSDKGetsTheScriptedTurnsStreamedAndNot(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "two tool calls then the answer as JSON", true: "two tool calls then the answer as SSE chunks"}[stream], func(t *testing.T) {
			script := loadScript(t, "testdata/parallel.yaml")
			srv, url := startServer(t, script)
			c := openaiClient(url, 0)
			params := openai.ChatCompletionNewParams{
				Model:    "gpt-unknown",
				Tools:    []openai.ChatCompletionToolUnionParam{chatReadTool},
				Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be careful"), openai.UserMessage("read a.go and b")},
			}
			got := chatTurn(t, c, stream, params)
			ch := got.Choices[0]
			if ch.FinishReason != "tool_calls" || ch.Message.Content != "Reading both files." || len(ch.Message.ToolCalls) != 2 || got.Model != "gpt-unknown" {
				t.Fatalf("choice %+v model %q", ch, got.Model)
			}
			for _, tc := range ch.Message.ToolCalls {
				if tc.Type != "function" || tc.Function.Name != "read" || tc.Function.Arguments != parallelInputs[tc.ID] {
					t.Fatalf("tool call %s %s %s", tc.ID, tc.Function.Name, tc.Function.Arguments)
				}
			}
			if got.Usage.PromptTokens == 0 || got.Usage.TotalTokens != got.Usage.PromptTokens+got.Usage.CompletionTokens {
				t.Fatalf("usage %+v", got.Usage)
			}
			params.Messages = append(params.Messages, ch.Message.ToParam(),
				openai.ToolMessage("package a", "toolu_a"), openai.ToolMessage("error: not found", "toolu_b"))
			// Chat has no is_error, so the script's is_error: true expectation
			// must fail, naming the turn, with a 400 the SDK reports.
			res, err := c.Chat.Completions.New(context.Background(), params)
			var ae *openai.Error
			if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Message, "is_error true") {
				t.Fatalf("got %v %v, want the script's is_error expectation to fail over Chat, which cannot carry it", res, err)
			}
			reqs := srv.Requests()
			last := reqs[len(reqs)-1].Request
			if len(last.Messages) != 3 || len(last.Messages[2].Content) != 2 || last.Messages[2].Content[1].ToolUseID != "toolu_b" || last.System != "be careful" {
				t.Fatalf("tool messages should become one user message of tool_results: %+v", last)
			}
		})
	}
}

func TestOpenAIChatSecondTurnAfterToolResults(t *testing.T) {
	for _, stream := range []bool{false, true} {
		script := loadScript(t, "testdata/read_then_answer.yaml")
		_, url := startServer(t, script)
		c := openaiClient(url, 0)
		params := openai.ChatCompletionNewParams{Model: "gpt-x", Tools: []openai.ChatCompletionToolUnionParam{chatReadTool},
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("summarise README")}}
		first := chatTurn(t, c, stream, params)
		params.Messages = append(params.Messages, first.Choices[0].Message.ToParam(), openai.ToolMessage("# retrace", "toolu_1"))
		second := chatTurn(t, c, stream, params)
		if second.Choices[0].FinishReason != "stop" || !strings.Contains(second.Choices[0].Message.Content, "flight recorder") {
			t.Fatalf("stream=%v: %+v", stream, second.Choices[0])
		}
		if u := second.Usage; u.PromptTokens != 2400 || u.PromptTokensDetails.CachedTokens != 1000 || u.CompletionTokens != 20 {
			t.Fatalf("stream=%v: usage %+v, want prompt 2400 (cached included) and cached 1000", stream, u)
		}
		if err := script.Verify(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenAIChatRawStreamEndsWithUsageAndDone(t *testing.T) {
	_, url := startServer(t, loadScript(t, "testdata/parallel.yaml"))
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"go"}]}`
	res, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	frames := strings.Split(strings.TrimSpace(string(raw)), "\n\n")
	if frames[len(frames)-1] != "data: [DONE]" {
		t.Fatalf("last frame %q", frames[len(frames)-1])
	}
	if !strings.Contains(frames[0], `"role":"assistant"`) || !strings.Contains(frames[len(frames)-2], `"choices":[]`) || !strings.Contains(frames[len(frames)-3], `"finish_reason":"tool_calls"`) {
		t.Fatalf("frames %q", frames)
	}
	argChunks := 0
	for _, f := range frames {
		if strings.Contains(f, `"index":1,"function":{"arguments"`) {
			argChunks++
		}
	}
	if argChunks < 3 {
		t.Fatalf("the second call's arguments came in %d chunks, want several", argChunks)
	}
}

func TestOpenAIChatProtocolViolationsGet400WithTheRealErrorBody(t *testing.T) {
	assistant := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{}"}},{"id":"call_2","type":"function","function":{"name":"read","arguments":"{}"}}]}`
	user := `{"role":"user","content":"hi"}`
	msgs := func(m ...string) string { return `{"model":"m","messages":[` + strings.Join(m, ",") + `]}` }
	cases := []struct {
		name, body, want, param, code string
	}{
		{"a tool message without tool_call_id", msgs(user, assistant, `{"role":"tool","content":"x"}`), "Missing required parameter: 'messages[2].tool_call_id'.", "messages[2].tool_call_id", "missing_required_parameter"},
		{"a tool message answering an unknown id", msgs(user, assistant, `{"role":"tool","tool_call_id":"call_9","content":"x"}`), "must be a response to a preceeding message with 'tool_calls'", "messages.[2].role", ""},
		{"a tool message with no tool_calls before it", msgs(user, `{"role":"tool","tool_call_id":"call_1","content":"x"}`), "must be a response to a preceeding message", "messages.[1].role", ""},
		{"an assistant tool_calls left half answered", msgs(user, assistant, `{"role":"tool","tool_call_id":"call_1","content":"x"}`, user), "The following tool_call_ids did not have response messages: call_2", "messages.[1].role", ""},
		{"an assistant tool_calls at the end", msgs(user, assistant), "did not have response messages: call_1, call_2", "messages.[1].role", ""},
		{"an empty message list", msgs(), "empty array", "messages", "empty_array"},
		{"a missing model", `{"messages":[` + user + `]}`, "you must provide a model parameter", "model", ""},
	}
	_, url := startServer(t, loadScript(t, "testdata/repeat.yaml"))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			e := body.Error
			code := ""
			if e.Code != nil {
				code = *e.Code
			}
			if res.StatusCode != 400 || e.Type != "invalid_request_error" || !strings.Contains(e.Message, c.want) || e.Param == nil || *e.Param != c.param || code != c.code {
				t.Fatalf("status %d error %+v (param %v), want 400 containing %q with param %q code %q", res.StatusCode, e, e.Param, c.want, c.param, c.code)
			}
		})
	}
}

func TestOpenAIChatSDKRetriesA429WithRetryAfter(t *testing.T) {
	script := mustParse(t, "turns:\n  - fault: {status: 429, retry_after: 5ms}\n    content: [{text: finally}]\n")
	srv, url := startServer(t, script)
	c := openaiClient(url, 2)
	r, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if err != nil || r.Choices[0].Message.Content != "finally" {
		t.Fatalf("got %v %v", r, err)
	}
	if reqs := srv.Requests(); len(reqs) != 2 || reqs[0].Status != 429 {
		t.Fatalf("want a 429 then a success, got %d requests", len(reqs))
	}
}

func TestOpenAIChatCutToolCallStopsWithLength(t *testing.T) {
	for _, stream := range []bool{false, true} {
		_, url := startServer(t, mustParse(t, "turns:\n  - content:\n      - tool_use: {id: call_w, name: write, input: {file_path: a.txt, content: hello world hello world}}\n    fault: {max_tokens_in_tool_use: true}\n"))
		got := chatTurn(t, openaiClient(url, 0), stream, openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
		ch := got.Choices[0]
		if ch.FinishReason != "length" || len(ch.Message.ToolCalls) != 1 || json.Valid([]byte(ch.Message.ToolCalls[0].Function.Arguments)) {
			t.Fatalf("stream=%v: %+v, want finish length and cut arguments", stream, ch)
		}
	}
}

func responsesRead() responses.ToolUnionParam {
	return responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "read",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"file_path": map[string]any{"type": "string"}}}}}
}

// responsesTurn returns the response and, for streams, the tool arguments
// rebuilt from the delta events by item.
func responsesTurn(t *testing.T, c openai.Client, stream bool, params responses.ResponseNewParams) (*responses.Response, map[string]string) {
	t.Helper()
	ctx := context.Background()
	if !stream {
		r, err := c.Responses.New(ctx, params)
		if err != nil {
			t.Fatalf("Responses.New: %v", err)
		}
		return r, nil
	}
	s := c.Responses.NewStreaming(ctx, params)
	args := map[string]string{}
	var final *responses.Response
	seq := int64(-1)
	for s.Next() {
		ev := s.Current()
		if ev.SequenceNumber != seq+1 {
			t.Fatalf("sequence_number %d after %d", ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		switch ev.Type {
		case "response.function_call_arguments.delta":
			args[ev.ItemID] += ev.Delta
		case "response.completed", "response.incomplete":
			r := ev.Response
			final = &r
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if final == nil {
		t.Fatal("no response.completed event")
	}
	return final, args
}

func TestOpenAIResponsesSDKGetsTheScriptedTurnsStreamedAndNot(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "function calls then the answer as JSON", true: "function calls then the answer as SSE events"}[stream], func(t *testing.T) {
			script := loadScript(t, "testdata/read_then_answer.yaml")
			srv, url := startServer(t, script)
			c := openaiClient(url, 0)
			params := responses.ResponseNewParams{Model: "gpt-x", Instructions: openai.String("be careful"),
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("summarise the README")},
				Tools: []responses.ToolUnionParam{responsesRead()}}
			r, args := responsesTurn(t, c, stream, params)
			if r.Status != "completed" || len(r.Output) != 2 || r.OutputText() != "I'll read it." || r.Usage.InputTokens != 1200 {
				t.Fatalf("response %+v", r)
			}
			fc := r.Output[1]
			if fc.Type != "function_call" || fc.CallID != "toolu_1" || fc.Name != "read" || fc.Arguments.OfString != `{"file_path":"README.md"}` {
				t.Fatalf("function call %+v", fc)
			}
			if stream && args[fc.ID] != fc.Arguments.OfString {
				t.Fatalf("arguments rebuilt from deltas %q, want %q", args[fc.ID], fc.Arguments.OfString)
			}
			out := responses.ResponseInputItemParamOfFunctionCallOutput("# retrace")
			out.OfFunctionCallOutput.CallID = openai.String("toolu_1")
			params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage("summarise the README", responses.EasyInputMessageRoleUser),
				responses.ResponseInputItemParamOfFunctionCall(fc.Arguments.OfString, fc.CallID, fc.Name),
				out,
			}}
			r2, _ := responsesTurn(t, c, stream, params)
			if !strings.Contains(r2.OutputText(), "flight recorder") || r2.Usage.InputTokensDetails.CachedTokens != 1000 {
				t.Fatalf("second response %+v", r2)
			}
			if err := script.Verify(); err != nil {
				t.Fatal(err)
			}
			last := srv.Requests()[1].Request
			if last.System != "be careful" || len(last.Messages) != 3 || last.Messages[2].Content[0].Type != trajectory.BlockToolResult {
				t.Fatalf("decoded %+v", last)
			}
		})
	}
}

func TestOpenAIResponsesCutCallIsIncomplete(t *testing.T) {
	_, url := startServer(t, mustParse(t, "turns:\n  - content:\n      - tool_use: {id: call_w, name: write, input: {file_path: a.txt, content: hello world hello world}}\n    fault: {max_tokens_in_tool_use: true}\n"))
	r, _ := responsesTurn(t, openaiClient(url, 0), true, responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" {
		t.Fatalf("status %q reason %q", r.Status, r.IncompleteDetails.Reason)
	}
}

func TestOpenAIResponsesProtocolViolations(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"an output for a call that was never made", `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"call_9","output":"x"}]}`, "No tool call found for function call output with call_id call_9."},
		{"a call without its output", `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"call_1","name":"read","arguments":"{}"}]}`, "No tool output found for function call call_1."},
		{"no input at all", `{"model":"m"}`, "Missing required parameter: 'input'."},
	}
	_, url := startServer(t, loadScript(t, "testdata/repeat.yaml"))
	c := openaiClient(url, 0)
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			err := c.Post(context.Background(), "responses", json.RawMessage(cs.body), nil)
			var ae *openai.Error
			if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Type != "invalid_request_error" || !strings.Contains(ae.Message, cs.want) {
				t.Fatalf("got %v, want a 400 saying %q", err, cs.want)
			}
		})
	}
}

func TestOpenAIModelsListTheScriptModel(t *testing.T) {
	_, url := startServer(t, loadScript(t, "testdata/read_then_answer.yaml"))
	c := openaiClient(url, 0)
	page, err := c.Models.List(context.Background())
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != "mock-1" {
		t.Fatalf("models %+v %v", page, err)
	}
}
