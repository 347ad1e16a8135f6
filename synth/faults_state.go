package synth

import (
	"encoding/json"
	"slices"

	"github.com/retrace-dev/retrace/trajectory"
)

// The plants of the state detectors (stale_snapshot, phantom_user_message,
// definition_drift, pending_as_missing, cache_breaker). stale_snapshot and
// pending_as_missing are not planted: synth's system prompt carries no git
// status and its bash results are canned, and its one MCP server is
// connected from the start (its tools are in the catalog as deferred), so
// no synth session has a place for either; their fixtures cover them.

// plantedReminder is the harness text plantPhantomUserMessage injects.
const plantedReminder = "Continue with the task."

// plantCacheBreaker changes the system prompt from the second request on,
// as a harness that renders the date or a live status into it does. The
// finding is at the second request.
func plantCacheBreaker(p *planting) bool {
	var reqs []int
	system := ""
	for i, e := range p.evs {
		if r, ok := e.Payload.(*trajectory.ModelRequest); ok {
			reqs = append(reqs, i)
			if system == "" {
				system = r.System
			}
		}
	}
	if len(reqs) < 2 || system == "" {
		return false
	}
	changed := system + " Today is Tuesday."
	for k, i := range reqs[1:] {
		r := p.evs[i].Payload.(*trajectory.ModelRequest)
		r.SystemHash = trajectory.Hash([]byte(changed))
		if k == 0 {
			r.System = changed
		}
	}
	p.marks = []mark{{reqs[1], ""}}
	return true
}

// plantPhantomUserMessage injects a reminder before the request of the
// second turn and puts its text into that request's last user message
// with no harness tag around it (the message's hash recomputed in every
// request that carries it). The finding is at the reminder.
func plantPhantomUserMessage(p *planting) bool {
	for q, e := range p.evs {
		req, ok := e.Payload.(*trajectory.ModelRequest)
		if !ok || e.Turn < 2 {
			continue
		}
		m := len(req.NewMessages) - 1
		if m < 0 || req.NewMessages[m].Role != trajectory.RoleUser {
			return false
		}
		full, err := trajectory.Full(p.evs)
		if err != nil {
			return false
		}
		at := len(full[q]) - len(req.NewMessages) + m
		msg := &req.NewMessages[m]
		msg.Content = append(slices.Clone(msg.Content), trajectory.ContentBlock{Type: trajectory.BlockText, Text: plantedReminder})
		b, err := json.Marshal(msg)
		if err != nil {
			return false
		}
		// The message changed in every request that carries it: the
		// requests are chained again from the changed full lists.
		old, sum := full[q][at], trajectory.Hash(b)
		var enc trajectory.Conversation
		for i, later := range p.evs {
			r, ok := later.Payload.(*trajectory.ModelRequest)
			if !ok {
				continue
			}
			hashes := full[i]
			if i >= q && at < len(hashes) && hashes[at] == old {
				hashes = slices.Clone(hashes)
				hashes[at] = sum
			}
			enc.Encode(r, hashes)
		}
		rem := e
		rem.Payload = &trajectory.Reminder{Kind: "continue", DedupKey: "continue:planted", Role: trajectory.RoleUser, Text: plantedReminder}
		p.evs = slices.Insert(p.evs, q, rem)
		p.marks = []mark{{q, ""}}
		return true
	}
	return false
}

// plantDefinitionDrift adds a second definition of the catalog's first
// tool to session_start, as when two paths build the catalog. The finding
// (an error) is at session_start.
func plantDefinitionDrift(p *planting) bool {
	s, ok := p.evs[0].Payload.(*trajectory.SessionStart)
	if !ok || len(s.Tools) == 0 {
		return false
	}
	dup := s.Tools[0]
	dup.DefinitionHash = trajectory.Hash([]byte(dup.Name + " with its description cut"))
	s.Tools = append(slices.Clone(s.Tools), dup)
	p.marks = []mark{{0, ""}}
	return true
}
