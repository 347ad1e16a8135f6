package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/retrace-dev/retrace/trajectory"
)

// Anthropic is a Provider for the Anthropic Messages API, through the
// official SDK with its retries turned off (we retry, see retrier).
type Anthropic struct {
	opts   Options
	client anthropic.Client
	retry  retrier
}

var _ Provider = (*Anthropic)(nil)

// NewAnthropic returns an Anthropic client. It reads nothing from the
// environment: pass the key and endpoint in opts (OptionsFromEnv).
func NewAnthropic(opts Options) (*Anthropic, error) {
	ro := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(opts.httpClient()),
		option.WithMaxRetries(0),
	}
	if opts.BaseURL != "" {
		ro = append(ro, option.WithBaseURL(opts.BaseURL))
	}
	if opts.APIKey != "" {
		ro = append(ro, option.WithAPIKey(opts.APIKey))
	}
	return &Anthropic{opts: opts, client: anthropic.NewClient(ro...), retry: newRetrier(opts)}, nil
}

// Name implements Provider.
func (p *Anthropic) Name() string { return "anthropic" }

// Complete implements Provider.
func (p *Anthropic) Complete(ctx context.Context, req Request) (Response, error) {
	params, err := p.params(req)
	if err != nil {
		return Response{}, err
	}
	return p.retry.run(ctx, false, nil, func(a *attempt) (Response, error) {
		msg, err := p.client.Messages.New(a.ctx, params, requestOptions(req, a)...)
		if err != nil {
			return Response{}, err
		}
		return markCutToolUse(anthropicResponse(msg)), nil
	})
}

// Stream implements Provider. A tool_use is reported to onEvent at its
// content_block_stop, once its input is complete and parses.
func (p *Anthropic) Stream(ctx context.Context, req Request, onEvent func(StreamEvent)) (Response, error) {
	params, err := p.params(req)
	if err != nil {
		return Response{}, err
	}
	return p.retry.stream(ctx, onEvent, func(a *attempt, emit func(StreamEvent)) (Response, error) {
		stream := p.client.Messages.NewStreaming(a.ctx, params, requestOptions(req, a)...)
		defer stream.Close()
		var acc anthropicStream
		for stream.Next() {
			acc.add(stream.Current(), emit)
		}
		return acc.response(), stream.Err()
	})
}

// requestOptions are the per-attempt options: the watching middleware,
// and temperature, which this SDK version has no typed field for.
func requestOptions(req Request, a *attempt) []option.RequestOption {
	ro := []option.RequestOption{option.WithMiddleware(a.middleware)}
	if req.Temperature != nil {
		ro = append(ro, option.WithJSONSet("temperature", *req.Temperature))
	}
	return ro
}

func (p *Anthropic) params(req Request) (anthropic.MessageNewParams, error) {
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(p.opts.model(req)),
		MaxTokens: maxTokens(req),
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	for _, t := range req.Tools {
		schema, err := p.opts.toolSchema(t)
		if err != nil {
			return params, err
		}
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: anthropicSchema(schema)}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	// wireBlock[i][j] is the index on the wire of block j of message i,
	// -1 for a block that is not sent, for placing breakpoints.
	wireBlock := make([][]int, len(req.Messages))
	for i, m := range req.Messages {
		var blocks []anthropic.ContentBlockParamUnion
		wireBlock[i] = make([]int, len(m.Content))
		for j, b := range m.Content {
			wireBlock[i][j] = len(blocks)
			switch b.Type {
			case trajectory.BlockText:
				// The API rejects empty text blocks.
				if b.Text != "" {
					blocks = append(blocks, anthropic.NewTextBlock(b.Text))
				} else {
					wireBlock[i][j] = -1
				}
			case trajectory.BlockToolUse:
				blocks = append(blocks, anthropic.NewToolUseBlock(b.ID, inputForWire(b), b.Name))
			case trajectory.BlockToolResult:
				// All results of a turn go in this one user message.
				blocks = append(blocks, anthropic.NewToolResultBlock(b.ToolUseID, b.Content, b.IsError))
			case trajectory.BlockThinking:
				// Thinking goes back only with its signature, which the
				// neutral form does not keep; the API accepts it omitted.
				wireBlock[i][j] = -1
			default:
				wireBlock[i][j] = -1
			}
		}
		switch m.Role {
		case trajectory.RoleUser:
			params.Messages = append(params.Messages, anthropic.NewUserMessage(blocks...))
		case trajectory.RoleAssistant:
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
		default:
			return params, fmt.Errorf("message %d has role %q; the Messages API takes only user and assistant (put system text in Request.System)", i, m.Role)
		}
	}
	return params, markCachePoints(&params, &req, wireBlock)
}

