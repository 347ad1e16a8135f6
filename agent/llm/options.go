package llm

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/retrace-dev/retrace/agent/llm/dialect"
	"github.com/retrace-dev/retrace/trajectory"
)

// Defaults used when the matching Options field is zero.
const (
	DefaultMaxRetries       = 3
	DefaultFirstByteTimeout = 60 * time.Second
	DefaultIdleTimeout      = 60 * time.Second
	// DefaultMaxTokens is sent when a Request leaves MaxTokens at zero,
	// because the Anthropic API refuses a request without one.
	DefaultMaxTokens = 4096
)

// Options configure a real provider client. The zero value of every field
// means its default, so Options{Model: m, APIKey: k} is a working client.
type Options struct {
	// Model is used when a Request does not name one.
	Model  string
	APIKey string
	// BaseURL replaces the provider's production endpoint (a proxy, a
	// gateway, or mockllm's server).
	BaseURL string
	// MaxRetries is how many times a failed call is tried again: 0 means
	// DefaultMaxRetries, a negative number means never.
	MaxRetries int
	// FirstByteTimeout bounds the wait for the response headers (for a
	// streamed call: for the first byte of the stream).
	FirstByteTimeout time.Duration
	// IdleTimeout bounds the gap between two reads of the response body,
	// so a stalled stream fails instead of hanging.
	IdleTimeout time.Duration
	// HTTPClient sends the requests; nil means a plain http.Client.
	HTTPClient *http.Client
	// OnRetry is called after every failed attempt, whether or not it will
	// be retried, so the agent loop can record one model_error per attempt.
	OnRetry func(ModelErrorEvent)
	// ToolSchema rewrites each tool's neutral schema into the provider's
	// dialect (package agent/llm/dialect); nil sends the schema unchanged.
	ToolSchema func(schema json.RawMessage) (json.RawMessage, error)
	// StrictTools marks OpenAI function tools strict: true. Pair it with a
	// ToolSchema that produces OpenAI's strict form; Anthropic ignores it.
	StrictTools bool
	// NonStrictSchema, with StrictTools, is the rewrite for a tool whose
	// schema ToolSchema refuses as dialect.ErrUnsupported (an MCP server's
	// oneOf, say): that tool alone is sent with strict false in this form,
	// rather than the whole request failing. nil keeps the
	// refusal an error.
	NonStrictSchema func(schema json.RawMessage) (json.RawMessage, error)
}

// ToolStrictness is a Provider that decides per tool whether it is sent in
// OpenAI's strict mode, so the session can record each decision.
type ToolStrictness interface {
	// ToolStrict reports whether t is sent strict; when it is not although
	// strict mode is on, reason says why (the strict rewrite's error).
	// ok is false when the provider has no strict mode on at all.
	ToolStrict(t ToolDef) (strict bool, reason string, ok bool)
}

// ModelErrorEvent describes one failed attempt of a model call.
type ModelErrorEvent struct {
	// Err is the classified failure.
	Err *Error
	// Attempt counts the attempts of this call from 1.
	Attempt int
	// WillRetry says whether another attempt follows after Backoff.
	WillRetry bool
	// Backoff is the wait before the next attempt: the server's
	// Retry-After when it gave one, else exponential backoff with jitter.
	Backoff time.Duration
	// Duration is how long the failed attempt took.
	Duration time.Duration
}

// OptionsFromEnv reads a provider's key and endpoint through getenv, so
// that only the CLI touches the process environment: ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL for "anthropic", OPENAI_API_KEY and OPENAI_BASE_URL
// for "openai" (and its "openai-chat" / "openai-responses" spellings).
// An unknown provider gets empty Options.
func OptionsFromEnv(provider string, getenv func(string) string) Options {
	var prefix string
	switch provider {
	case "anthropic":
		prefix = "ANTHROPIC"
	case "openai", "openai-chat", "openai-responses":
		prefix = "OPENAI"
	default:
		return Options{}
	}
	return Options{
		APIKey:  getenv(prefix + "_API_KEY"),
		BaseURL: getenv(prefix + "_BASE_URL"),
	}
}

func (o Options) maxRetries() int {
	switch {
	case o.MaxRetries < 0:
		return 0
	case o.MaxRetries == 0:
		return DefaultMaxRetries
	}
	return o.MaxRetries
}

func (o Options) firstByteTimeout() time.Duration {
	if o.FirstByteTimeout > 0 {
		return o.FirstByteTimeout
	}
	return DefaultFirstByteTimeout
}

