package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// byTurn groups model calls by turn, keeping their order within a turn;
// retries and defense re-asks put more than one request in a turn.
func byTurn(ms []modelCall) map[int][]modelCall {
	out := map[int][]modelCall{}
	for _, m := range ms {
		out[m.turn] = append(out[m.turn], m)
	}
	return out
}

func turnsOf(a, b map[int][]modelCall) []int {
	set := map[int]bool{}
	for t := range a {
		set[t] = true
	}
	for t := range b {
		set[t] = true
	}
	turns := make([]int, 0, len(set))
	for t := range set {
		turns = append(turns, t)
	}
	sort.Ints(turns)
	return turns
}

func (c *comparer) compareModel(rec, rep *session) {
	c.compareRequests(rec, rep)
	c.compareResponses(rec, rep)
}

// compareRequests reports the first changed request in full. Every later
// request is sent after a conversation that already differs, so it cannot
// match the recording; that is said once rather than once per turn.
func (c *comparer) compareRequests(rec, rep *session) {
	rt, pt := byTurn(rec.requests), byTurn(rep.requests)
	changed, saidOnce := false, false
	for _, turn := range turnsOf(rt, pt) {
		rs, ps := rt[turn], pt[turn]
		for i := 0; i < len(rs) || i < len(ps); i++ {
			var d Divergence
			switch {
			case i >= len(ps):
				d = Divergence{Turn: turn, Class: ClassCallMissing, Field: "model_request",
					Recorded: "present", Replayed: "absent", order: rs[i].order,
					Detail: "the replay sent fewer model requests in this turn"}
			case i >= len(rs):
				d = Divergence{Turn: turn, Class: ClassCallExtra, Field: "model_request",
					Recorded: "absent", Replayed: "present", order: afterTurn(rs, ps[i].order),
					Detail: "the replay sent a model request the recording lacks"}
			default:
				var same bool
				d, same = c.diffRequest(rec, rep, rs[i], ps[i])
				if same {
					continue
				}
				d.Turn, d.Class, d.order = turn, ClassRequestPrefix, rs[i].order
			}
			if changed {
				if !saidOnce {
					saidOnce = true
					c.add(Divergence{Turn: turn, Class: ClassRequestPrefix, Field: "model_request",
						Detail: DetailLaterRequests, order: d.order})
				}
				continue
			}
			changed = true
			c.add(d)
		}
	}
}

// afterTurn places an extra event after the recorded ones of its turn.
func afterTurn(rs []modelCall, fallback int) int {
	if len(rs) > 0 {
		return rs[len(rs)-1].order + 1
	}
	return fallback
}

