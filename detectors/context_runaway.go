package detectors

import (
	"fmt"

	"github.com/retrace-dev/retrace/trajectory"
)

// contextTokens is what one request put in the model's context, as its
// response's usage counts it: the uncached input and the cache reads and
// writes (Usage.InputTokens excludes both).
func contextTokens(u trajectory.Usage) int64 {
	return u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens
}

// contextRunaway finds two ways a session's context runs away: a request that fills window_share of
// the model's window without a compaction right before it (the harness
// should have compacted earlier; once per session), and a stretch of
// min_turns or more requests without a compaction whose growth speeds
// up, the second half adding growth_factor times what the first half
// added with the per-turn increments rising steadily (Kendall's tau at
// least min_trend), up to min_tokens or more. Linear growth, each turn
// adding about what its output and results hold, is what an agent's
// context does; faster growth means something is re-sent and piles up
// (reminders that are not deduplicated, a result that repeats the
// history).
//
// The contract does not carry the model's context window, so it is the
// window_tokens threshold. session_start's limits.context_tokens is not
// used as the window: it bounds the runtime's estimate of the history
// (bytes/4, without the system prompt and tools), which a request may
// rightly exceed.
func contextRunaway(d *goDetector, s *Session, p Params) []Finding {
	window, share := p.Float("window_tokens"), p.Float("window_share")
	minTurns, factor := p.Int("min_turns"), p.Float("growth_factor")
	minTrend, minTokens := p.Float("min_trend"), p.Float("min_tokens")
	var out []Finding
	// lastCompaction is the turn of the latest compaction (0 for none);
	// justCompacted is set between a compaction and the next response,
	// whose request is the compaction's result: the harness did act.
	lastCompaction, justCompacted, warned := 0, false, false
	var run []Located
	check := func() {
		if f, ok := speedingUp(d, s, run, minTurns, factor, minTrend, minTokens); ok {
			out = append(out, f)
		}
		run = nil
	}
	for _, e := range s.Events {
		switch r := e.Payload.(type) {
		case *trajectory.Compaction:
			lastCompaction, justCompacted = e.Turn, true
			check()
		case *trajectory.ModelResponse:
			run = append(run, e)
			n := contextTokens(r.Usage)
			if !justCompacted && !warned && window > 0 && float64(n) >= share*window {
				warned = true
				since := "the session had not compacted its context before it"
				if lastCompaction > 0 {
					since = fmt.Sprintf("the session had not compacted its context since turn %d", lastCompaction)
				}
				out = append(out, d.finding(s, fmt.Sprintf("the request of turn %d carried %d context tokens, %.0f%% of the %.0f-token window (window_tokens; window_share %.2f), and %s",
					e.Turn, n, 100*float64(n)/window, window, share, since), e))
			}
			justCompacted = false
		}
	}
	check()
	return out
}

// speedingUp judges one stretch of responses without a compaction between
// them, and returns a finding when its context growth is faster than
// linear.
func speedingUp(d *goDetector, s *Session, run []Located, minTurns int, factor, minTrend, minTokens float64) (Finding, bool) {
	if len(run) < minTurns || len(run) < 3 {
		return Finding{}, false
	}
	c := make([]int64, len(run))
	for i, e := range run {
		c[i] = contextTokens(e.Payload.(*trajectory.ModelResponse).Usage)
	}
	m := len(c) - 1
	h := m / 2
	first, last := c[h]-c[0], c[m]-c[m-h]
	if first <= 0 || last <= 0 || float64(c[m]) < minTokens || float64(last) < factor*float64(first) {
		return Finding{}, false
	}
	steps := make([]int64, m)
	for i := range steps {
		steps[i] = c[i+1] - c[i]
	}
	tau := kendallTau(steps)
	if tau < minTrend {
		return Finding{}, false
	}
	f := d.finding(s, fmt.Sprintf("over %d requests without a compaction (turns %d to %d) the context grew from %d to %d tokens: the last %d turns added %d tokens, %.1f times the %d of the first %d (growth_factor %.1f), and the per-turn growth kept rising (Kendall's tau %.2f, min_trend %.2f)",
		len(run), run[0].Turn, run[m].Turn, c[0], c[m], h, last, float64(last)/float64(first), first, h, factor, tau, minTrend),
		run[m], run[0], run[h])
	return f, true
}

// kendallTau is the rank correlation of xs with their order, from -1
// (always falling) to 1 (always rising); ties count as neither.
func kendallTau(xs []int64) float64 {
	n := len(xs)
	if n < 2 {
		return 0
	}
	score := 0
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			switch {
			case xs[j] > xs[i]:
				score++
			case xs[j] < xs[i]:
				score--
			}
		}
	}
	return float64(score) / float64(n*(n-1)/2)
}
