package mockllm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// anthropicDialect is the Anthropic Messages API.
type anthropicDialect struct{}

type aRequest struct {
	Model       *string         `json:"model"`
	MaxTokens   *int            `json:"max_tokens"`
	System      json.RawMessage `json:"system"`
	Messages    []aMessage      `json:"messages"`
	Tools       []aTool         `json:"tools"`
	Stream      bool            `json:"stream"`
	Temperature *float64        `json:"temperature"`
}

type aMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type aBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Thinking  string          `json:"thinking"`
	// CacheControl is a prompt-cache breakpoint on this block.
	CacheControl json.RawMessage `json:"cache_control"`
}

type aTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	// CacheControl is a prompt-cache breakpoint after this tool.
	CacheControl json.RawMessage `json:"cache_control"`
}

func (anthropicDialect) requestIDHeader() string { return "Request-Id" }

// jsonError words a decoding error the way the API's validator does.
func jsonError(err error) *apiError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "body"
		}
		return invalidf(field, "%s: Input should be a valid %s (got a JSON %s)", field, jsonTypeName(te.Type.Kind().String()), te.Value)
	}
	return invalidf("", "the request body is not valid JSON: %v", err)
}

func jsonTypeName(kind string) string {
	switch kind {
	case "slice":
		return "list"
	case "struct", "map":
		return "object"
	case "int", "int64", "float64":
		return "number"
	case "bool":
		return "boolean"
	}
	return kind
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// textOrBlocks decodes a field that is a string or a list of blocks.
func textOrBlocks(raw json.RawMessage, field string) (text string, blocks []aBlock, isText bool, e *apiError) {
	raw = bytes.TrimSpace(raw)
	if isNull(raw) {
		return "", nil, false, nil
	}
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", nil, false, jsonError(err)
		}
		return text, nil, true, nil
	}
	if raw[0] != '[' {
		return "", nil, false, invalidf(field, "%s: Input should be a valid string or a list of content blocks", field)
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", nil, false, invalidf(field, "%s: %v", field, jsonError(err).msg)
	}
	return "", blocks, false, nil
}

func (d anthropicDialect) decode(body []byte, h http.Header) (*llm.Request, bool, wireOptions, *apiError) {
	var ar aRequest
	if err := json.Unmarshal(body, &ar); err != nil {
		return nil, false, wireOptions{}, jsonError(err)
	}
	req, e := d.neutral(&ar, true, systemMessagesAllowed(h))
	return req, ar.Stream, wireOptions{}, e
}

// decodeCount decodes a count_tokens body, which has no max_tokens.
func (d anthropicDialect) decodeCount(body []byte, h http.Header) (*llm.Request, bool, wireOptions, *apiError) {
	var ar aRequest
	if err := json.Unmarshal(body, &ar); err != nil {
		return nil, false, wireOptions{}, jsonError(err)
	}
	req, e := d.neutral(&ar, false, systemMessagesAllowed(h))
	return req, false, wireOptions{}, e
}

// systemBetas are the anthropic-beta values under which a request may
// carry role "system" messages among its messages. Claude Code sends both
// with such messages, and sends neither (and no such message) when it
// retries a rejected request in its downgraded form, so either one allows
// them; without them the role is rejected as the API rejects it.
var systemBetas = []string{"per-turn-control-2026-07-01", "mid-conversation-tool-changes-2026-07-01"}

// systemMessagesAllowed reports whether the request's anthropic-beta
// header enables role "system" messages.
func systemMessagesAllowed(h http.Header) bool {
	for _, v := range h.Values("Anthropic-Beta") {
		for _, b := range strings.Split(v, ",") {
			if slices.Contains(systemBetas, strings.TrimSpace(b)) {
				return true
			}
		}
	}
	return false
}