// markCachePoints puts a cache_control breakpoint on each element
// req.Cache names (the byte-stable prefix is what the cache
// reads). A point that names nothing sendable (an empty system prompt, a
// message whose blocks are all left off the wire) is skipped, since the
// API would reject a breakpoint on nothing; a point out of range is an
// error, as it means the caller's request and its points disagree.
func markCachePoints(params *anthropic.MessageNewParams, req *Request, wireBlock [][]int) error {
	pts := req.Cache.PointsFor(req)
	if len(pts) == 0 {
		return nil
	}
	if len(pts) > MaxCachePoints {
		return fmt.Errorf("the request asks for %d cache breakpoints; the Messages API takes at most %d", len(pts), MaxCachePoints)
	}
	cc := anthropic.NewCacheControlEphemeralParam()
	switch req.Cache.TTL {
	case "", CacheTTL5m:
	case CacheTTL1h:
		cc.TTL = anthropic.CacheControlEphemeralTTLTTL1h
	default:
		return fmt.Errorf("cache ttl %q: the Messages API offers %q and %q", req.Cache.TTL, CacheTTL5m, CacheTTL1h)
	}
	for _, p := range pts {
		switch p.Part {
		case CacheTools:
			if p.Index < 0 || p.Index >= len(params.Tools) {
				return fmt.Errorf("cache breakpoint %s: the request has %d tools", p, len(params.Tools))
			}
			params.Tools[p.Index].OfTool.CacheControl = cc
		case CacheSystem:
			if len(params.System) > 0 {
				params.System[len(params.System)-1].CacheControl = cc
			}
		case CacheMessages:
			if p.Index < 0 || p.Index >= len(params.Messages) {
				return fmt.Errorf("cache breakpoint %s: the request has %d messages", p, len(params.Messages))
			}
			var blocks []anthropic.ContentBlockParamUnion
			switch m := params.Messages[p.Index]; {
			case m.OfUser != nil:
				blocks = m.OfUser.Content
			case m.OfAssistant != nil:
				blocks = m.OfAssistant.Content
			}
			at := len(blocks) - 1
			if p.Block >= 0 {
				if p.Block >= len(wireBlock[p.Index]) {
					return fmt.Errorf("cache breakpoint %s: the message has %d blocks", p, len(wireBlock[p.Index]))
				}
				at = wireBlock[p.Index][p.Block]
			}
			if at < 0 {
				continue
			}
			if c := blocks[at].GetCacheControl(); c != nil {
				*c = cc
			}
		default:
			return fmt.Errorf("cache breakpoint %s: unknown part %q", p, p.Part)
		}
	}
	return nil
}

// anthropicSchema splits a schema map into the SDK's typed fields and its
// extra fields; the values stay raw so nested key order is kept.
func anthropicSchema(m map[string]json.RawMessage) anthropic.ToolInputSchemaParam {
	var s anthropic.ToolInputSchemaParam
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch k {
		case "type":
			// Always "object"; the SDK writes it.
		case "properties":
			s.Properties = v
		case "required":
			var req []string
			if json.Unmarshal(v, &req) == nil {
				s.Required = req
				continue
			}
			fallthrough
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	return s
}

func anthropicResponse(msg *anthropic.Message) Response {
	resp := Response{
		Model:         string(msg.Model),
		StopReasonRaw: string(msg.StopReason),
		StopReason:    NormalizeStopReason(string(msg.StopReason)),
		Usage: trajectory.Usage{
			InputTokens:         msg.Usage.InputTokens,
			OutputTokens:        msg.Usage.OutputTokens,
			CacheReadTokens:     msg.Usage.CacheReadInputTokens,
			CacheCreationTokens: msg.Usage.CacheCreationInputTokens,
		},
		Content: []trajectory.ContentBlock{},
	}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			resp.Content = append(resp.Content, trajectory.ContentBlock{Type: trajectory.BlockText, Text: b.Text})
		case "thinking":
			resp.Content = append(resp.Content, trajectory.ContentBlock{Type: trajectory.BlockThinking, Text: b.Thinking})
		case "tool_use":
			block, _ := closedToolUse(b.ID, b.Name, strings.TrimSpace(string(b.Input)))
			resp.Content = append(resp.Content, block)
		}
	}
	return resp
}

