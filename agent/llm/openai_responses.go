package llm

import (
	"context"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/retrace-dev/retrace/trajectory"
)

// OpenAIResponses is a Provider for the OpenAI Responses API, through the
// official SDK with its retries turned off (we retry, see retrier). Every
// call sends the whole conversation with store off: retrace keeps the
// history, not the server.
type OpenAIResponses struct {
	opts    Options
	service responses.ResponseService
	retry   retrier
}

var _ Provider = (*OpenAIResponses)(nil)

// NewOpenAIResponses returns a Responses API client. It reads nothing from
// the environment: pass the key and endpoint in opts (OptionsFromEnv).
func NewOpenAIResponses(opts Options) (*OpenAIResponses, error) {
	return &OpenAIResponses{opts: opts, service: responses.NewResponseService(openAIOptions(opts)...), retry: newRetrier(opts)}, nil
}

// Name implements Provider.
func (p *OpenAIResponses) Name() string { return "openai" }

// Complete implements Provider.
func (p *OpenAIResponses) Complete(ctx context.Context, req Request) (Response, error) {
	params, strict, err := p.params(req)
	if err != nil {
		return Response{}, err
	}
	_, finish := neutralize(p.opts.strictInputs(req.Tools, strict), nil)
	return finish(p.retry.run(ctx, false, nil, func(a *attempt) (Response, error) {
		r, err := p.service.New(a.ctx, params, option.WithMiddleware(a.middleware))
		if err != nil {
			return Response{}, err
		}
		return markCutToolUse(responsesResponse(r)), nil
	}))
}

// Stream implements Provider. A function call is reported at its
// response.output_item.done, once its arguments are complete and parse.
func (p *OpenAIResponses) Stream(ctx context.Context, req Request, onEvent func(StreamEvent)) (Response, error) {
	params, strict, err := p.params(req)
	if err != nil {
		return Response{}, err
	}
	onEvent, finish := neutralize(p.opts.strictInputs(req.Tools, strict), onEvent)
	return finish(p.retry.stream(ctx, onEvent, func(a *attempt, emit func(StreamEvent)) (Response, error) {
		stream := p.service.NewStreaming(a.ctx, params, option.WithMiddleware(a.middleware))
		defer stream.Close()
		var acc responsesStream
		for acc.err == nil && stream.Next() {
			acc.add(stream.Current(), emit)
		}
		if acc.err != nil {
			return acc.response(), acc.err
		}
		return acc.response(), stream.Err()
	}))
}

// ToolStrict implements ToolStrictness.
func (p *OpenAIResponses) ToolStrict(t ToolDef) (strict bool, reason string, ok bool) {
	return p.opts.toolStrict(t)
}

// params builds the request and names the tools sent strict: each tool is
// decided on its own, so one schema strict mode cannot express is sent
// with strict off instead of failing the request (Options.NonStrictSchema).
func (p *OpenAIResponses) params(req Request) (responses.ResponseNewParams, map[string]bool, error) {
	params := responses.ResponseNewParams{
		Model: shared.ResponsesModel(p.opts.model(req)),
		Store: openai.Bool(false),
	}
	if req.System != "" {
		params.Instructions = openai.String(req.System)
	}
	if req.MaxTokens > 0 {
		params.MaxOutputTokens = openai.Int(int64(req.MaxTokens))
	}
	if req.Temperature != nil {
		params.Temperature = openai.Float(*req.Temperature)
	}
	strict := make(map[string]bool, len(req.Tools))
	for _, t := range req.Tools {
		schema, isStrict, _, err := p.opts.strictSchema(t)
		if err != nil {
			return params, nil, err
		}
		strict[t.Name] = isStrict
		fn := responses.FunctionToolParam{Name: t.Name, Parameters: rawMap(schema), Strict: openai.Bool(isStrict)}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, responses.ToolUnionParam{OfFunction: &fn})
	}
	var items responses.ResponseInputParam
	for i, m := range req.Messages {
		var role responses.EasyInputMessageRole
		switch m.Role {
		case trajectory.RoleUser:
			role = responses.EasyInputMessageRoleUser
		case trajectory.RoleAssistant:
			role = responses.EasyInputMessageRoleAssistant
		default:
			return params, nil, fmt.Errorf("message %d has role %q; only user and assistant are sent (put system text in Request.System)", i, m.Role)
		}
		var text []string
		flush := func() {
			if len(text) > 0 {
				items = append(items, responses.ResponseInputItemParamOfMessage(strings.Join(text, "\n\n"), role))
				text = nil
			}
		}
		for _, b := range m.Content {
			switch b.Type {
			case trajectory.BlockText:
				text = append(text, b.Text)
			case trajectory.BlockToolUse:
				flush()
				items = append(items, responses.ResponseInputItemParamOfFunctionCall(string(inputForWire(b)), b.ID, b.Name))
			case trajectory.BlockToolResult:
				flush()
				out := responses.ResponseInputItemParamOfFunctionCallOutput(b.Content)
				out.OfFunctionCallOutput.CallID = openai.String(b.ToolUseID)
				items = append(items, out)
			}
		}
		flush()
	}
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	return params, strict, nil
}

// responsesStop derives a stop reason from the status: the Responses API
// has none of its own. raw keeps what was received (status, and the
// incomplete reason after a colon); derived is what NormalizeStopReason
// reads.
func responsesStop(status, incompleteReason string, calls bool) (raw, derived string) {
	raw = status
	switch status {
	case "completed":
		derived = "completed"
		if calls {
			derived = "function_call"
		}
	case "incomplete":
		raw = status + ":" + incompleteReason
		derived = incompleteReason
		if derived == "" {
			derived = raw
		}
	default:
		// failed, cancelled, in_progress, or a status nobody listed: never
		// done. An empty status stays empty and so is "missing".
		derived = status
	}
	return raw, derived
}

