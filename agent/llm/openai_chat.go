package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/retrace-dev/retrace/trajectory"
)

// defaultOpenAIBaseURL is used when Options.BaseURL is empty; the SDK's own
// default would come with reading OPENAI_* from the environment.
const defaultOpenAIBaseURL = "https://api.openai.com/v1/"

// OpenAIChat is a Provider for the OpenAI Chat Completions API, through
// the official SDK with its retries turned off (we retry, see retrier).
type OpenAIChat struct {
	opts    Options
	service openai.ChatCompletionService
	retry   retrier
}

var _ Provider = (*OpenAIChat)(nil)

// NewOpenAIChat returns a Chat Completions client. It reads nothing from
// the environment: pass the key and endpoint in opts (OptionsFromEnv).
func NewOpenAIChat(opts Options) (*OpenAIChat, error) {
	return &OpenAIChat{opts: opts, service: openai.NewChatCompletionService(openAIOptions(opts)...), retry: newRetrier(opts)}, nil
}

// openAIOptions builds the service options directly rather than through
// openai.NewClient, which always reads OPENAI_* from the environment.
func openAIOptions(opts Options) []option.RequestOption {
	base := opts.BaseURL
	if base == "" {
		base = defaultOpenAIBaseURL
	}
	return []option.RequestOption{
		option.WithHTTPClient(opts.httpClient()),
		option.WithBaseURL(base),
		option.WithAPIKey(opts.APIKey),
		option.WithMaxRetries(0),
	}
}

// Name implements Provider.
func (p *OpenAIChat) Name() string { return "openai" }

// Complete implements Provider.
func (p *OpenAIChat) Complete(ctx context.Context, req Request) (Response, error) {
	params, strict, err := p.params(req)
	if err != nil {
		return Response{}, err
	}
	_, finish := neutralize(p.opts.strictInputs(req.Tools, strict), nil)
	return finish(p.retry.run(ctx, false, nil, func(a *attempt) (Response, error) {
		cc, err := p.service.New(a.ctx, params, option.WithMiddleware(a.middleware))
		if err != nil {
			return Response{}, err
		}
		return markCutToolUse(chatResponse(cc)), nil
	}))
}

// Stream implements Provider. Parallel calls arrive as argument pieces
// interleaved by index; a call is reported once the stream has moved on
// to the next one (or finished normally) and its arguments parse.
func (p *OpenAIChat) Stream(ctx context.Context, req Request, onEvent func(StreamEvent)) (Response, error) {
	params, strict, err := p.params(req)
	if err != nil {
		return Response{}, err
	}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	onEvent, finish := neutralize(p.opts.strictInputs(req.Tools, strict), onEvent)
	return finish(p.retry.stream(ctx, onEvent, func(a *attempt, emit func(StreamEvent)) (Response, error) {
		stream := p.service.NewStreaming(a.ctx, params, option.WithMiddleware(a.middleware))
		defer stream.Close()
		var acc chatStream
		for stream.Next() {
			acc.add(stream.Current(), emit)
		}
		err := stream.Err()
		return acc.response(err == nil, emit), err
	}))
}

// ToolStrict implements ToolStrictness.
func (p *OpenAIChat) ToolStrict(t ToolDef) (strict bool, reason string, ok bool) {
	return p.opts.toolStrict(t)
}

// params builds the request and names the tools sent strict, each decided
// on its own (Options.NonStrictSchema).
func (p *OpenAIChat) params(req Request) (openai.ChatCompletionNewParams, map[string]bool, error) {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(p.opts.model(req))}
	if req.MaxTokens > 0 {
		params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	}
	if req.Temperature != nil {
		params.Temperature = openai.Float(*req.Temperature)
	}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	strict := make(map[string]bool, len(req.Tools))
	for _, t := range req.Tools {
		schema, isStrict, _, err := p.opts.strictSchema(t)
		if err != nil {
			return params, nil, err
		}
		strict[t.Name] = isStrict
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: rawMap(schema)}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		if p.opts.StrictTools {
			fn.Strict = openai.Bool(isStrict)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case trajectory.RoleUser:
			// Tool results go first, one role:"tool" message each: they must directly follow the assistant's tool_calls.
			var text []string
			for _, b := range m.Content {
				switch b.Type {
				case trajectory.BlockToolResult:
					params.Messages = append(params.Messages, openai.ToolMessage(b.Content, b.ToolUseID))
				case trajectory.BlockText:
					text = append(text, b.Text)
				}
			}
			if len(text) > 0 {
				params.Messages = append(params.Messages, openai.UserMessage(strings.Join(text, "\n\n")))
			}
		case trajectory.RoleAssistant:
			var msg openai.ChatCompletionAssistantMessageParam
			var text []string
			for _, b := range m.Content {
				switch b.Type {
				case trajectory.BlockText:
					text = append(text, b.Text)
				case trajectory.BlockToolUse:
					msg.ToolCalls = append(msg.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
						OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
							ID:       b.ID,
							Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.Name, Arguments: string(inputForWire(b))},
						},
					})
				}
			}
			if len(text) > 0 {
				msg.Content.OfString = openai.String(strings.Join(text, "\n\n"))
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &msg})
		default:
			return params, nil, fmt.Errorf("message %d has role %q; only user and assistant are sent (put system text in Request.System)", i, m.Role)
		}
	}
	return params, strict, nil
}

