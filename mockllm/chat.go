package mockllm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// chatDialect is the OpenAI Chat Completions API.
type chatDialect struct{}

type cRequest struct {
	Model               *string     `json:"model"`
	Messages            []cMessage  `json:"messages"`
	Tools               []cTool     `json:"tools"`
	Stream              bool        `json:"stream"`
	StreamOptions       *cStreamOpt `json:"stream_options"`
	MaxTokens           *int        `json:"max_tokens"`
	MaxCompletionTokens *int        `json:"max_completion_tokens"`
	Temperature         *float64    `json:"temperature"`
}

type cStreamOpt struct {
	IncludeUsage bool `json:"include_usage"`
}

type cMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []cToolCall     `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
}

type cToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type cTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

type cPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (chatDialect) requestIDHeader() string { return "X-Request-Id" }

func oaiInvalid(param, code, format string, args ...any) *apiError {
	e := invalidf(param, format, args...)
	e.code = code
	return e
}

// partsText decodes content that is a string, a list of parts, or null.
func partsText(raw json.RawMessage, field string) (string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", jsonError(err)
		}
		return s, nil
	}
	var parts []cPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", oaiInvalid(field, "invalid_type", "Invalid type for '%s': expected a string or an array of content parts.", field)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "input_text" || p.Type == "output_text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

func (chatDialect) decode(body []byte, _ http.Header) (*llm.Request, bool, wireOptions, *apiError) {
	var cr cRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		e := jsonError(err)
		return nil, false, wireOptions{}, e
	}
	wo := wireOptions{includeUsage: cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage}
	req := &llm.Request{Temperature: cr.Temperature,
		// OpenAI caches every long prefix without being asked.
		Cache: &llm.Cache{Automatic: true}}
	if cr.Model == nil || *cr.Model == "" {
		return req, cr.Stream, wo, oaiInvalid("model", "", "you must provide a model parameter")
	}
	req.Model = *cr.Model
	if cr.MaxCompletionTokens != nil {
		req.MaxTokens = *cr.MaxCompletionTokens
	} else if cr.MaxTokens != nil {
		req.MaxTokens = *cr.MaxTokens
	}
	for i, t := range cr.Tools {
		if t.Type != "function" {
			continue // custom and hosted tools are accepted and not modelled
		}
		if t.Function == nil || t.Function.Name == "" {
			return req, cr.Stream, wo, oaiInvalid(fmt.Sprintf("tools[%d].function.name", i), "missing_required_parameter", "Missing required parameter: 'tools[%d].function.name'.", i)
		}
		if e := checkStrict(fmt.Sprintf("tools[%d].function.parameters", i), t.Function.Name, t.Function.Strict, t.Function.Parameters); e != nil {
			return req, cr.Stream, wo, e
		}
		req.Tools = append(req.Tools, llm.ToolDef{Name: t.Function.Name, Description: t.Function.Description, Schema: t.Function.Parameters})
	}
	if len(cr.Messages) == 0 {
		return req, cr.Stream, wo, oaiInvalid("messages", "empty_array", "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	var system []string
	pending := map[string]bool{} // tool_call ids of the last assistant message still unanswered
	pendingAt := -1
	unanswered := func() *apiError {
		if len(pending) == 0 {
			return nil
		}
		var ids []string
		for _, tc := range cr.Messages[pendingAt].ToolCalls {
			if pending[tc.ID] {
				ids = append(ids, tc.ID)
			}
		}
		return oaiInvalid(fmt.Sprintf("messages.[%d].role", pendingAt), "", "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(ids, ", "))
	}
	for i, m := range cr.Messages {
		if m.Role != "tool" {
			if e := unanswered(); e != nil {
				return req, cr.Stream, wo, e
			}
			pendingAt = -1
		}
		text, e := partsText(m.Content, fmt.Sprintf("messages[%d].content", i))
		if e != nil {
			return req, cr.Stream, wo, e
		}
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "user":
			req.Messages = append(req.Messages, trajectory.Message{Role: trajectory.RoleUser,
				Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: text}}})
		case "assistant":
			msg := trajectory.Message{Role: trajectory.RoleAssistant, Content: []trajectory.ContentBlock{}}
			if text != "" {
				msg.Content = append(msg.Content, trajectory.ContentBlock{Type: trajectory.BlockText, Text: text})
			}
			for j, tc := range m.ToolCalls {
				if tc.ID == "" {
					return req, cr.Stream, wo, oaiInvalid(fmt.Sprintf("messages[%d].tool_calls[%d].id", i, j), "missing_required_parameter", "Missing required parameter: 'messages[%d].tool_calls[%d].id'.", i, j)
				}
				b := trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: tc.ID, Name: tc.Function.Name}
				if args := []byte(tc.Function.Arguments); isJSONObject(args) {
					b.Input = args
				} else {
					b.PartialInput = tc.Function.Arguments
				}
				msg.Content = append(msg.Content, b)
				pending[tc.ID] = true
				pendingAt = i
			}
			req.Messages = append(req.Messages, msg)
		case "tool":
			if m.ToolCallID == nil {
				return req, cr.Stream, wo, oaiInvalid(fmt.Sprintf("messages[%d].tool_call_id", i), "missing_required_parameter", "Missing required parameter: 'messages[%d].tool_call_id'.", i)
			}
			if pendingAt < 0 || !pending[*m.ToolCallID] {
				return req, cr.Stream, wo, oaiInvalid(fmt.Sprintf("messages.[%d].role", i), "", "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			}
			delete(pending, *m.ToolCallID)
			res := trajectory.ContentBlock{Type: trajectory.BlockToolResult, ToolUseID: *m.ToolCallID, Content: text}
			// Consecutive tool messages are one user message of tool_results
			// in the neutral form, as Anthropic sends them.
			if n := len(req.Messages); cr.Messages[i-1].Role == "tool" && n > 0 {
				req.Messages[n-1].Content = append(req.Messages[n-1].Content, res)
			} else {
				req.Messages = append(req.Messages, trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{res}})
			}
		case "function":
			// The deprecated function role is accepted and not modelled.
		default:
			return req, cr.Stream, wo, oaiInvalid(fmt.Sprintf("messages[%d].role", i), "invalid_value", "Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role)
		}
	}
	if e := unanswered(); e != nil {
		return req, cr.Stream, wo, e
	}
	req.System = strings.Join(system, "\n\n")
	return req, cr.Stream, wo, nil
}

func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// openAIFinish translates an Anthropic stop reason into a Chat
// finish_reason; unknown values pass through so clients see them as such.
func openAIFinish(raw string) *string {
	var s string
	switch raw {
	case "":
		return nil
	case "end_turn", "stop_sequence":
		s = "stop"
	case "tool_use":
		s = "tool_calls"
	case "max_tokens", "model_context_window_exceeded":
		s = "length"
	case "refusal":
		s = "content_filter"
	default:
		s = raw
	}
	return &s
}

type cUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
		AudioTokens  int64 `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
		AudioTokens     int64 `json:"audio_tokens"`
	} `json:"completion_tokens_details"`
}