// anthropicStream assembles a streamed Message from its events.
type anthropicStream struct {
	model   string
	stopRaw string
	usage   trajectory.Usage
	blocks  []*streamBlock
	byIndex map[int64]*streamBlock
}

// streamBlock is a content block being received.
type streamBlock struct {
	kind   trajectory.BlockType
	id     string
	name   string
	text   strings.Builder
	input  strings.Builder
	closed bool
	// startInput is the input the start event carried ({} in practice),
	// used when no input delta follows.
	startInput string
	// final is set when the block was closed.
	final trajectory.ContentBlock
}

func (s *anthropicStream) add(ev anthropic.MessageStreamEventUnion, emit func(StreamEvent)) {
	switch ev.Type {
	case "message_start":
		s.model = string(ev.Message.Model)
		u := ev.Message.Usage
		s.usage = trajectory.Usage{
			InputTokens:         u.InputTokens,
			OutputTokens:        u.OutputTokens,
			CacheReadTokens:     u.CacheReadInputTokens,
			CacheCreationTokens: u.CacheCreationInputTokens,
		}
	case "content_block_start":
		b := &streamBlock{id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
		switch ev.ContentBlock.Type {
		case "text":
			b.kind = trajectory.BlockText
			b.text.WriteString(ev.ContentBlock.Text)
		case "thinking":
			b.kind = trajectory.BlockThinking
			b.text.WriteString(ev.ContentBlock.Thinking)
		case "tool_use":
			b.kind = trajectory.BlockToolUse
			if raw, err := json.Marshal(ev.ContentBlock.Input); err == nil && ev.ContentBlock.Input != nil {
				b.startInput = string(raw)
			}
		default:
			// Server tool blocks and the like have no neutral form.
			return
		}
		if s.byIndex == nil {
			s.byIndex = map[int64]*streamBlock{}
		}
		s.byIndex[ev.Index] = b
		s.blocks = append(s.blocks, b)
	case "content_block_delta":
		b := s.byIndex[ev.Index]
		if b == nil || b.closed {
			return
		}
		switch ev.Delta.Type {
		case "text_delta":
			b.text.WriteString(ev.Delta.Text)
			if ev.Delta.Text != "" {
				emit(StreamEvent{TextDelta: ev.Delta.Text})
			}
		case "thinking_delta":
			b.text.WriteString(ev.Delta.Thinking)
		case "input_json_delta":
			b.input.WriteString(ev.Delta.PartialJSON)
		}
	case "content_block_stop":
		b := s.byIndex[ev.Index]
		if b == nil || b.closed {
			return
		}
		b.closed = true
		if b.kind != trajectory.BlockToolUse {
			return
		}
		raw := b.input.String()
		if raw == "" {
			raw = b.startInput
		}
		block, ok := closedToolUse(b.id, b.name, raw)
		b.final = block
		if ok {
			emit(StreamEvent{ToolUse: &block})
		}
	case "message_delta":
		s.stopRaw = string(ev.Delta.StopReason)
		// message_delta usage is cumulative; a field it leaves out keeps
		// the message_start value.
		u := ev.Usage
		if u.JSON.InputTokens.Valid() {
			s.usage.InputTokens = u.InputTokens
		}
		if u.JSON.OutputTokens.Valid() {
			s.usage.OutputTokens = u.OutputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			s.usage.CacheReadTokens = u.CacheReadInputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			s.usage.CacheCreationTokens = u.CacheCreationInputTokens
		}
	}
}

// response is the reply as received so far: after message_stop the whole
// reply, after a cut-off the part that arrived, with any unclosed tool_use
// kept only as PartialInput.
func (s *anthropicStream) response() Response {
	resp := Response{
		Model:         s.model,
		StopReasonRaw: s.stopRaw,
		StopReason:    NormalizeStopReason(s.stopRaw),
		Usage:         s.usage,
		Content:       []trajectory.ContentBlock{},
	}
	for _, b := range s.blocks {
		switch {
		case b.kind != trajectory.BlockToolUse:
			resp.Content = append(resp.Content, trajectory.ContentBlock{Type: b.kind, Text: b.text.String()})
		case b.closed:
			resp.Content = append(resp.Content, b.final)
		default:
			if block, ok := cutToolUse(b.id, b.name, b.input.String()); ok {
				resp.Content = append(resp.Content, block)
			}
		}
	}
	return resp
}