// neutral validates ar and turns it into the neutral request. With
// systemMsgs, role "system" messages are accepted: their text joins the
// request's system prompt (the neutral form has no system role, as the
// OpenAI dialects fold system and developer messages the same way) and
// they take no place in the message list, so the tool_use/tool_result
// pairing is checked on the user and assistant messages around them.
func (anthropicDialect) neutral(ar *aRequest, needMaxTokens, systemMsgs bool) (*llm.Request, *apiError) {
	req := &llm.Request{Temperature: ar.Temperature}
	if ar.Model == nil || *ar.Model == "" {
		return req, invalidf("model", "model: Field required")
	}
	req.Model = *ar.Model
	if ar.MaxTokens != nil {
		req.MaxTokens = *ar.MaxTokens
	} else if needMaxTokens {
		return req, invalidf("max_tokens", "max_tokens: Field required")
	}
	if req.MaxTokens < 0 || (needMaxTokens && req.MaxTokens == 0) {
		return req, invalidf("max_tokens", "max_tokens: Input should be greater than or equal to 1")
	}
	sys, sysBlocks, _, e := textOrBlocks(ar.System, "system")
	if e != nil {
		return req, e
	}
	var sb strings.Builder
	sb.WriteString(sys)
	var cache cacheMarks
	for i, b := range sysBlocks {
		if b.Type != "text" {
			return req, invalidf("system", "system.%d.type: Input should be 'text'", i)
		}
		// The neutral form joins the system blocks into one, so a
		// breakpoint on any of them counts as one after the system prompt.
		if e := cache.mark(b.CacheControl, fmt.Sprintf("system.%d", i), llm.CachePoint{Part: llm.CacheSystem}); e != nil {
			return req, e
		}
		if i > 0 {
			sb.WriteString("\n\n")
		}
		sb.WriteString(b.Text)
	}
	for i, t := range ar.Tools {
		if t.Name == "" {
			return req, invalidf("tools", "tools.%d.name: Field required", i)
		}
		if (t.Type == "" || t.Type == "custom") && isNull(t.InputSchema) {
			return req, invalidf("tools", "tools.%d.custom.input_schema: Field required", i)
		}
		if e := cache.mark(t.CacheControl, fmt.Sprintf("tools.%d", i), llm.CachePoint{Part: llm.CacheTools, Index: len(req.Tools)}); e != nil {
			return req, e
		}
		req.Tools = append(req.Tools, llm.ToolDef{Name: t.Name, Description: t.Description, Schema: t.InputSchema})
	}
	if len(ar.Messages) == 0 {
		return req, invalidf("messages", "messages: at least one message is required")
	}
	for i, m := range ar.Messages {
		if m.Role == "system" && systemMsgs {
			text, e := systemMessageText(m.Content, i)
			if e != nil {
				return req, e
			}
			if sb.Len() > 0 {
				sb.WriteString("\n\n")
			}
			sb.WriteString(text)
			continue
		}
		if m.Role != "user" && m.Role != "assistant" {
			return req, invalidf("messages", "messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		msg := trajectory.Message{Role: trajectory.Role(m.Role), Content: []trajectory.ContentBlock{}}
		text, blocks, isText, e := textOrBlocks(m.Content, fmt.Sprintf("messages.%d.content", i))
		if e != nil {
			return req, e
		}
		if isText {
			msg.Content = append(msg.Content, trajectory.ContentBlock{Type: trajectory.BlockText, Text: text})
		} else if blocks == nil {
			return req, invalidf("messages", "messages.%d.content: Field required", i)
		}
		for j, b := range blocks {
			if b.Type != "" {
				// A breakpoint on a block the neutral form does not model
				// lands on the block before it, which caches one block less.
				pt := llm.CachePoint{Part: llm.CacheMessages, Index: len(req.Messages), Block: len(msg.Content)}
				if !modelledBlock(b.Type) {
					pt.Block--
				}
				if e := cache.mark(b.CacheControl, fmt.Sprintf("messages.%d.content.%d", i, j), pt); e != nil {
					return req, e
				}
			}
			switch b.Type {
			case "text":
				msg.Content = append(msg.Content, trajectory.ContentBlock{Type: trajectory.BlockText, Text: b.Text})
			case "thinking":
				msg.Content = append(msg.Content, trajectory.ContentBlock{Type: trajectory.BlockThinking, Text: b.Thinking})
			case "tool_use":
				if m.Role != "assistant" {
					return req, invalidf("messages", "messages.%d.content.%d: tool_use blocks can only be in assistant messages", i, j)
				}
				if b.ID == "" || b.Name == "" {
					return req, invalidf("messages", "messages.%d.content.%d.tool_use: id and name are required", i, j)
				}
				in := bytes.TrimSpace(b.Input)
				if len(in) == 0 || in[0] != '{' {
					return req, invalidf("messages", "messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", i, j)
				}
				msg.Content = append(msg.Content, trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: b.ID, Name: b.Name, Input: in})
			case "tool_result":
				if m.Role != "user" {
					return req, invalidf("messages", "messages.%d.content.%d: tool_result blocks can only be in user messages", i, j)
				}
				if b.ToolUseID == "" {
					return req, invalidf("messages", "messages.%d.content.%d.tool_result.tool_use_id: Field required", i, j)
				}
				txt, parts, _, e := textOrBlocks(b.Content, fmt.Sprintf("messages.%d.content.%d.content", i, j))
				if e != nil {
					return req, e
				}
				for _, p := range parts {
					if p.Type == "text" {
						txt += p.Text
					}
				}
				msg.Content = append(msg.Content, trajectory.ContentBlock{Type: trajectory.BlockToolResult, ToolUseID: b.ToolUseID, Content: txt, IsError: b.IsError})
			case "":
				return req, invalidf("messages", "messages.%d.content.%d.type: Field required", i, j)
			}
			// Other block types (image, document, redacted_thinking,
			// server tool blocks, ...) are accepted and not modelled.
		}
		req.Messages = append(req.Messages, msg)
	}
	req.System = sb.String()
	if e := cache.check(); e != nil {
		return req, e
	}
	req.Cache = cache.cache()
	if len(req.Messages) == 0 {
		return req, invalidf("messages", "messages: at least one user or assistant message is required")
	}
	return req, checkToolPairing(req.Messages)
}

// modelledBlock reports whether neutral() keeps a block of this type.
func modelledBlock(typ string) bool {
	switch typ {
	case "text", "thinking", "tool_use", "tool_result":
		return true
	}
	return false
}

// cacheMarks collects the cache_control breakpoints of a request.
type cacheMarks struct {
	points []llm.CachePoint
	ttl    string
	n      int
}

// mark validates the cache_control of the element at field, if it has
// one, and records it as pt.
func (c *cacheMarks) mark(raw json.RawMessage, field string, pt llm.CachePoint) *apiError {
	if isNull(raw) {
		return nil
	}
	var cc struct {
		Type string `json:"type"`
		TTL  string `json:"ttl"`
	}
	if err := json.Unmarshal(raw, &cc); err != nil {
		return invalidf(field, "%s.cache_control: Input should be a valid dictionary", field)
	}
	if cc.Type != "ephemeral" {
		return invalidf(field, "%s.cache_control.type: Input should be 'ephemeral'", field)
	}
	switch cc.TTL {
	case "", llm.CacheTTL5m, llm.CacheTTL1h:
	default:
		return invalidf(field, "%s.cache_control.ephemeral.ttl: Input should be '5m' or '1h'", field)
	}
	c.n++
	// One ttl for the request: the longest asked for, since the API
	// requires the longer-lived breakpoints to come first anyway.
	if cc.TTL == llm.CacheTTL1h || c.ttl == "" {
		c.ttl = cc.TTL
	}
	if pt.Part != llm.CacheMessages || pt.Block >= 0 {
		c.points = append(c.points, pt)
	}
	return nil
}

// check enforces the API's limit on breakpoints.
func (c *cacheMarks) check() *apiError {
	if c.n > llm.MaxCachePoints {
		return invalidf("", "A maximum of %d blocks with cache_control may be provided. Found %d.", llm.MaxCachePoints, c.n)
	}
	return nil
}

// cache is the request's Cache: nil when it carried no breakpoint.
func (c *cacheMarks) cache() *llm.Cache {
	if c.n == 0 {
		return nil
	}
	return &llm.Cache{TTL: c.ttl, Points: append([]llm.CachePoint{}, c.points...)}
}

// systemMessageText is the text of role "system" message i: a string or
// text blocks, as the top-level system field takes.
func systemMessageText(raw json.RawMessage, i int) (string, *apiError) {
	field := fmt.Sprintf("messages.%d.content", i)
	text, blocks, isText, e := textOrBlocks(raw, field)
	if e != nil {
		return "", e
	}
	if isText {
		return text, nil
	}
	if blocks == nil {
		return "", invalidf("messages", "%s: Field required", field)
	}
	parts := make([]string, 0, len(blocks))
	for j, b := range blocks {
		if b.Type != "text" {
			return "", invalidf("messages", "%s.%d.type: a system message holds only text blocks", field, j)
		}
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n\n"), nil
}

// checkToolPairing enforces the API's hard rules on parallel calls: every tool_use is answered by a tool_result in the very next
// message, and every tool_result answers a tool_use of the message before.
func checkToolPairing(msgs []trajectory.Message) *apiError {
	for i, m := range msgs {
		switch m.Role {
		case trajectory.RoleAssistant:
			var missing []string
			for _, b := range m.Content {
				if b.Type != trajectory.BlockToolUse {
					continue
				}
				if i+1 >= len(msgs) || msgs[i+1].Role != trajectory.RoleUser || !hasResult(&msgs[i+1], b.ID) {
					missing = append(missing, b.ID)
				}
			}
			if len(missing) > 0 {
				return invalidf("messages", "messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", "))
			}
		case trajectory.RoleUser:
			for j, b := range m.Content {
				if b.Type != trajectory.BlockToolResult {
					continue
				}
				if i == 0 || msgs[i-1].Role != trajectory.RoleAssistant || !hasToolUse(&msgs[i-1], b.ToolUseID) {
					return invalidf("messages", "messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
				}
			}
		}
	}
	return nil
}

func hasResult(m *trajectory.Message, id string) bool {
	for _, b := range m.Content {
		if b.Type == trajectory.BlockToolResult && b.ToolUseID == id {
			return true
		}
	}
	return false
}

func hasToolUse(m *trajectory.Message, id string) bool {
	for _, b := range m.Content {
		if b.Type == trajectory.BlockToolUse && b.ID == id {
			return true
		}
	}
	return false
}

type aUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

func aUsageOf(u trajectory.Usage) aUsage {
	return aUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationTokens, CacheReadInputTokens: u.CacheReadTokens}
}

type aMessageOut struct {
	ID           string    `json:"id"`
	Type         string    `json:"type"`
	Role         string    `json:"role"`
	Model        string    `json:"model"`
	Content      []aOutBlk `json:"content"`
	StopReason   *string   `json:"stop_reason"`
	StopSequence *string   `json:"stop_sequence"`
	Usage        aUsage    `json:"usage"`
}

// aOutBlk is a content block of a reply; the pointers keep the fields
// each block type has and drop the others.
type aOutBlk struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
}

// mockSignature stands in for a thinking block's signature.
const mockSignature = "bW9jay1zaWduYXR1cmU="

func stopPtr(raw string) *string {
	if raw == "" {
		return nil
	}
	return &raw
}

func (anthropicDialect) writeJSON(x *exchange, rep *Reply) {
	r := &rep.Response
	out := aMessageOut{ID: x.s.newID("msg_"), Type: "message", Role: "assistant", Model: r.Model,
		Content: make([]aOutBlk, 0, len(r.Content)), StopReason: stopPtr(r.StopReasonRaw), Usage: aUsageOf(r.Usage)}
	for i := range r.Content {
		b := &r.Content[i]
		switch b.Type {
		case trajectory.BlockText:
			out.Content = append(out.Content, aOutBlk{Type: "text", Text: &b.Text})
		case trajectory.BlockThinking:
			sig := mockSignature
			out.Content = append(out.Content, aOutBlk{Type: "thinking", Thinking: &b.Text, Signature: &sig})
		case trajectory.BlockToolUse:
			in := b.Input
			if len(in) == 0 {
				// A tool_use cut by max_tokens: the API returns what it
				// could parse, and an empty object when nothing.
				in = json.RawMessage(`{}`)
			}
			out.Content = append(out.Content, aOutBlk{Type: "tool_use", ID: b.ID, Name: b.Name, Input: in})
		}
	}
	x.writeJSONBody(out, rep.Fault.MalformedSSE)
}

type aStreamEvent struct {
	Type         string       `json:"type"`
	Message      *aMessageOut `json:"message,omitempty"`
	Index        *int         `json:"index,omitempty"`
	ContentBlock *aOutBlk     `json:"content_block,omitempty"`
	Delta        any          `json:"delta,omitempty"`
	Usage        *aUsage      `json:"usage,omitempty"`
}

const aBrokenFrame = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_de\n\n"

func (anthropicDialect) writeSSE(x *exchange, rep *Reply, _ wireOptions) {
	r := &rep.Response
	s := newSSE(x, rep.Fault)
	start := aMessageOut{ID: x.s.newID("msg_"), Type: "message", Role: "assistant", Model: r.Model,
		Content: []aOutBlk{}, Usage: aUsageOf(r.Usage)}
	start.Usage.OutputTokens = 1
	s.event("message_start", aStreamEvent{Type: "message_start", Message: &start})
	s.event("ping", `{"type": "ping"}`)
	if len(r.Content) == 0 && !s.midpoint(rep.Fault, aBrokenFrame) {
		return
	}
	for i := range r.Content {
		b := &r.Content[i]
		switch b.Type {
		case trajectory.BlockText:
			s.endFrame(appendBlockStart(s.frame("content_block_start"), i, "text", "", ""))
			for _, c := range chunks(b.Text) {
				s.endFrame(appendBlockDelta(s.frame("content_block_delta"), i, "text_delta", "text", c))
				if i == 0 && !s.midpoint(rep.Fault, aBrokenFrame) {
					return
				}
			}
		case trajectory.BlockThinking:
			s.endFrame(appendBlockStart(s.frame("content_block_start"), i, "thinking", "", ""))
			for _, c := range chunks(b.Text) {
				s.endFrame(appendBlockDelta(s.frame("content_block_delta"), i, "thinking_delta", "thinking", c))
				if i == 0 && !s.midpoint(rep.Fault, aBrokenFrame) {
					return
				}
			}
			s.endFrame(appendBlockDelta(s.frame("content_block_delta"), i, "signature_delta", "signature", mockSignature))
		case trajectory.BlockToolUse:
			s.endFrame(appendBlockStart(s.frame("content_block_start"), i, "tool_use", b.ID, b.Name))
			s.endFrame(appendBlockDelta(s.frame("content_block_delta"), i, "input_json_delta", "partial_json", ""))
			in := string(b.Input)
			if len(b.Input) == 0 {
				in = b.PartialInput
			}
			for _, c := range chunks(in) {
				s.endFrame(appendBlockDelta(s.frame("content_block_delta"), i, "input_json_delta", "partial_json", c))
				if i == 0 && !s.midpoint(rep.Fault, aBrokenFrame) {
					return
				}
			}
		}
		if !s.alive() {
			return
		}
		s.endFrame(appendBlockStop(s.frame("content_block_stop"), i))
		if i == 0 && !s.midpoint(rep.Fault, aBrokenFrame) {
			return
		}
	}
	s.endFrame(appendMessageDelta(s.frame("message_delta"), stopPtr(r.StopReasonRaw), aUsageOf(r.Usage)))
	s.last("message_stop", `{"type":"message_stop"}`)
}

func (anthropicDialect) writeError(x *exchange, e *apiError) {
	typ := "invalid_request_error"
	switch e.kind {
	case errNotFound:
		typ = "not_found_error"
	case errTooLarge:
		typ = "request_too_large"
	case errRateLimit:
		typ = "rate_limit_error"
	case errOverloaded:
		typ = "overloaded_error"
	case errServer:
		typ = "api_error"
	case errAuth:
		typ = "authentication_error"
	}
	body := struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}{Type: "error", RequestID: x.w.Header().Get("Request-Id")}
	body.Error.Type, body.Error.Message = typ, e.msg
	b, _ := json.Marshal(body)
	x.w.Header().Set("Content-Type", "application/json")
	x.w.WriteHeader(e.status)
	_, _ = x.w.Write(b)
}
