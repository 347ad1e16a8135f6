package mockllm

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// Replay is a model that answers each request with the next model_response
// of a recorded trajectory, in order. More requests than recorded
// responses fail with an error wrapping llm.ErrReplayMiss: a replay never
// falls back to a live call. It is safe for concurrent use.
type Replay struct {
	model     string
	responses []llm.Response

	mu   sync.Mutex
	next int
}

// NewReplay returns a Replay over the model_response events of events.
func NewReplay(events []trajectory.Event) *Replay {
	r := &Replay{model: "replay"}
	for _, ev := range events {
		switch p := ev.Payload.(type) {
		case *trajectory.SessionStart:
			r.model = p.Model
		case *trajectory.ModelResponse:
			r.responses = append(r.responses, llm.Response{
				Content:       p.Content,
				StopReason:    p.StopReason,
				StopReasonRaw: p.StopReasonRaw,
				Usage:         p.Usage,
			})
		}
	}
	return r
}

// LoadReplay reads a trajectory file and returns a Replay over it. A line
// that does not decode is an error: a replay of a damaged file would
// answer with the wrong turns.
func LoadReplay(path string) (*Replay, error) {
	events, err := trajectory.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read trajectory to replay: %w", err)
	}
	return NewReplay(events), nil
}

// Name implements llm.Provider.
func (r *Replay) Name() string { return "replay" }

// Model returns the model recorded in the trajectory's session_start.
func (r *Replay) Model() string { return r.model }

// Len returns the number of recorded responses.
func (r *Replay) Len() int { return len(r.responses) }

// Next implements Source.
func (r *Replay) Next(_ context.Context, req *llm.Request) (Reply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next >= len(r.responses) {
		r.next++
		return Reply{}, &llm.Error{Kind: trajectory.ModelReplayMiss,
			Err: fmt.Errorf("request %d has no recorded response (the trajectory holds %d): %w", r.next, len(r.responses), llm.ErrReplayMiss)}
	}
	resp := r.responses[r.next]
	r.next++
	resp.Model = cmpOr(req.Model, r.model)
	return Reply{Turn: r.next, Response: resp}, nil
}

// Complete implements llm.Provider.
func (r *Replay) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return serveInProcess(ctx, r, &req, nil)
}

// Stream implements llm.Provider.
func (r *Replay) Stream(ctx context.Context, req llm.Request, onEvent func(llm.StreamEvent)) (llm.Response, error) {
	return serveInProcess(ctx, r, &req, onEvent)
}

// serveInProcess answers req from src the way a provider client would
// report it: faults become *llm.Error values, a stall waits for the
// context, and tool_use blocks are reported once complete.
func serveInProcess(ctx context.Context, src Source, req *llm.Request, onEvent func(llm.StreamEvent)) (llm.Response, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return llm.Response{}, &llm.Error{Kind: trajectory.ModelAborted, Err: err}
	}
	rep, err := src.Next(ctx, req)
	if err != nil {
		return llm.Response{}, err
	}
	f := rep.Fault
	if f.Status != 0 {
		return llm.Response{}, &llm.Error{Kind: kindForStatus(f.Status), StatusCode: f.Status, RetryAfter: f.RetryAfter,
			Err: fmt.Errorf("mock turn %d: injected HTTP %d", rep.Turn, f.Status)}
	}
	resp := rep.Response
	emitted := false
	stall := func() error {
		if f.Stall == 0 {
			return nil
		}
		t := time.NewTimer(f.Stall)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return &llm.Error{Kind: trajectory.ModelAborted, Err: ctx.Err()}
		case <-t.C:
			return nil
		}
	}
	if onEvent == nil {
		if err := stall(); err != nil {
			return llm.Response{}, err
		}
	}
	for i := range resp.Content {
		b := &resp.Content[i]
		if onEvent != nil {
			switch {
			case b.Type == trajectory.BlockText:
				onEvent(llm.StreamEvent{TextDelta: b.Text})
			case b.Type == trajectory.BlockToolUse && len(b.Input) > 0:
				onEvent(llm.StreamEvent{ToolUse: b})
			}
		}
		if !emitted && onEvent != nil {
			emitted = true
			if err := stall(); err != nil {
				return llm.Response{}, err
			}
		}
		if f.MalformedSSE {
			return llm.Response{}, &llm.Error{Kind: trajectory.ModelInvalidResponse,
				Err: fmt.Errorf("mock turn %d: injected malformed stream frame", rep.Turn)}
		}
	}
	if f.MalformedSSE {
		return llm.Response{}, &llm.Error{Kind: trajectory.ModelInvalidResponse,
			Err: fmt.Errorf("mock turn %d: injected malformed reply", rep.Turn)}
	}
	resp.Content = append([]trajectory.ContentBlock(nil), resp.Content...)
	resp.Duration = time.Since(start)
	return resp, nil
}

// kindForStatus classifies an HTTP status the way the real clients do.
func kindForStatus(status int) trajectory.ModelErrorKind {
	switch {
	case status == http.StatusTooManyRequests:
		return trajectory.ModelRateLimited
	case status == 529:
		return trajectory.ModelOverloaded
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return trajectory.ModelAuth
	case status >= 500:
		return trajectory.ModelServerError
	}
	return trajectory.ModelBadRequest
}
