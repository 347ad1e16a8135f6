package compare

import (
	"fmt"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// compareCalls aligns tool calls by tool_use_id, which a replay keeps
// because the model's replies are replayed verbatim.
func (c *comparer) compareCalls(rec, rep *session) {
	for _, id := range rec.callIDs {
		r := rec.calls[id]
		p, ok := rep.calls[id]
		if !ok {
			c.add(Divergence{Turn: r.turn, ToolUseID: id, Class: ClassCallMissing, Field: "tool_call",
				Recorded: r.tool, Detail: "the replay never took up this call", order: r.order})
			continue
		}
		c.compareCall(r, p)
	}
	for _, id := range rep.callIDs {
		if _, ok := rec.calls[id]; ok {
			continue
		}
		p := rep.calls[id]
		c.add(Divergence{Turn: p.turn, ToolUseID: id, Class: ClassCallExtra, Field: "tool_call",
			Replayed: p.tool, Detail: "the replay made a call the recording lacks", order: p.order})
	}
}

func (c *comparer) compareCall(r, p *call) {
	d := Divergence{Turn: r.turn, ToolUseID: r.id, order: r.order}
	if r.hasCall != p.hasCall {
		d.Class, d.Field = ClassCallMissing, "tool_call"
		d.Recorded, d.Replayed = present(r.hasCall), present(p.hasCall)
		if p.hasCall {
			d.Class = ClassCallExtra
		}
		d.Detail = "the executor took up this call on one side only"
		c.add(d)
	} else if ri, pi := c.canonJSON(c.rn, r.input, r.tool), c.canonJSON(c.pn, p.input, r.tool); ri != pi {
		d.Class, d.Field, d.Recorded, d.Replayed = ClassResponse, "input", ri, pi
		d.Detail = "the tool input differs"
		c.add(d)
	}
	c.compareHooks(r, p)
	c.comparePerms(r, p)
	level := c.rn.level(r.tool)
	if level == LevelIgnore {
		return
	}
	if r.outcome != p.outcome {
		d.Class, d.Field = ClassFailureKind, "outcome"
		d.Recorded, d.Replayed = orNone(r.outcome), orNone(p.outcome)
		d.Detail = "the call ended differently"
		c.add(d)
	}
	c.compareResult(r, p, level)
}

func present(b bool) string {
	if b {
		return "present"
	}
	return "absent"
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func (c *comparer) compareHooks(r, p *call) {
	type key struct {
		phase trajectory.HookPhase
		hook  string
		nth   int
	}
	keyed := func(hs []*trajectory.HookRun) ([]key, map[key]*trajectory.HookRun) {
		seen := map[key]int{}
		m := map[key]*trajectory.HookRun{}
		var order []key
		for _, h := range hs {
			k := key{phase: h.Phase, hook: h.Hook}
			k.nth = seen[k]
			seen[k]++
			m[k] = h
			order = append(order, k)
		}
		return order, m
	}
	rOrder, rm := keyed(r.hooks)
	pOrder, pm := keyed(p.hooks)
	text := func(h *trajectory.HookRun) string {
		if h == nil {
			return "(did not run)"
		}
		s := string(h.Outcome)
		if h.InputChanged {
			s += ", input changed"
		}
		return s
	}
	for _, k := range rOrder {
		if a, b := text(rm[k]), text(pm[k]); a != b {
			c.add(Divergence{Turn: r.turn, ToolUseID: r.id, Class: ClassHook,
				Field: fmt.Sprintf("hook %s %s", k.phase, k.hook), Recorded: a, Replayed: b,
				Detail: "the hook's outcome changed", order: r.order})
		}
	}
	for _, k := range pOrder {
		if _, ok := rm[k]; !ok {
			c.add(Divergence{Turn: r.turn, ToolUseID: r.id, Class: ClassHook,
				Field: fmt.Sprintf("hook %s %s", k.phase, k.hook), Recorded: text(nil), Replayed: text(pm[k]),
				Detail: "the hook ran only in the replay", order: r.order})
		}
	}
}

// permText lists every decision of a call, so that a change of source,
// step or rule counts even when the verdict stays the same.
func permText(evs []trajectory.Event) string {
	if len(evs) == 0 {
		return "(no decision)"
	}
	parts := make([]string, 0, len(evs))
	for _, ev := range evs {
		verb, d := decision(ev.Payload)
		s := fmt.Sprintf("%s source=%s step=%s", verb, d.Source, d.Step)
		if d.Rule != "" {
			s += " rule=" + d.Rule
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func decision(p trajectory.Payload) (string, trajectory.PermissionDecision) {
	switch p := p.(type) {
	case *trajectory.PermissionAllow:
		return "allow", p.PermissionDecision
	case *trajectory.PermissionPrompt:
		return "prompt", p.PermissionDecision
	case *trajectory.PermissionDeny:
		return "deny", p.PermissionDecision
	}
	return "", trajectory.PermissionDecision{}
}

// verdict says how a call's permission ended, in the words of the what-if
// line: "allowed", "denied by rule Bash(rm:*)", "denied by non_interactive".
func verdict(evs []trajectory.Event, why bool) string {
	if len(evs) == 0 {
		return "not decided"
	}
	verb, d := decision(evs[len(evs)-1].Payload)
	word := map[string]string{"allow": "allowed", "prompt": "prompted", "deny": "denied"}[verb]
	if !why {
		return word
	}
	if d.Rule != "" {
		return word + " by rule " + d.Rule
	}
	return word + " by " + string(d.Source)
}

func (c *comparer) comparePerms(r, p *call) {
	a, b := permText(r.perms), permText(p.perms)
	if a == b {
		return
	}
	// The left side names its reason only when the verdict word alone would
	// not show what changed.
	left, right := verdict(r.perms, false), verdict(p.perms, true)
	if left == verdict(p.perms, false) {
		left = verdict(r.perms, true)
	}
	c.add(Divergence{Turn: r.turn, ToolUseID: r.id, Class: ClassPermission, Field: "decision",
		Recorded: a, Replayed: b, Detail: "the permission decision changed", Summary: left + " → " + right, order: r.order})
	c.whatIf = append(c.whatIf, whatIfLine{turn: r.turn, order: r.order,
		text: fmt.Sprintf("turn %d, %s: %s → %s", r.turn, r.id, left, right)})
}

func (c *comparer) compareResult(r, p *call, level Level) {
	d := Divergence{Turn: r.turn, ToolUseID: r.id, Class: ClassToolOutput, order: r.order}
	switch {
	case r.result == nil && p.result == nil:
		return
	case r.result == nil || p.result == nil:
		d.Field, d.Recorded, d.Replayed = "tool_result", present(r.result != nil), present(p.result != nil)
		d.Detail = "a tool_result was produced on one side only"
		c.add(d)
		return
	}
	if r.result.IsError != p.result.IsError {
		d.Field = "is_error"
		d.Recorded, d.Replayed = fmt.Sprint(r.result.IsError), fmt.Sprint(p.result.IsError)
		d.Detail = "the result's error flag changed"
		c.add(d)
	}
	if level == LevelExitCode {
		return
	}
	if a, b := c.rn.text(r.result.Text, ScopeToolOutput, r.tool), c.pn.text(p.result.Text, ScopeToolOutput, r.tool); a != b {
		d.Field, d.Recorded, d.Replayed = "text", a, b
		d.Detail = firstDiff(a, b)
		c.add(d)
	}
}

// firstDiff says where two texts first part, so a long output's change can
// be found without diffing by hand.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	line := strings.Count(a[:i], "\n") + 1
	return fmt.Sprintf("the tool output differs from byte %d (line %d); %d bytes recorded, %d replayed", i, line, len(a), len(b))
}
