package synth

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// The planters of the tool-layer detectors: a result the model cannot
// read right (empty, cut without notice, for an input it did not send)
// and a context that runs away.

// setResult applies fn to the text of the tool_result event at index at
// and to the content of the call's tool_result block in the first
// request after it, so that the event and what the model was sent agree.
func (p *planting) setResult(at int, fn func(string) string) {
	r := p.evs[at].Payload.(*trajectory.ToolResult)
	r.Text = fn(r.Text)
	for i := at + 1; i < len(p.evs); i++ {
		req, ok := p.evs[i].Payload.(*trajectory.ModelRequest)
		if !ok {
			continue
		}
		for m := range req.NewMessages {
			content := req.NewMessages[m].Content
			for k := range content {
				if content[k].Type == trajectory.BlockToolResult && content[k].ToolUseID == r.ToolUseID {
					content[k].Content = fn(content[k].Content)
				}
			}
		}
		return
	}
}

// successfulResults returns the indices of the tool_result events of
// calls that succeeded, in order.
func (p *planting) successfulResults() []int {
	ok := map[string]bool{}
	var out []int
	for i, e := range p.evs {
		switch pl := e.Payload.(type) {
		case *trajectory.ToolSuccess:
			ok[pl.ToolUseID] = true
		case *trajectory.ToolResult:
			if ok[pl.ToolUseID] && !pl.IsError && pl.Text != "" {
				out = append(out, i)
			}
		}
	}
	return out
}

// plantEmptyOutput empties the tool_result of the first call that
// succeeded and no hook rewrote, in the event and in the request that
// sends it. The finding
// is at the tool_result.
func plantEmptyOutput(p *planting) bool {
	// A call a hook rewrote is left alone: emptying its result would
	// also take away the executor's notice of the change, a second fault.
	// So is a truncated output: emptying it would take away the
	// truncation notice.
	rewritten := map[string]bool{}
	for _, e := range p.evs {
		switch pl := e.Payload.(type) {
		case *trajectory.HookRun:
			rewritten[pl.ToolUseID] = rewritten[pl.ToolUseID] || pl.InputChanged
		case *trajectory.ToolEnd:
			rewritten[pl.ToolUseID] = rewritten[pl.ToolUseID] || pl.Truncated
		}
	}
	for _, at := range p.successfulResults() {
		id := trajectory.ToolUseIDOf(p.evs[at].Payload)
		if rewritten[id] {
			continue
		}
		p.setResult(at, func(string) string { return "" })
		p.marks = []mark{{at, id}}
		return true
	}
	return false
}

// noticeStart starts the notice synth puts after a truncated output
// (truncationNotice).
const noticeStart = "\n\n[Output truncated"

// plantUnannouncedTruncation cuts the notice off the first truncated
// output, leaving the model the bare text; a session without a truncated
// output gets one: the first successful grep, glob or bash call is
// recorded as truncated, with a spill, and its result left as it is. The
// finding is at the tool_result.
func plantUnannouncedTruncation(p *planting) bool {
	for _, at := range p.successfulResults() {
		r := p.evs[at].Payload.(*trajectory.ToolResult)
		end := p.toolEvent(0, trajectory.TypeToolEnd, r.ToolUseID)
		if end < 0 || !p.evs[end].Payload.(*trajectory.ToolEnd).Truncated || !strings.Contains(r.Text, noticeStart) {
			continue
		}
		p.setResult(at, func(t string) string { return strings.Split(t, noticeStart)[0] })
		p.marks = []mark{{at, r.ToolUseID}}
		return true
	}
	for _, at := range p.successfulResults() {
		r := p.evs[at].Payload.(*trajectory.ToolResult)
		end := p.toolEvent(0, trajectory.TypeToolEnd, r.ToolUseID)
		if end < 0 || !slices.Contains([]string{"grep", "glob", "bash"}, r.Tool) {
			continue
		}
		e := p.evs[end].Payload.(*trajectory.ToolEnd)
		e.Truncated, e.OutputBytes = true, 61_417
		e.Spill = trajectory.BlobRef([]byte("spill:" + p.evs[0].Session + ":" + r.ToolUseID))
		p.marks = []mark{{at, r.ToolUseID}}
		return true
	}
	return false
}

