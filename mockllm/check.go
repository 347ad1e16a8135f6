package mockllm

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// RequestChecker compares each request an agent sends with the request
// recorded at the same position of a trajectory, so an agent replayed
// against its own recording learns the first place it now asks
// differently. It compares what the trajectory keeps of a request: the
// system prompt, the tool names in order, and every message, by hash.
type RequestChecker struct {
	mu       sync.Mutex
	recorded []*trajectory.ModelRequest
	n        int
	prev     *llm.Request
}

// NewRequestChecker returns a checker for the model_request events of a
// recorded session.
func NewRequestChecker(events []trajectory.Event) *RequestChecker {
	c := &RequestChecker{}
	for _, ev := range events {
		if r, ok := ev.Payload.(*trajectory.ModelRequest); ok {
			c.recorded = append(c.recorded, r)
		}
	}
	return c
}

// Check compares the next request with its recorded counterpart. It
// returns the request's number (from 1) and the first field that differs,
// or "" when it matches.
func (c *RequestChecker) Check(req *llm.Request) (n int, diff string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	got := llm.RequestEvent(*req, c.prev, 0, false)
	c.prev = req
	if c.n > len(c.recorded) {
		return c.n, fmt.Sprintf("the recording has only %d requests", len(c.recorded))
	}
	want := c.recorded[c.n-1]
	switch {
	case got.SystemHash != want.SystemHash:
		return c.n, "system prompt"
	case !slices.Equal(got.ToolNames, want.ToolNames):
		return c.n, fmt.Sprintf("tools: sent [%s], recorded [%s]", strings.Join(got.ToolNames, " "), strings.Join(want.ToolNames, " "))
	}
	for i := range min(len(got.MessageHashes), len(want.MessageHashes)) {
		if got.MessageHashes[i] != want.MessageHashes[i] {
			return c.n, fmt.Sprintf("messages[%d]", i)
		}
	}
	if len(got.MessageHashes) != len(want.MessageHashes) {
		return c.n, fmt.Sprintf("message count: sent %d, recorded %d", len(got.MessageHashes), len(want.MessageHashes))
	}
	return c.n, ""
}