// rawMap turns raw schema values into the map the SDK wants, keeping each
// value's bytes (and so its nested key order).
func rawMap(m map[string]json.RawMessage) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func chatUsage(u openai.CompletionUsage) trajectory.Usage {
	cached := u.PromptTokensDetails.CachedTokens
	written := u.PromptTokensDetails.CacheWriteTokens
	return trajectory.Usage{
		// prompt_tokens includes the cached part; ours does not.
		InputTokens:         max(u.PromptTokens-cached-written, 0),
		OutputTokens:        u.CompletionTokens,
		CacheReadTokens:     cached,
		CacheCreationTokens: written,
	}
}

func chatResponse(cc *openai.ChatCompletion) Response {
	resp := Response{Model: cc.Model, Usage: chatUsage(cc.Usage), Content: []trajectory.ContentBlock{}}
	if len(cc.Choices) == 0 {
		resp.StopReason = NormalizeStopReason("")
		return resp
	}
	choice := cc.Choices[0]
	resp.StopReasonRaw = choice.FinishReason
	resp.StopReason = NormalizeStopReason(choice.FinishReason)
	if choice.Message.Content != "" {
		resp.Content = append(resp.Content, trajectory.ContentBlock{Type: trajectory.BlockText, Text: choice.Message.Content})
	}
	for _, tc := range choice.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		block, _ := closedToolUse(tc.ID, tc.Function.Name, strings.TrimSpace(tc.Function.Arguments))
		resp.Content = append(resp.Content, block)
	}
	return resp
}

// chatStream assembles a streamed chat completion from its chunks.
type chatStream struct {
	model     string
	finishRaw string
	finished  bool
	usage     trajectory.Usage
	text      strings.Builder
	calls     []*chatCall
	byIndex   map[int64]*chatCall
}

type chatCall struct {
	id, name string
	args     strings.Builder
	closed   bool
	final    trajectory.ContentBlock
}

func (s *chatStream) add(chunk openai.ChatCompletionChunk, emit func(StreamEvent)) {
	if chunk.Model != "" {
		s.model = chunk.Model
	}
	if chunk.JSON.Usage.Valid() {
		s.usage = chatUsage(chunk.Usage)
	}
	for _, choice := range chunk.Choices {
		if choice.Index != 0 {
			continue
		}
		d := choice.Delta
		if d.Content != "" {
			s.text.WriteString(d.Content)
			emit(StreamEvent{TextDelta: d.Content})
		}
		for _, tc := range d.ToolCalls {
			c := s.byIndex[tc.Index]
			if c == nil {
				// A new index means the calls before it are complete.
				s.closeAll(emit)
				c = &chatCall{}
				if s.byIndex == nil {
					s.byIndex = map[int64]*chatCall{}
				}
				s.byIndex[tc.Index] = c
				s.calls = append(s.calls, c)
			}
			if tc.ID != "" {
				c.id = tc.ID
			}
			if tc.Function.Name != "" {
				c.name = tc.Function.Name
			}
			c.args.WriteString(tc.Function.Arguments)
		}
		if choice.FinishReason != "" {
			s.finishRaw = choice.FinishReason
			s.finished = true
		}
	}
}

func (s *chatStream) closeAll(emit func(StreamEvent)) {
	for _, c := range s.calls {
		if c.closed {
			continue
		}
		c.closed = true
		block, ok := closedToolUse(c.id, c.name, c.args.String())
		c.final = block
		if ok {
			emit(StreamEvent{ToolUse: &block})
		}
	}
}

// response ends the stream. Only a stream that ended cleanly with a
// finish reason other than "length" completes its last call; otherwise the
// last call may be cut and is kept as PartialInput.
func (s *chatStream) response(clean bool, emit func(StreamEvent)) Response {
	if clean && s.finished && s.finishRaw != "length" {
		s.closeAll(emit)
	}
	resp := Response{
		Model:         s.model,
		StopReasonRaw: s.finishRaw,
		StopReason:    NormalizeStopReason(s.finishRaw),
		Usage:         s.usage,
		Content:       []trajectory.ContentBlock{},
	}
	if s.text.Len() > 0 {
		resp.Content = append(resp.Content, trajectory.ContentBlock{Type: trajectory.BlockText, Text: s.text.String()})
	}
	for _, c := range s.calls {
		if c.closed {
			resp.Content = append(resp.Content, c.final)
		} else if block, ok := cutToolUse(c.id, c.name, c.args.String()); ok {
			resp.Content = append(resp.Content, block)
		}
	}
	return resp
}
