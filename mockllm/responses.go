package mockllm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/retrace-dev/retrace/agent/llm"
	schemadialect "github.com/retrace-dev/retrace/agent/llm/dialect"
	"github.com/retrace-dev/retrace/trajectory"
)

// checkStrict answers a strict function whose schema strict mode cannot
// take the way the API does, with a 400 naming the function, so that a
// client sending an MCP server's oneOf as strict fails here as it would
// against the real API instead of passing unnoticed.
func checkStrict(param, name string, strict *bool, schema json.RawMessage) *apiError {
	if strict == nil || !*strict {
		return nil
	}
	if err := schemadialect.CheckOpenAIStrict(schema); err != nil {
		return oaiInvalid(param, "invalid_function_parameters", "Invalid schema for function '%s': %v.", name, err)
	}
	return nil
}

// responsesDialect is the OpenAI Responses API.
type responsesDialect struct{}

type rRequest struct {
	Model              *string         `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	Tools              []rTool         `json:"tools"`
	Stream             bool            `json:"stream"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Temperature        *float64        `json:"temperature"`
	PreviousResponseID *string         `json:"previous_response_id"`
}

type rItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

type rTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

func (responsesDialect) requestIDHeader() string { return "X-Request-Id" }

func (responsesDialect) decode(body []byte, _ http.Header) (*llm.Request, bool, wireOptions, *apiError) {
	var rr rRequest
	if err := json.Unmarshal(body, &rr); err != nil {
		return nil, false, wireOptions{}, jsonError(err)
	}
	req := &llm.Request{Temperature: rr.Temperature,
		// OpenAI caches every long prefix without being asked.
		Cache: &llm.Cache{Automatic: true}}
	if rr.Model == nil || *rr.Model == "" {
		return req, rr.Stream, wireOptions{}, oaiInvalid("model", "missing_required_parameter", "Missing required parameter: 'model'.")
	}
	req.Model = *rr.Model
	if rr.MaxOutputTokens != nil {
		req.MaxTokens = *rr.MaxOutputTokens
	}
	for i, t := range rr.Tools {
		if t.Type != "function" {
			continue // hosted tools (web_search, file_search, ...) are accepted and not modelled
		}
		if t.Name == "" {
			return req, rr.Stream, wireOptions{}, oaiInvalid(fmt.Sprintf("tools[%d].name", i), "missing_required_parameter", "Missing required parameter: 'tools[%d].name'.", i)
		}
		if e := checkStrict(fmt.Sprintf("tools[%d].parameters", i), t.Name, t.Strict, t.Parameters); e != nil {
			return req, rr.Stream, wireOptions{}, e
		}
		req.Tools = append(req.Tools, llm.ToolDef{Name: t.Name, Description: t.Description, Schema: t.Parameters})
	}
	var system []string
	if rr.Instructions != nil && *rr.Instructions != "" {
		system = append(system, *rr.Instructions)
	}
	items, e := responsesInput(rr.Input)
	if e != nil {
		return req, rr.Stream, wireOptions{}, e
	}
	calls := map[string]bool{}
	answered := map[string]bool{}
	var order []string
	for i, it := range items {
		n := len(req.Messages)
		switch it.Type {
		case "", "message":
			text, e := partsText(it.Content, fmt.Sprintf("input[%d].content", i))
			if e != nil {
				return req, rr.Stream, wireOptions{}, e
			}
			switch it.Role {
			case "system", "developer":
				system = append(system, text)
			case "user", "assistant":
				req.Messages = append(req.Messages, trajectory.Message{Role: trajectory.Role(it.Role),
					Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: text}}})
			default:
				return req, rr.Stream, wireOptions{}, oaiInvalid(fmt.Sprintf("input[%d].role", i), "invalid_value", "Invalid value: '%s'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", it.Role)
			}
		case "function_call":
			if it.CallID == "" {
				return req, rr.Stream, wireOptions{}, oaiInvalid(fmt.Sprintf("input[%d].call_id", i), "missing_required_parameter", "Missing required parameter: 'input[%d].call_id'.", i)
			}
			b := trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: it.CallID, Name: it.Name}
			if isJSONObject([]byte(it.Arguments)) {
				b.Input = json.RawMessage(it.Arguments)
			} else {
				b.PartialInput = it.Arguments
			}
			if n > 0 && req.Messages[n-1].Role == trajectory.RoleAssistant {
				req.Messages[n-1].Content = append(req.Messages[n-1].Content, b)
			} else {
				req.Messages = append(req.Messages, trajectory.Message{Role: trajectory.RoleAssistant, Content: []trajectory.ContentBlock{b}})
			}
			calls[it.CallID] = true
			order = append(order, it.CallID)
		case "function_call_output":
			if !calls[it.CallID] && rr.PreviousResponseID == nil {
				return req, rr.Stream, wireOptions{}, oaiInvalid("input", "", "No tool call found for function call output with call_id %s.", it.CallID)
			}
			answered[it.CallID] = true
			out, e := partsText(it.Output, fmt.Sprintf("input[%d].output", i))
			if e != nil {
				return req, rr.Stream, wireOptions{}, e
			}
			b := trajectory.ContentBlock{Type: trajectory.BlockToolResult, ToolUseID: it.CallID, Content: out}
			if n > 0 && req.Messages[n-1].Role == trajectory.RoleUser && req.Messages[n-1].Content[0].Type == trajectory.BlockToolResult {
				req.Messages[n-1].Content = append(req.Messages[n-1].Content, b)
			} else {
				req.Messages = append(req.Messages, trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{b}})
			}
		}
		// Other item types (reasoning, item_reference, hosted tool calls)
		// are accepted and not modelled.
	}
	for _, id := range order {
		if !answered[id] {
			return req, rr.Stream, wireOptions{}, oaiInvalid("input", "", "No tool output found for function call %s.", id)
		}
	}
	req.System = strings.Join(system, "\n\n")
	return req, rr.Stream, wireOptions{}, nil
}