func (o Options) idleTimeout() time.Duration {
	if o.IdleTimeout > 0 {
		return o.IdleTimeout
	}
	return DefaultIdleTimeout
}

func (o Options) httpClient() *http.Client {
	if o.HTTPClient != nil {
		return o.HTTPClient
	}
	return &http.Client{}
}

func (o Options) model(req Request) string {
	if req.Model != "" {
		return req.Model
	}
	return o.Model
}

func maxTokens(req Request) int64 {
	if req.MaxTokens > 0 {
		return int64(req.MaxTokens)
	}
	return DefaultMaxTokens
}

// toolSchema returns a tool's schema in the provider's dialect as a map of
// raw values: the SDKs take the schema as a map, and raw values keep the
// nested key order the dialect chose (stable bytes for the prompt cache).
func (o Options) toolSchema(t ToolDef) (map[string]json.RawMessage, error) {
	m, _, _, err := o.strictSchema(t)
	return m, err
}

// strictSchema is toolSchema with the per-tool strict decision: strict is
// StrictTools, unless ToolSchema refused the schema as unsupported and
// NonStrictSchema rewrote it instead; reason is then the refusal.
func (o Options) strictSchema(t ToolDef) (m map[string]json.RawMessage, strict bool, reason string, err error) {
	schema := t.Schema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	strict = o.StrictTools
	if o.ToolSchema != nil {
		rewritten, err := o.ToolSchema(schema)
		if err != nil && strict && o.NonStrictSchema != nil && errors.Is(err, dialect.ErrUnsupported) {
			strict, reason = false, err.Error()
			rewritten, err = o.NonStrictSchema(schema)
		}
		if err != nil {
			return nil, false, "", &ToolSchemaError{Tool: t.Name, Err: err}
		}
		schema = rewritten
	}
	if err := json.Unmarshal(schema, &m); err != nil {
		return nil, false, "", &ToolSchemaError{Tool: t.Name, Err: err}
	}
	return m, strict, reason, nil
}

// toolStrict is ToolStrictness for the OpenAI providers.
func (o Options) toolStrict(t ToolDef) (strict bool, reason string, ok bool) {
	if !o.StrictTools {
		return false, "", false
	}
	_, strict, reason, err := o.strictSchema(t)
	if err != nil {
		return false, err.Error(), true
	}
	return strict, reason, true
}

// ToolSchemaError is a tool whose schema could not be turned into the
// provider's form; the call is not sent.
type ToolSchemaError struct {
	Tool string
	Err  error
}

// Error implements error.
func (e *ToolSchemaError) Error() string {
	return "tool " + e.Tool + ": its input schema is not a JSON object the provider accepts (fix the tool's schema): " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *ToolSchemaError) Unwrap() error { return e.Err }

// strictInputs undoes, for each tool_use the model sends, what OpenAI's
// strict dialect forced on it: every optional parameter it leaves out
// arrives as null, which the neutral schema — and the executor's
// validation — reads as a value of the wrong type. Turning the wire form
// back into the neutral one is the provider's job, like parsing the
// arguments string. It returns nil when the tools are not strict.
//
// strict names the tools sent strict; the others' inputs are left alone,
// since a tool sent with strict off never had its optional fields made
// nullable.
func (o Options) strictInputs(tools []ToolDef, strict map[string]bool) func(*trajectory.ContentBlock) {
	if !o.StrictTools {
		return nil
	}
	schemas := make(map[string]json.RawMessage, len(tools))
	for _, t := range tools {
		if strict[t.Name] {
			schemas[t.Name] = t.Schema
		}
	}
	return func(b *trajectory.ContentBlock) {
		schema, ok := schemas[b.Name]
		if b.Type != trajectory.BlockToolUse || len(b.Input) == 0 || !ok || len(schema) == 0 {
			return
		}
		if in, err := dialect.StripOptionalNulls(schema, b.Input); err == nil {
			b.Input = in
		}
	}
}

// neutralize applies fix to the tool_use blocks of a response and of the
// stream events on the way, so both see the same input.
func neutralize(fix func(*trajectory.ContentBlock), onEvent func(StreamEvent)) (func(StreamEvent), func(Response, error) (Response, error)) {
	events := func(ev StreamEvent) {
		if ev.ToolUse != nil && fix != nil {
			b := *ev.ToolUse
			fix(&b)
			ev.ToolUse = &b
		}
		if onEvent != nil {
			onEvent(ev)
		}
	}
	return events, func(r Response, err error) (Response, error) {
		for i := range r.Content {
			if fix != nil {
				fix(&r.Content[i])
			}
		}
		return r, err
	}
}