// cUsageOf converts usage: OpenAI's prompt_tokens include the cached ones,
// the neutral InputTokens do not.
func cUsageOf(u trajectory.Usage) cUsage {
	var c cUsage
	c.PromptTokens = u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens
	c.CompletionTokens = u.OutputTokens
	c.TotalTokens = c.PromptTokens + c.CompletionTokens
	c.PromptTokensDetails.CachedTokens = u.CacheReadTokens
	return c
}

type cFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type cOutToolCall struct {
	Index    *int      `json:"index,omitempty"`
	ID       string    `json:"id,omitempty"`
	Type     string    `json:"type,omitempty"`
	Function cFunction `json:"function"`
}

type cOutMessage struct {
	Role        string         `json:"role"`
	Content     *string        `json:"content"`
	Refusal     *string        `json:"refusal"`
	ToolCalls   []cOutToolCall `json:"tool_calls,omitempty"`
	Annotations []any          `json:"annotations"`
}

type cChoice struct {
	Index        int          `json:"index"`
	Message      *cOutMessage `json:"message,omitempty"`
	Delta        *cDelta      `json:"delta,omitempty"`
	Logprobs     *struct{}    `json:"logprobs"`
	FinishReason *string      `json:"finish_reason"`
}

type cDelta struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	Refusal   *string        `json:"refusal,omitempty"`
	ToolCalls []cOutToolCall `json:"tool_calls,omitempty"`
}

