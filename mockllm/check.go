package mockllm

import (
	"sync"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/compare"
	"github.com/retrace-dev/retrace/trajectory"
)

// RequestChecker compares each request an agent sends with the request
// recorded at the same position of a trajectory, so an agent replayed
// against its own recording learns the first place it now asks
// differently. It compares what the trajectory keeps of a request — the
// system prompt, the tool names in order, every message, max_tokens —
// through compare.Requests, so volatile values (times, temporary paths,
// ids) do not count.
type RequestChecker struct {
	mu       sync.Mutex
	recorded *compare.Requests
	n        int
}

// NewRequestChecker returns a checker for the model_request events of a
// recorded session.
func NewRequestChecker(events []trajectory.Event) *RequestChecker {
	return &RequestChecker{recorded: compare.NewRequests(events, compare.Options{})}
}

// Check compares the next request with its recorded counterpart after
// the default normalisation (package compare). It returns the request's
// number (from 1) and a short description of the first difference, which
// starts with the differing field ("system", "tool_names",
// "messages[3]"), or "" when it matches.
func (c *RequestChecker) Check(req *llm.Request) (n int, diff string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	// Without a previous request every message is new, so the comparison
	// can read (and normalise) each one.
	d, same := c.recorded.Compare(c.n-1, llm.RequestEvent(*req, nil, nil, 0, false))
	if same {
		return c.n, ""
	}
	return c.n, d.Summary
}