// diffRequest returns the first differing field of two requests, in the
// order a provider caches them: system, tools, then messages (their full
// lists, so v1 and v2 recordings compare alike).
func (c *comparer) diffRequest(rec, rep *session, ra, rb modelCall) (Divergence, bool) {
	a, b := ra.req, rb.req
	am, bm := ra.msgs, rb.msgs
	d := Divergence{}
	cache := func(field string, breaks bool) string {
		if breaks {
			return field + " differs; this breaks the prompt cache (the cached prefix no longer matches)"
		}
		return field + " differs; the prompt cache still holds (the cached prefix is unchanged)"
	}
	// Equal hashes mean equal bytes, so only differing hashes need the
	// normalised text.
	if as, bs := c.systemText(rec, a), c.systemText(rep, b); a.SystemHash != b.SystemHash && as != bs {
		d.Field, d.Recorded, d.Replayed, d.Detail = "system", as, bs, cache("system", true)
		return d, false
	}
	if an, bn := strings.Join(a.ToolNames, ","), strings.Join(b.ToolNames, ","); an != bn {
		d.Field, d.Recorded, d.Replayed, d.Detail = "tool_names", an, bn, cache("tool_names (the tools or their order)", true)
		return d, false
	}
	if a.ToolsHash != b.ToolsHash {
		d.Field, d.Recorded, d.Replayed, d.Detail = "tools_hash", a.ToolsHash, b.ToolsHash, cache("tools_hash (a tool definition)", true)
		return d, false
	}
	n := min(len(am), len(bm))
	// Equal prefix hashes mean equal message lists (both are chains over
	// the full lists): nothing to walk.
	sameMessages := a.PrefixHash != "" && a.PrefixHash == b.PrefixHash
	for i := 0; i < n && !sameMessages; i++ {
		if am[i] == bm[i] {
			continue
		}
		at, bt := c.messageText(rec, am[i]), c.messageText(rep, bm[i])
		if at == bt {
			continue
		}
		field := fmt.Sprintf("messages[%d]", i)
		// Only the newest message is outside the cached prefix.
		breaks := i < len(am)-1
		d.Field, d.Recorded, d.Replayed, d.Detail = field, at, bt, cache(field, breaks)
		return d, false
	}
	switch {
	case len(bm) > n:
		d.Field = "messages"
		d.Recorded, d.Replayed = fmt.Sprint(len(am)), fmt.Sprint(len(bm))
		d.Detail = fmt.Sprintf("%d message(s) appended; the prompt cache still holds (the cached prefix is unchanged)", len(bm)-n)
		return d, false
	case len(am) > n:
		d.Field = "messages"
		d.Recorded, d.Replayed = fmt.Sprint(len(am)), fmt.Sprint(len(bm))
		d.Detail = fmt.Sprintf("%d message(s) fewer at the end; the prompt cache still holds (the cached prefix is unchanged)", len(am)-n)
		return d, false
	}
	if a.MaxTokens != b.MaxTokens {
		d.Field = "max_tokens"
		d.Recorded, d.Replayed = fmt.Sprint(a.MaxTokens), fmt.Sprint(b.MaxTokens)
		d.Detail = cache("max_tokens", false)
		return d, false
	}
	return d, true
}

// systemText is the normalised system prompt when its text was recorded,
// else its hash: hashes cannot be normalised, text can.
func (c *comparer) systemText(s *session, r *trajectory.ModelRequest) string {
	if t, ok := s.systems[r.SystemHash]; ok {
		return s.n.text(t, ScopeModelText, "")
	}
	return "hash " + r.SystemHash
}

// messageText is the normalised JSON of the message with hash, else the
// hash. It is kept per side, so a message every later request repeats is
// normalised (and its rule matches counted) once.
func (c *comparer) messageText(s *session, hash string) string {
	if t, ok := s.normalized[hash]; ok {
		return t
	}
	t := "hash " + hash
	if m, ok := s.messages[hash]; ok {
		if b, err := marshal(c.normMessage(s.n, m)); err == nil {
			t = string(b)
		}
	}
	s.normalized[hash] = t
	return t
}

// notCompared stands in for the output of a tool whose level leaves its
// text out of the comparison.
const notCompared = "<not compared>"

// normMessage normalises every string of a message by its scope and tool,
// re-encodes tool inputs so that key order does not count, and leaves out
// the output of tools whose level does not compare it.
func (c *comparer) normMessage(n *normalizer, m trajectory.Message) trajectory.Message {
	out := trajectory.Message{Role: m.Role, Content: make([]trajectory.ContentBlock, len(m.Content))}
	for i, b := range m.Content {
		switch b.Type {
		case trajectory.BlockToolUse:
			b.PartialInput = n.text(b.PartialInput, ScopeToolInput, b.Name)
			if len(b.Input) > 0 {
				b.Input = json.RawMessage(c.canonJSON(n, b.Input, b.Name))
				if !json.Valid(b.Input) {
					// A rewrite produced invalid JSON; keep it comparable as text.
					b.PartialInput, b.Input = string(b.Input), nil
				}
			}
		case trajectory.BlockToolResult:
			tool := c.tools[b.ToolUseID]
			switch n.level(tool) {
			case LevelIgnore:
				b.Content, b.IsError = notCompared, false
			case LevelExitCode:
				b.Content = notCompared
			default:
				b.Content = n.text(b.Content, ScopeToolOutput, tool)
			}
		default:
			b.Text = n.text(b.Text, ScopeModelText, "")
			b.Content = n.text(b.Content, ScopeModelText, "")
		}
		out.Content[i] = b
	}
	return out
}