func responsesUsage(u responses.ResponseUsage) trajectory.Usage {
	cached := u.InputTokensDetails.CachedTokens
	written := u.InputTokensDetails.CacheWriteTokens
	return trajectory.Usage{
		// input_tokens includes the cached part; ours does not.
		InputTokens:         max(u.InputTokens-cached-written, 0),
		OutputTokens:        u.OutputTokens,
		CacheReadTokens:     cached,
		CacheCreationTokens: written,
	}
}

func responsesResponse(r *responses.Response) Response {
	resp := Response{Model: string(r.Model), Usage: responsesUsage(r.Usage), Content: []trajectory.ContentBlock{}}
	calls := false
	for _, item := range r.Output {
		switch item.Type {
		case "message":
			for _, part := range item.Content {
				if part.Type == "output_text" {
					resp.Content = append(resp.Content, trajectory.ContentBlock{Type: trajectory.BlockText, Text: part.Text})
				}
			}
		case "function_call":
			calls = true
			block, _ := closedToolUse(item.CallID, item.Name, strings.TrimSpace(item.Arguments.OfString))
			resp.Content = append(resp.Content, block)
		}
	}
	derived := ""
	resp.StopReasonRaw, derived = responsesStop(string(r.Status), r.IncompleteDetails.Reason, calls)
	resp.StopReason = NormalizeStopReason(derived)
	return resp
}

// responsesStream assembles a streamed response from its events.
type responsesStream struct {
	items   []*responsesItem
	byIndex map[int64]*responsesItem
	final   *responses.Response
	// err is set by an error event, which ends the stream.
	err error
}

type responsesItem struct {
	kind   trajectory.BlockType
	callID string
	name   string
	buf    strings.Builder
	closed bool
	block  trajectory.ContentBlock
}

func (s *responsesStream) item(index int64, kind trajectory.BlockType) *responsesItem {
	if it := s.byIndex[index]; it != nil {
		return it
	}
	it := &responsesItem{kind: kind}
	if s.byIndex == nil {
		s.byIndex = map[int64]*responsesItem{}
	}
	s.byIndex[index] = it
	s.items = append(s.items, it)
	return it
}

func (s *responsesStream) add(ev responses.ResponseStreamEventUnion, emit func(StreamEvent)) {
	switch ev.Type {
	case "response.output_item.added":
		switch ev.Item.Type {
		case "function_call":
			it := s.item(ev.OutputIndex, trajectory.BlockToolUse)
			it.callID, it.name = ev.Item.CallID, ev.Item.Name
		case "message":
			s.item(ev.OutputIndex, trajectory.BlockText)
		}
	case "response.output_text.delta":
		it := s.item(ev.OutputIndex, trajectory.BlockText)
		it.buf.WriteString(ev.Delta)
		if ev.Delta != "" {
			emit(StreamEvent{TextDelta: ev.Delta})
		}
	case "response.function_call_arguments.delta":
		if it := s.byIndex[ev.OutputIndex]; it != nil && it.kind == trajectory.BlockToolUse {
			it.buf.WriteString(ev.Delta)
		}
	case "response.output_item.done":
		if ev.Item.Type != "function_call" {
			return
		}
		it := s.item(ev.OutputIndex, trajectory.BlockToolUse)
		if it.closed {
			return
		}
		it.closed = true
		if ev.Item.CallID != "" {
			it.callID, it.name = ev.Item.CallID, ev.Item.Name
		}
		args := it.buf.String()
		if ev.Item.JSON.Arguments.Valid() {
			args = ev.Item.Arguments.OfString
		}
		block, ok := closedToolUse(it.callID, it.name, args)
		it.block = block
		if ok {
			emit(StreamEvent{ToolUse: &block})
		}
	case "error":
		// The event carries a code and a message but no HTTP status; it
		// is the server failing mid-reply.
		s.err = &Error{Kind: trajectory.ModelServerError, Err: fmt.Errorf("error event in the response stream (code %q)", ev.Code)}
	case "response.completed", "response.incomplete", "response.failed":
		r := ev.Response
		s.final = &r
	}
}

// response is the reply as received. Status and usage come from the
// final response event; content from the events, so that a stream cut
// before its end still shows what arrived (unfinished calls as
// PartialInput).
func (s *responsesStream) response() Response {
	resp := Response{Content: []trajectory.ContentBlock{}}
	calls := false
	for _, it := range s.items {
		switch {
		case it.kind == trajectory.BlockText:
			if it.buf.Len() > 0 {
				resp.Content = append(resp.Content, trajectory.ContentBlock{Type: trajectory.BlockText, Text: it.buf.String()})
			}
		case it.closed:
			calls = true
			resp.Content = append(resp.Content, it.block)
		default:
			if block, ok := cutToolUse(it.callID, it.name, it.buf.String()); ok {
				resp.Content = append(resp.Content, block)
			}
		}
	}
	if s.final == nil {
		resp.StopReason = NormalizeStopReason("")
		return resp
	}
	resp.Model = string(s.final.Model)
	resp.Usage = responsesUsage(s.final.Usage)
	derived := ""
	resp.StopReasonRaw, derived = responsesStop(string(s.final.Status), s.final.IncompleteDetails.Reason, calls)
	resp.StopReason = NormalizeStopReason(derived)
	return resp
}