// responsesInput decodes input, which is a string or a list of items.
func responsesInput(raw json.RawMessage) ([]rItem, *apiError) {
	text, _, isText, e := textOrBlocks(raw, "input")
	if isText {
		content, _ := json.Marshal(text)
		return []rItem{{Type: "message", Role: "user", Content: content}}, nil
	}
	if isNull(raw) {
		return nil, oaiInvalid("input", "missing_required_parameter", "Missing required parameter: 'input'.")
	}
	if e != nil {
		return nil, oaiInvalid("input", "invalid_type", "Invalid type for 'input': expected a string or an array of input items.")
	}
	var items []rItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, oaiInvalid("input", "invalid_type", "Invalid type for 'input': expected a string or an array of input items.")
	}
	return items, nil
}

// responsesStatus maps a stop reason onto the response status and
// incomplete reason; a missing one leaves the status null.
func responsesStatus(raw string) (status any, incomplete any) {
	switch raw {
	case "":
		return nil, nil
	case "end_turn", "tool_use", "stop_sequence":
		return "completed", nil
	case "max_tokens", "model_context_window_exceeded":
		return "incomplete", map[string]string{"reason": "max_output_tokens"}
	case "refusal":
		return "incomplete", map[string]string{"reason": "content_filter"}
	}
	return raw, nil
}

// responsesItems renders the reply's output items, in order.
func responsesItems(x *exchange, r *llm.Response) []map[string]any {
	var items []map[string]any
	for i := range r.Content {
		b := &r.Content[i]
		switch b.Type {
		case trajectory.BlockText:
			items = append(items, map[string]any{"id": x.s.newID("msg_"), "type": "message", "status": "completed", "role": "assistant",
				"content": []any{outputText(b.Text)}})
		case trajectory.BlockToolUse:
			status := "completed"
			if len(b.Input) == 0 {
				status = "incomplete"
			}
			items = append(items, map[string]any{"id": x.s.newID("fc_"), "type": "function_call", "status": status,
				"call_id": b.ID, "name": b.Name, "arguments": toolArguments(b)})
		}
	}
	if items == nil {
		items = []map[string]any{}
	}
	return items
}

