package detectors

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// Defaults of cache_breaker's thresholds.
const (
	// cacheWarmShare is the cache-read share of a response's input tokens
	// at which the cache counts as warm, and below which a later response
	// counts as a drop.
	cacheWarmShare = 0.5
	// cacheTTLSeconds is the provider's cache lifetime: a request sent
	// longer than this after the previous response finds the cache
	// expired, which is no breaker.
	cacheTTLSeconds = 300
	// cacheMinDrops is how many unexplained drops a session needs before
	// they are reported: one is most often the provider evicting the
	// cache, a pattern needs more.
	cacheMinDrops = 2
)

// cacheBreaker finds a byte-stable part of the request prefix that changed
// between two requests of a session: the system prompt
// (system_hash), the tool list (tool_names order or set) or the tools'
// bytes (tools_hash with the same names), or the messages already sent
// (the previous request's messages no longer a prefix of the next
// request's: a v2 request keeping fewer than were sent) without a
// compaction between. Each change is a warning at the request where it
// happened.
//
// Two changes are legitimate and not reported: tools appended at the end
// of the list (a deferred tool loaded by tool_search, or the tools of an
// MCP server that connected late; the runtime appends them so the earlier
// definitions stay as they were), and messages rewritten by a compaction.
//
// It also reports, at info, a session with min_unexplained_drops or more
// responses whose cache-read share of input tokens fell below
// min_cache_read_share after it had reached it, with no change above, no
// compaction and no gap over cache_ttl_seconds to explain it: a change
// the contract does not hash, or the provider evicting the cache. Worth
// knowing, not a certain defect.
func cacheBreaker(d *goDetector, s *Session, p Params) []Finding {
	minShare, ttl := p.Float("min_cache_read_share"), time.Duration(p.Float("cache_ttl_seconds")*float64(time.Second))
	var out []Finding
	var prev Located
	n := 0
	// explained is set when something since the previous response
	// accounts for a cache miss: a compaction, a prefix change (reported
	// or legitimate), or a gap longer than the cache lives.
	explained, compacted, warm := false, false, false
	var warmAt Located
	var lastResp time.Time
	var drops []Located
	// conv gives each request's full message list, in either version.
	var conv trajectory.Conversation
	var prevMsgs []string
	for _, e := range s.Events {
		switch pl := e.Payload.(type) {
		case *trajectory.Compaction:
			explained, compacted = true, true
		case *trajectory.ModelRequest:
			n++
			msgs, _ := conv.Next(pl) // a broken chain is validate's to report
			if !lastResp.IsZero() && e.TS.Sub(lastResp) > ttl {
				explained = true
			}
			if n > 1 {
				pr := prev.Payload.(*trajectory.ModelRequest)
				if pr.SystemHash != pl.SystemHash {
					explained = true
					out = append(out, d.finding(s, fmt.Sprintf("the system prompt changed at request %d (turn %d): system_hash %s became %s, so this request and every one after it pay for the whole prompt again; keep the system prompt byte-stable and send what changes in the messages",
						n, e.Turn, pr.SystemHash, pl.SystemHash), e, prev))
				}
				if pr.ToolsHash != pl.ToolsHash {
					explained = true
					if what := toolsChange(pr.ToolNames, pl.ToolNames); what != "" {
						out = append(out, d.finding(s, fmt.Sprintf("the tools changed at request %d (turn %d): %s (tools_hash %s became %s), which breaks the cached prefix of every request after it",
							n, e.Turn, what, pr.ToolsHash, pl.ToolsHash), e, prev))
					}
				}
				if i := rewritten(prevMsgs, msgs); i >= 0 && !compacted {
					explained = true
					out = append(out, d.finding(s, fmt.Sprintf("message %d of %d, already sent in request %d, changed in request %d (turn %d) with no compaction between: the history before the new messages must stay byte-identical for the cache to hit",
						i+1, len(prevMsgs), n-1, n, e.Turn), e, prev))
				}
			}
			prev, prevMsgs, compacted = e, msgs, false
		case *trajectory.ModelResponse:
			u := pl.Usage
			total := u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens
			if total > 0 {
				share := float64(u.CacheReadTokens) / float64(total)
				switch {
				case share >= minShare:
					if !warm {
						warm, warmAt = true, e
					}
				case warm && !explained:
					drops = append(drops, e)
				}
			}
			explained, lastResp = false, e.TS
		}
	}
	if len(drops) > 0 && len(drops) >= p.Int("min_unexplained_drops") {
		turns := make([]string, len(drops))
		for i, e := range drops {
			turns[i] = fmt.Sprint(e.Turn)
		}
		f := d.finding(s, fmt.Sprintf("the cache-read share of input tokens fell below min_cache_read_share %g in %d responses (turns %s; min_unexplained_drops %d) after it reached it at turn %d, with no prefix change, no compaction and no gap over cache_ttl_seconds %g to explain it: something the contract does not hash changed, or the provider evicted the cache",
			minShare, len(drops), strings.Join(turns, ", "), p.Int("min_unexplained_drops"), warmAt.Turn, p.Float("cache_ttl_seconds")), drops...)
		f.Severity = SeverityInfo
		out = append(out, f)
	}
	return out
}

// toolsChange says how the tool list changed from old to cur, or "" when
// the change is tools appended at the end (a deferred tool loaded, a late
// MCP server's tools), which the runtime does on purpose.
func toolsChange(old, cur []string) string {
	switch {
	case len(cur) > len(old) && slices.Equal(cur[:len(old)], old):
		return ""
	case slices.Equal(old, cur):
		return fmt.Sprintf("the definitions' bytes changed, with the same %d tools in the same order", len(cur))
	}
	a, b := slices.Sorted(slices.Values(old)), slices.Sorted(slices.Values(cur))
	if slices.Equal(a, b) {
		i := 0
		for i < len(old) && old[i] == cur[i] {
			i++
		}
		return fmt.Sprintf("the same %d tools were sent in another order (position %d: %s, then %s)", len(cur), i+1, old[i], cur[i])
	}
	var gone, added []string
	for _, t := range old {
		if !slices.Contains(cur, t) {
			gone = append(gone, t)
		}
	}
	for _, t := range cur {
		if !slices.Contains(old, t) {
			added = append(added, t)
		}
	}
	var parts []string
	if len(gone) > 0 {
		parts = append(parts, "removed "+strings.Join(gone, ", "))
	}
	if len(added) > 0 {
		parts = append(parts, "added "+strings.Join(added, ", ")+" not at the end")
	}
	if len(parts) == 0 {
		parts = append(parts, "the list was reordered")
	}
	return strings.Join(parts, "; ")
}

// rewritten returns the index of the first message of old that cur no
// longer holds at the same place, or -1 when old is a prefix of cur.
func rewritten(old, cur []string) int {
	for i, h := range old {
		if i >= len(cur) || cur[i] != h {
			return i
		}
	}
	return -1
}
