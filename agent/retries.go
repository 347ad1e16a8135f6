package agent

import (
	"sync"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// Retries records a real provider's failed attempts as model_error events
// of the session. The provider is built before the session starts, so its
// llm.Options.OnRetry cannot know the session's sink or turn: give it
// Retries.OnRetry, and the same Retries as Config.Retries, and the loop
// connects the two. Without it the loop records one model_error for a
// call that failed after all its attempts.
type Retries struct {
	mu   sync.Mutex
	emit func(trajectory.Payload)
	seen int
}

// OnRetry records one failed attempt; it is an llm.Options.OnRetry. Before
// a session is bound to it, it does nothing.
func (r *Retries) OnRetry(e llm.ModelErrorEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.emit == nil || e.Err == nil {
		return
	}
	r.seen++
	r.emit(&trajectory.ModelError{
		ErrorKind:    e.Err.Kind,
		StatusCode:   e.Err.StatusCode,
		Attempt:      max(e.Attempt, 1),
		WillRetry:    e.WillRetry,
		RetryAfterMs: trajectory.Millis(e.Backoff),
		DurationMs:   max(0, trajectory.Millis(e.Duration)),
	})
}

func (r *Retries) bind(emit func(trajectory.Payload)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emit = emit
}

// count returns how many attempts were recorded so far.
func (r *Retries) count() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen
}