func (c *comparer) compareResponses(rec, rep *session) {
	rt, pt := byTurn(rec.resps), byTurn(rep.resps)
	for _, turn := range turnsOf(rt, pt) {
		rs, ps := rt[turn], pt[turn]
		for i := 0; i < len(rs) || i < len(ps); i++ {
			switch {
			case i >= len(ps):
				c.add(Divergence{Turn: turn, Class: ClassCallMissing, Field: "model_response",
					Recorded: "present", Replayed: "absent", order: rs[i].order,
					Detail: "the replay received fewer model responses in this turn"})
			case i >= len(rs):
				c.add(Divergence{Turn: turn, Class: ClassCallExtra, Field: "model_response",
					Recorded: "absent", Replayed: "present", order: afterTurn(rs, ps[i].order),
					Detail: "the replay received a model response the recording lacks"})
			default:
				c.diffResponse(turn, rs[i], ps[i])
			}
		}
	}
}

func (c *comparer) diffResponse(turn int, r, p modelCall) {
	d := Divergence{Turn: turn, Class: ClassResponse, order: r.order}
	if r.resp.StopReason != p.resp.StopReason {
		d.Field, d.Recorded, d.Replayed = "stop_reason", string(r.resp.StopReason), string(p.resp.StopReason)
		d.Detail = "the model stopped for another reason"
		c.add(d)
	}
	a := c.contentText(c.rn, r.resp.Content)
	b := c.contentText(c.pn, p.resp.Content)
	if a != b {
		d.Field, d.Recorded, d.Replayed = "content", a, b
		d.Detail = "the model's reply differs"
		c.add(d)
	}
}

func (c *comparer) contentText(n *normalizer, blocks []trajectory.ContentBlock) string {
	b, err := marshal(c.normMessage(n, trajectory.Message{Content: blocks}).Content)
	if err != nil {
		return fmt.Sprint(blocks)
	}
	return string(b)
}

func (c *comparer) compareDefenses(rec, rep *session) {
	for _, k := range rec.defOrder {
		r := rec.defenses[k]
		p, ok := rep.defenses[k]
		switch {
		case !ok:
			c.add(Divergence{Turn: r.turn, ToolUseID: k.toolUseID, Class: ClassDefenseStopped,
				Field: string(k.defense), Recorded: string(r.action), Replayed: "(did not act)",
				Detail: "the defense acted in the recording but not in the replay", order: r.order})
		case p.action != r.action:
			c.add(Divergence{Turn: r.turn, ToolUseID: k.toolUseID, Class: ClassDefenseFired,
				Field: string(k.defense), Recorded: string(r.action), Replayed: string(p.action),
				Detail: "the defense acted differently (action changed)", order: r.order})
		}
	}
	for _, k := range rep.defOrder {
		if _, ok := rec.defenses[k]; ok {
			continue
		}
		p := rep.defenses[k]
		c.add(Divergence{Turn: p.turn, ToolUseID: k.toolUseID, Class: ClassDefenseFired,
			Field: string(k.defense), Recorded: "(did not act)", Replayed: string(p.action),
			Detail: "the defense acted in the replay but not in the recording", order: p.order})
	}
}

func (c *comparer) compareEnd(rec, rep *session) {
	reason := func(e *trajectory.SessionEnd) string {
		if e == nil {
			return "(no session_end)"
		}
		return string(e.Reason)
	}
	a, b := reason(rec.end), reason(rep.end)
	if a == b {
		return
	}
	turn, order := rec.endTurn, rec.endOrder
	if rec.end == nil {
		turn, order = rep.endTurn, rep.endOrder
	}
	c.add(Divergence{Turn: turn, Class: ClassEnd, Field: "reason", Recorded: a, Replayed: b,
		Detail: "the session ended for another reason", order: order})
}

// marshal encodes v as JSON without escaping <, > and &, so a marker such
// as <tmp> reads as itself in a report.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
