package llm

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// ToolDef is a tool as offered to the model: the provider turns it into its
// own wire form (and its own schema dialect).
type ToolDef struct {
	Name        string
	Description string
	// Schema is the tool's input JSON Schema, in the neutral form the
	// tools generate; each provider rewrites it into its dialect.
	Schema json.RawMessage
}

// Request is one model call in the provider-neutral form. Messages use the
// trajectory's message type: there is one representation of a
// conversation in retrace, not one per layer.
type Request struct {
	Model     string
	System    string
	Tools     []ToolDef
	Messages  []trajectory.Message
	MaxTokens int
	// Temperature is optional; nil leaves the provider's default.
	Temperature *float64
	// Cache asks for prompt caching (see Cache); nil asks for none. It is
	// left out of the JSON form, whose size the trajectory records as the
	// request's, so turning caching on does not move request_bytes.
	Cache *Cache `json:"-"`
}

// Response is a model reply in the provider-neutral form.
type Response struct {
	// Content holds the blocks as received. A tool_use cut off by
	// max_tokens keeps the received bytes in PartialInput and no Input.
	Content []trajectory.ContentBlock
	// StopReason is the whitelist-normalised stop reason: an unrecognised
	// value is StopUnknown and a missing or null one StopMissing, and
	// neither ever means "done".
	StopReason    trajectory.StopReason
	StopReasonRaw string
	Usage         trajectory.Usage
	// Model is the model that answered, as the provider reported it.
	Model string
	// TTFT is the time to the first byte of a streamed reply (0 otherwise).
	TTFT     time.Duration
	Duration time.Duration
	// RequestBytes is the size of the request body sent.
	RequestBytes int
}

// ToolUses returns the response's tool_use blocks in order.
func (r *Response) ToolUses() []trajectory.ContentBlock {
	var out []trajectory.ContentBlock
	for _, b := range r.Content {
		if b.Type == trajectory.BlockToolUse {
			out = append(out, b)
		}
	}
	return out
}

// TruncatedToolUse reports whether the reply was cut off by max_tokens in
// the middle of a tool_use, which must never be executed.
func (r *Response) TruncatedToolUse() bool {
	for _, b := range r.Content {
		if b.Type == trajectory.BlockToolUse && len(b.Input) == 0 && b.PartialInput != "" {
			return true
		}
	}
	return false
}

// StreamEvent is something a streaming provider reports before the
// response is complete. A tool_use is reported only once its input is
// complete, so a consumer may start it right away.
type StreamEvent struct {
	// TextDelta is a piece of assistant text.
	TextDelta string
	// ToolUse is a tool_use block whose input has fully arrived.
	ToolUse *trajectory.ContentBlock
}

// Provider is a model API. Implementations: the real Anthropic and OpenAI
// clients, and mockllm's scripted and replaying models.
type Provider interface {
	// Name is the provider's label in the trajectory ("anthropic", "openai", "mock").
	Name() string
	// Complete sends req and returns the whole reply.
	Complete(ctx context.Context, req Request) (Response, error)
	// Stream sends req as a streaming request, calls onEvent as the reply
	// arrives, and returns the whole reply at the end.
	Stream(ctx context.Context, req Request, onEvent func(StreamEvent)) (Response, error)
}

// Error is a failed model call, classified from status codes and typed
// transport errors, never from message text.
type Error struct {
	Kind       trajectory.ModelErrorKind
	StatusCode int
	// RetryAfter is the server's Retry-After, when it gave one.
	RetryAfter time.Duration
	Err        error
}

// Error implements error.
func (e *Error) Error() string {
	msg := string(e.Kind)
	if e.StatusCode != 0 {
		msg += " (HTTP " + strconv.Itoa(e.StatusCode) + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return "model call failed: " + msg
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the call may succeed if tried again later.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case trajectory.ModelRateLimited, trajectory.ModelOverloaded, trajectory.ModelServerError,
		trajectory.ModelConnection, trajectory.ModelFirstByteTimeout, trajectory.ModelIdleTimeout:
		return true
	}
	return false
}

// ErrReplayMiss is returned by a replaying provider that has no recorded
// response for a request: never a live call (DESIGN: replay fails closed).
var ErrReplayMiss = errors.New("no recorded response for this request")