type cCompletion struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	Choices           []cChoice       `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
	ServiceTier       string          `json:"service_tier,omitempty"`
	SystemFingerprint *string         `json:"system_fingerprint"`
}

func toolArguments(b *trajectory.ContentBlock) string {
	if len(b.Input) > 0 {
		return string(b.Input)
	}
	return b.PartialInput
}

func (chatDialect) writeJSON(x *exchange, rep *Reply) {
	r := &rep.Response
	msg := &cOutMessage{Role: "assistant", Annotations: []any{}}
	var text strings.Builder
	hasText := false
	for i := range r.Content {
		b := &r.Content[i]
		switch b.Type {
		case trajectory.BlockText:
			text.WriteString(b.Text)
			hasText = true
		case trajectory.BlockToolUse:
			msg.ToolCalls = append(msg.ToolCalls, cOutToolCall{ID: b.ID, Type: "function",
				Function: cFunction{Name: b.Name, Arguments: toolArguments(b)}})
		}
	}
	if hasText {
		s := text.String()
		msg.Content = &s
	}
	usage, _ := json.Marshal(cUsageOf(r.Usage))
	out := cCompletion{ID: x.s.newID("chatcmpl-"), Object: "chat.completion", Created: x.s.opts.Now().Unix(), Model: r.Model,
		Choices: []cChoice{{Message: msg, FinishReason: openAIFinish(r.StopReasonRaw)}}, Usage: usage, ServiceTier: "default"}
	x.writeJSONBody(out, rep.Fault.MalformedSSE)
}

const cBrokenFrame = "data: {\"id\":\"chatcmpl-broken\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\n\n"

func (chatDialect) writeSSE(x *exchange, rep *Reply, wo wireOptions) {
	r := &rep.Response
	s := newSSE(x, rep.Fault)
	id, created := x.s.newID("chatcmpl-"), x.s.opts.Now().Unix()
	cc := newChatChunk(id, created, r.Model, wo.includeUsage)
	s.endFrame(cc.appendRole(s.frame("")))
	first := true
	mid := func() bool {
		if !first {
			return s.alive()
		}
		first = false
		return s.midpoint(rep.Fault, cBrokenFrame)
	}
	if len(r.Content) == 0 && !mid() {
		return
	}
	call := 0
	for i := range r.Content {
		b := &r.Content[i]
		switch b.Type {
		case trajectory.BlockText:
			for _, c := range chunks(b.Text) {
				s.endFrame(cc.appendContent(s.frame(""), c))
				if !mid() {
					return
				}
			}
		case trajectory.BlockToolUse:
			idx := call
			call++
			s.endFrame(cc.appendToolCallStart(s.frame(""), idx, b.ID, b.Name))
			for _, c := range chunks(toolArguments(b)) {
				s.endFrame(cc.appendToolCallArgs(s.frame(""), idx, c))
				if !mid() {
					return
				}
			}
		}
	}
	s.endFrame(cc.appendFinish(s.frame(""), openAIFinish(r.StopReasonRaw)))
	if wo.includeUsage {
		usage, _ := json.Marshal(cUsageOf(r.Usage))
		s.event("", cCompletion{ID: id, Object: "chat.completion.chunk", Created: created, Model: r.Model,
			Choices: []cChoice{}, Usage: usage, ServiceTier: "default"})
	}
	s.last("", "[DONE]")
}

func (chatDialect) writeError(x *exchange, e *apiError) {
	writeOpenAIError(x, e)
}

// writeOpenAIError writes the error body both OpenAI APIs use.
func writeOpenAIError(x *exchange, e *apiError) {
	typ := "invalid_request_error"
	code := e.code
	switch e.kind {
	case errRateLimit:
		typ, code = "requests", "rate_limit_exceeded"
	case errServer, errOverloaded:
		typ = "server_error"
	case errAuth:
		code = "invalid_api_key"
	case errNotFound:
		code = "unknown_url"
	}
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	b := body{Message: e.msg, Type: typ}
	if e.param != "" {
		b.Param = &e.param
	}
	if code != "" {
		b.Code = &code
	}
	out, _ := json.Marshal(map[string]body{"error": b})
	x.w.Header().Set("Content-Type", "application/json")
	x.w.Header().Set("Openai-Processing-Ms", "1")
	x.w.WriteHeader(e.status)
	_, _ = x.w.Write(out)
}