func outputText(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

func responsesUsage(u trajectory.Usage) map[string]any {
	in := u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens
	return map[string]any{
		"input_tokens": in, "input_tokens_details": map[string]any{"cached_tokens": u.CacheReadTokens},
		"output_tokens": u.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": in + u.OutputTokens,
	}
}

func responseObject(x *exchange, id string, r *llm.Response, items []map[string]any, status, incomplete, usage any) map[string]any {
	return map[string]any{
		"id": id, "object": "response", "created_at": x.s.opts.Now().Unix(), "status": status,
		"error": nil, "incomplete_details": incomplete, "instructions": nil, "max_output_tokens": nil,
		"model": r.Model, "output": items, "parallel_tool_calls": true, "previous_response_id": nil,
		"temperature": 1.0, "tool_choice": "auto", "tools": []any{}, "top_p": 1.0,
		"text": map[string]any{"format": map[string]any{"type": "text"}}, "metadata": map[string]any{},
		"usage": usage,
	}
}

func (responsesDialect) writeJSON(x *exchange, rep *Reply) {
	r := &rep.Response
	status, incomplete := responsesStatus(r.StopReasonRaw)
	out := responseObject(x, x.s.newID("resp_"), r, responsesItems(x, r), status, incomplete, responsesUsage(r.Usage))
	x.writeJSONBody(out, rep.Fault.MalformedSSE)
}

const rBrokenFrame = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":\n\n"

func (responsesDialect) writeSSE(x *exchange, rep *Reply, _ wireOptions) {
	r := &rep.Response
	s := newSSE(x, rep.Fault)
	seq := 0
	emit := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		s.event(typ, fields)
	}
	id := x.s.newID("resp_")
	items := responsesItems(x, r)
	emit("response.created", map[string]any{"response": responseObject(x, id, r, []map[string]any{}, "in_progress", nil, nil)})
	emit("response.in_progress", map[string]any{"response": responseObject(x, id, r, []map[string]any{}, "in_progress", nil, nil)})
	first := true
	mid := func() bool {
		if !first {
			return s.alive()
		}
		first = false
		return s.midpoint(rep.Fault, rBrokenFrame)
	}
	if len(items) == 0 && !mid() {
		return
	}
	for k, item := range items {
		itemID := item["id"]
		switch item["type"] {
		case "message":
			text := item["content"].([]any)[0].(map[string]any)["text"].(string)
			emit("response.output_item.added", map[string]any{"output_index": k, "item": map[string]any{
				"id": itemID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
			emit("response.content_part.added", map[string]any{"item_id": itemID, "output_index": k, "content_index": 0, "part": outputText("")})
			for _, c := range chunks(text) {
				emit("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": k, "content_index": 0, "delta": c, "logprobs": []any{}})
				if !mid() {
					return
				}
			}
			emit("response.output_text.done", map[string]any{"item_id": itemID, "output_index": k, "content_index": 0, "text": text, "logprobs": []any{}})
			emit("response.content_part.done", map[string]any{"item_id": itemID, "output_index": k, "content_index": 0, "part": outputText(text)})
		case "function_call":
			args := item["arguments"].(string)
			emit("response.output_item.added", map[string]any{"output_index": k, "item": map[string]any{
				"id": itemID, "type": "function_call", "status": "in_progress", "call_id": item["call_id"], "name": item["name"], "arguments": ""}})
			for _, c := range chunks(args) {
				emit("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": k, "delta": c})
				if !mid() {
					return
				}
			}
			emit("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": k, "name": item["name"], "arguments": args})
		}
		emit("response.output_item.done", map[string]any{"output_index": k, "item": item})
	}
	status, incomplete := responsesStatus(r.StopReasonRaw)
	final := "response.completed"
	if status == "incomplete" {
		final = "response.incomplete"
	}
	if !x.answer() {
		return // not recorded: the stream ends without its last frame
	}
	emit(final, map[string]any{"response": responseObject(x, id, r, items, status, incomplete, responsesUsage(r.Usage))})
}

func (responsesDialect) writeError(x *exchange, e *apiError) { writeOpenAIError(x, e) }