// plantSilentInputChange removes the executor's notice from the result of
// the first call a hook rewrote (the finding at the hook_run); a session
// without one gets its first successful call run with another input than
// the model sent, as a harness that rewrites inputs without a hook_run
// would: a path moved under /tmp/sandbox, a command run there (the
// finding at the tool_call).
func plantSilentInputChange(p *planting) bool {
	for _, at := range p.successfulResults() {
		r := p.evs[at].Payload.(*trajectory.ToolResult)
		if !strings.HasPrefix(r.Text, hookChangedNote) {
			continue
		}
		h := -1
		for i, e := range p.evs {
			if hr, ok := e.Payload.(*trajectory.HookRun); ok && hr.ToolUseID == r.ToolUseID && hr.Phase == trajectory.HookPre && hr.InputChanged {
				h = i
				break
			}
		}
		if h < 0 {
			continue
		}
		p.setResult(at, func(t string) string { return strings.TrimPrefix(t, hookChangedNote) })
		p.marks = []mark{{h, r.ToolUseID}}
		return true
	}
	for _, at := range p.successfulResults() {
		r := p.evs[at].Payload.(*trajectory.ToolResult)
		c := p.toolEvent(0, trajectory.TypeToolCall, r.ToolUseID)
		if c < 0 || strings.Contains(strings.ToLower(r.Text), "hook") {
			continue
		}
		call := p.evs[c].Payload.(*trajectory.ToolCall)
		in, ok := rewritten(call.Input)
		if !ok {
			continue
		}
		call.Input = in
		p.marks = []mark{{c, r.ToolUseID}}
		return true
	}
	return false
}

// rewritten returns input with its first path, command or other string
// field moved under /tmp/sandbox, or false when it has no string field.
func rewritten(input json.RawMessage) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return nil, false
	}
	keys := []string{"file_path", "path", "command"}
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys[3:])
	for _, k := range keys {
		var v string
		if raw, ok := m[k]; !ok || json.Unmarshal(raw, &v) != nil {
			continue
		}
		if k == "command" {
			v = "cd /tmp/sandbox && " + v
		} else {
			v = "/tmp/sandbox/" + v
		}
		m[k], _ = json.Marshal(v)
		out, err := json.Marshal(m)
		return out, err == nil
	}
	return nil, false
}

// runawayTurns is how many responses without a compaction between them a
// context_runaway plant needs: the detector's default min_turns.
const runawayTurns = 10

// runawayPeak is the context the planted stretch ends at: past the
// detector's min_tokens (50 000), well under the share of the window that
// would also make it a window finding.
const runawayPeak = 70_000

// plantContextRunaway makes the first stretch of runawayTurns or more
// responses without a compaction between them grow quadratically, from
// its first response's context to runawayPeak: each response's input,
// cache read and cache creation tokens are scaled alike, so the cache
// shares stay as they were, and session_end's usage is updated. Sessions
// that ended on a budget are left alone: their ending follows from the
// totals. The finding is at the stretch's last response.
func plantContextRunaway(p *planting) bool {
	last := len(p.evs) - 1
	end, ok := p.evs[last].Payload.(*trajectory.SessionEnd)
	if !ok || end.Reason == trajectory.EndTokenBudget || end.Reason == trajectory.EndCostBudget {
		return false
	}
	var run, cur []int
	for i, e := range p.evs {
		switch e.Payload.(type) {
		case *trajectory.Compaction:
			if run == nil && len(cur) >= runawayTurns {
				run = cur
			}
			cur = nil
		case *trajectory.ModelResponse:
			cur = append(cur, i)
		}
	}
	if run == nil && len(cur) >= runawayTurns {
		run = cur
	}
	if run == nil {
		return false
	}
	first := p.response(run[0]).Usage
	c0 := first.InputTokens + first.CacheReadTokens + first.CacheCreationTokens
	m := len(run) - 1
	if c0 <= 0 || c0 >= runawayPeak/2 {
		return false
	}
	q := float64(runawayPeak-c0) / float64(m*m)
	for k, i := range run[1:] {
		u := &p.response(i).Usage
		before := *u
		c := before.InputTokens + before.CacheReadTokens + before.CacheCreationTokens
		if c <= 0 {
			return false
		}
		n := float64(k + 1)
		scale := (float64(c0) + q*n*n) / float64(c)
		u.CacheReadTokens = int64(math.Round(float64(before.CacheReadTokens) * scale))
		u.CacheCreationTokens = int64(math.Round(float64(before.CacheCreationTokens) * scale))
		u.InputTokens = int64(math.Round(float64(c0)+q*n*n)) - u.CacheReadTokens - u.CacheCreationTokens
		end.Usage.InputTokens += u.InputTokens - before.InputTokens
		end.Usage.CacheReadTokens += u.CacheReadTokens - before.CacheReadTokens
		end.Usage.CacheCreationTokens += u.CacheCreationTokens - before.CacheCreationTokens
	}
	p.marks = []mark{{run[m], ""}}
	return true
}
