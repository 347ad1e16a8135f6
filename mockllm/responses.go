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

// responsesStatus maps a stop reason onto the response status and the
// reason it is incomplete; "" is null (a missing stop reason leaves the
// status null).
func responsesStatus(raw string) (status, incomplete string) {
	switch raw {
	case "":
		return "", ""
	case "end_turn", "tool_use", "stop_sequence":
		return "completed", ""
	case "max_tokens", "model_context_window_exceeded":
		return "incomplete", "max_output_tokens"
	case "refusal":
		return "incomplete", "content_filter"
	}
	return raw, ""
}

// responsesItems lists the reply's output items, in order.
func responsesItems(x *exchange, r *llm.Response) []rOutItem {
	items := make([]rOutItem, 0, len(r.Content))
	for i := range r.Content {
		b := &r.Content[i]
		switch b.Type {
		case trajectory.BlockText:
			items = append(items, rOutItem{id: x.s.newID("msg_"), text: b.Text})
		case trajectory.BlockToolUse:
			items = append(items, rOutItem{id: x.s.newID("fc_"), call: true, incomplete: len(b.Input) == 0,
				callID: b.ID, name: b.Name, args: toolArguments(b)})
		}
	}
	return items
}

func (responsesDialect) writeJSON(x *exchange, rep *Reply) {
	r := &rep.Response
	status, incomplete := responsesStatus(r.StopReasonRaw)
	head := rResponse{id: x.s.newID("resp_"), created: x.s.opts.Now().Unix(), model: r.Model}
	x.writeRawJSONBody(head.append(nil, status, incomplete, responsesItems(x, r), &r.Usage), rep.Fault.MalformedSSE)
}

const rBrokenFrame = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":\n\n"

// rStream numbers the events of one streamed reply.
type rStream struct {
	s   *sse
	seq int
}

// send ends the event appended after the frame header and counts it.
func (st *rStream) send(data []byte) {
	st.s.endFrame(data)
	st.seq++
}

func (responsesDialect) writeSSE(x *exchange, rep *Reply, _ wireOptions) {
	r := &rep.Response
	st := rStream{s: newSSE(x, rep.Fault)}
	s := st.s
	head := rResponse{id: x.s.newID("resp_"), created: x.s.opts.Now().Unix(), model: r.Model}
	items := responsesItems(x, r)
	for _, typ := range []string{"response.created", "response.in_progress"} {
		st.send(appendRResponseEvent(s.frame(typ), st.seq, typ, &head, "in_progress", "", nil, nil))
	}
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
	for k := range items {
		it := &items[k]
		st.send(appendRItemAdded(s.frame(rItemAdded), st.seq, k, it))
		if !it.call {
			st.send(appendRPart(s.frame(rPartAdded), st.seq, rPartAdded, k, it.id, ""))
			for _, c := range chunks(it.text) {
				st.send(appendRTextDelta(s.frame(rTextDelta), st.seq, k, it.id, c))
				if !mid() {
					return
				}
			}
			st.send(appendRTextDone(s.frame(rTextDone), st.seq, k, it.id, it.text))
			st.send(appendRPart(s.frame(rPartDone), st.seq, rPartDone, k, it.id, it.text))
		} else {
			for _, c := range chunks(it.args) {
				st.send(appendRArgsDelta(s.frame(rArgsDelta), st.seq, k, it.id, c))
				if !mid() {
					return
				}
			}
			st.send(appendRArgsDone(s.frame(rArgsDone), st.seq, k, it))
		}
		st.send(appendRItemDone(s.frame(rItemDone), st.seq, k, it))
	}
	status, incomplete := responsesStatus(r.StopReasonRaw)
	final := "response.completed"
	if status == "incomplete" {
		final = "response.incomplete"
	}
	if !x.answer() {
		return // not recorded: the stream ends without its last frame
	}
	st.send(appendRResponseEvent(s.frame(final), st.seq, final, &head, status, incomplete, items, &r.Usage))
}

func (responsesDialect) writeError(x *exchange, e *apiError) { writeOpenAIError(x, e) }
