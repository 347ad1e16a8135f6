package synth

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// The planters of the museum's detectors; the
// corpus-level denominator_shift has none (see the package doc).

// setResultText gives call id the model-side text in its tool_result event
// and in the tool_result block of the request that carries it.
func (p *planting) setResultText(id, text string) {
	for _, e := range p.evs {
		switch pl := e.Payload.(type) {
		case *trajectory.ToolResult:
			if pl.ToolUseID == id {
				pl.Text = text
			}
		case *trajectory.ModelRequest:
			for m := range pl.NewMessages {
				for k := range pl.NewMessages[m].Content {
					if b := &pl.NewMessages[m].Content[k]; b.Type == trajectory.BlockToolResult && b.ToolUseID == id {
						b.Content = text
					}
				}
			}
		}
	}
}

// resultText returns call id's tool_result text.
func (p *planting) resultText(id string) string {
	if i := p.toolEvent(0, trajectory.TypeToolResult, id); i >= 0 {
		return p.evs[i].Payload.(*trajectory.ToolResult).Text
	}
	return ""
}

// plantDecisionCountedAsTrigger records a defense_trigger at every check
// of one defense, as a counter placed in the predicate that decides would:
// after every permission_deny of a session that enabled the denial fuse
// and denied three or more calls without it acting, else after the
// result of every read-only call of a session that enabled the
// repeated-readonly guard and made three or more without it acting. The
// finding is at the first of them.
func plantDecisionCountedAsTrigger(p *planting) bool {
	start, ok := p.evs[0].Payload.(*trajectory.SessionStart)
	if !ok {
		return false
	}
	readOnly := map[string]bool{}
	for _, t := range start.Tools {
		readOnly[t.Name] = t.ReadOnly
	}
	acted := map[trajectory.DefenseName]bool{}
	var denies, reads []int
	for i, e := range p.evs {
		switch pl := e.Payload.(type) {
		case *trajectory.PermissionDeny:
			denies = append(denies, i)
		case *trajectory.ToolResult:
			if readOnly[pl.Tool] && p.toolEvent(0, trajectory.TypeToolCall, pl.ToolUseID) >= 0 {
				reads = append(reads, i)
			}
		case *trajectory.DefenseTrigger:
			acted[pl.Defense] = true
		}
	}
	enabled := func(d trajectory.DefenseName) bool { return slices.Contains(start.Defenses, d) && !acted[d] }
	switch {
	case enabled(trajectory.DefenseDenialFuse) && len(denies) >= 3:
		p.triggerAfter(denies, trajectory.DefenseDenialFuse, trajectory.ActionNeedsConfirmation)
	case enabled(trajectory.DefenseRepeatedReadOnly) && len(reads) >= 3:
		p.triggerAfter(reads, trajectory.DefenseRepeatedReadOnly, trajectory.ActionRemind)
	default:
		return false
	}
	return true
}

// triggerAfter inserts a defense_trigger of d after each event at the
// given indices (in order), about the same call, and marks the first.
func (p *planting) triggerAfter(at []int, d trajectory.DefenseName, a trajectory.DefenseAction) {
	for k := len(at) - 1; k >= 0; k-- {
		i := at[k]
		ev := p.evs[i]
		ref := trajectory.ToolRefOf(ev.Payload)
		ev.Payload = &trajectory.DefenseTrigger{Defense: d, Action: a, ToolUseID: ref.ToolUseID, Count: k + 1,
			Evidence: map[string]string{"tool": ref.Tool}}
		p.evs = slices.Insert(p.evs, i+1, ev)
	}
	p.marks = []mark{{at[0] + 1, trajectory.ToolUseIDOf(p.evs[at[0]].Payload)}}
}

// plantSpillReadLoop makes a later successful bash call read back a
// spilled output by its path and get it truncated and spilled to the same
// blob, with the same truncated text: a loop. The spill is
// the session's first one or, as synth spills rarely, the output of its
// first successful bash, grep or glob call made large, truncated and
// spilled as synth's executor would. The finding is at the spilling
// tool_end, at error.
func plantSpillReadLoop(p *planting) bool {
	for pass := 0; pass < 2; pass++ {
		for i, e := range p.evs {
			end, ok := e.Payload.(*trajectory.ToolEnd)
			if !ok {
				continue
			}
			made := false
			if pass == 1 && !end.Truncated && (end.Tool == "bash" || end.Tool == "grep" || end.Tool == "glob") &&
				p.toolEvent(0, trajectory.TypeToolSuccess, end.ToolUseID) >= 0 {
				made = true
			} else if !end.Truncated || end.Spill == "" {
				continue
			}
			j := p.laterBash(i, end.ToolUseID)
			if j < 0 {
				continue
			}
			if made {
				end.Truncated, end.OutputBytes = true, 45000+end.OutputBytes
				end.Spill = trajectory.BlobRef([]byte("spill:" + e.Session + ":" + end.ToolUseID))
				p.setResultText(end.ToolUseID, p.resultText(end.ToolUseID)+truncationNotice(end.OutputBytes, e.Session, end.Spill))
			}
			c := p.evs[j].Payload.(*trajectory.ToolCall)
			input, _ := json.Marshal(map[string]string{"command": "cat .retrace/runs/" + e.Session + ".blobs/" + strings.TrimPrefix(end.Spill, "sha256:")})
			c.Input = input
			for q := j - 1; q >= 0; q-- {
				if r := p.response(q); r != nil {
					for b := range r.Content {
						if r.Content[b].Type == trajectory.BlockToolUse && r.Content[b].ID == c.ToolUseID {
							r.Content[b].Input = input
						}
					}
					break
				}
			}
			later := p.evs[p.toolEvent(j, trajectory.TypeToolEnd, c.ToolUseID)].Payload.(*trajectory.ToolEnd)
			later.Truncated, later.Spill, later.OutputBytes = true, end.Spill, end.OutputBytes
			p.setResultText(c.ToolUseID, p.resultText(end.ToolUseID))
			p.marks = []mark{{i, end.ToolUseID}}
			return true
		}
	}
	return false
}

// laterBash returns the index of the tool_call of a successful bash call
// after index from, other than id, whose output was not truncated, or -1.
func (p *planting) laterBash(from int, id string) int {
	for j := from + 1; j < len(p.evs); j++ {
		c, ok := p.evs[j].Payload.(*trajectory.ToolCall)
		if !ok || c.Tool != "bash" || c.ToolUseID == id {
			continue
		}
		if _, ok := p.succeeded(j, c.ToolUseID); !ok {
			continue
		}
		// A call a hook rewrote keeps its own result, which starts with
		// the executor's notice of the change.
		if h := p.toolEvent(j, trajectory.TypeHookRun, c.ToolUseID); h >= 0 && p.evs[h].Payload.(*trajectory.HookRun).InputChanged {
			continue
		}
		if k := p.toolEvent(j, trajectory.TypeToolEnd, c.ToolUseID); k >= 0 && !p.evs[k].Payload.(*trajectory.ToolEnd).Truncated {
			return j
		}
	}
	return -1
}

// plantPrefixCollapseRisk adds a deferred read_many to the catalog, next
// to the resident read, and lists it at the end of the system prompt
// without a "not loaded" label, hashes updated. The finding is at
// session_start, at warning.
func plantPrefixCollapseRisk(p *planting) bool {
	start, ok := p.evs[0].Payload.(*trajectory.SessionStart)
	if !ok || !slices.ContainsFunc(start.Tools, func(t trajectory.ToolInfo) bool { return t.Name == "read" && !t.Deferred }) {
		return false
	}
	system := ""
	for _, e := range p.evs {
		if r, ok := e.Payload.(*trajectory.ModelRequest); ok && r.System != "" {
			r.System += "\n\nMore tools:\n- read_many: Reads several files at once."
			system = r.System
			break
		}
	}
	if system == "" {
		return false
	}
	start.Tools = append(slices.Clone(start.Tools), trajectory.ToolInfo{Name: "read_many", DefinitionHash: trajectory.Hash([]byte("read_many")),
		Source: trajectory.ToolBuiltin, Deferred: true, ReadOnly: true, Display: trajectory.DisplayFull})
	start.SystemPromptHash = trajectory.Hash([]byte(system))
	for _, e := range p.evs {
		if r, ok := e.Payload.(*trajectory.ModelRequest); ok {
			r.SystemHash = start.SystemPromptHash
		}
	}
	p.marks = []mark{{0, ""}}
	return true
}

// plantLowYieldSpin takes three turns in a row that made the same number
// of calls, each of which ran (a success or a tool_error), the first
// turn's without writing or being truncated, and makes the second and
// third turns' calls copies of the first's (no snapshot, not truncated),
// every one returning the same single number, with no text in the replies: a
// spin the low-yield defense did not act on. The finding is at the first
// turn's first tool_call.
func plantLowYieldSpin(p *planting) bool {
	type turn struct {
		resp  int
		calls []int // the tool_call indices, nil when the turn does not fit
		// first is set when the turn can open the spin: none of its
		// calls wrote or was truncated. The later turns' calls become
		// copies of its calls, so what they wrote does not matter.
		first bool
	}
	var turns []turn
	for i, e := range p.evs {
		r, ok := e.Payload.(*trajectory.ModelResponse)
		if !ok {
			continue
		}
		t := turn{resp: i, first: true}
		fits := len(r.ToolUses()) > 0 && !p.spinDefended(e.Turn)
		for _, b := range r.ToolUses() {
			c := p.toolEvent(i, trajectory.TypeToolCall, b.ID)
			if c < 0 || b.Name == "tool_search" || !p.ran(c, b.ID) || p.toolEvent(c, trajectory.TypeToolEnd, b.ID) < 0 {
				fits = false
				break
			}
			end := p.evs[p.toolEvent(c, trajectory.TypeToolEnd, b.ID)].Payload.(*trajectory.ToolEnd)
			t.first = t.first && end.Snapshot == "" && !end.Truncated
			t.calls = append(t.calls, c)
		}
		if !fits {
			t.calls = nil
		}
		turns = append(turns, t)
	}
	for k := 0; k+3 <= len(turns); k++ {
		w := turns[k : k+3]
		n := len(w[0].calls)
		if n == 0 || !w[0].first || len(w[1].calls) != n || len(w[2].calls) != n {
			continue
		}
		for _, t := range w {
			r := p.response(t.resp)
			r.Content = slices.DeleteFunc(slices.Clone(r.Content), func(b trajectory.ContentBlock) bool { return b.Type == trajectory.BlockText })
			for q, ci := range t.calls {
				model := p.evs[w[0].calls[q]].Payload.(*trajectory.ToolCall)
				c := p.evs[ci].Payload.(*trajectory.ToolCall)
				id := c.ToolUseID
				for b := range r.Content {
					if r.Content[b].Type == trajectory.BlockToolUse && r.Content[b].ID == id {
						r.Content[b].Name, r.Content[b].Input = model.Tool, model.Input
					}
				}
				for _, e := range p.evs {
					if trajectory.ToolUseIDOf(e.Payload) == id {
						setTool(e.Payload, model.Tool)
					}
				}
				c.Input = model.Input
				p.setResultText(id, "7")
				end := p.evs[p.toolEvent(ci, trajectory.TypeToolEnd, id)].Payload.(*trajectory.ToolEnd)
				end.Snapshot, end.Truncated, end.Spill = "", false, ""
			}
		}
		first := p.evs[w[0].calls[0]].Payload.(*trajectory.ToolCall)
		p.marks = []mark{{w[0].calls[0], first.ToolUseID}}
		return true
	}
	return false
}

// ran reports whether call id, whose tool_call is at c, ran: it
// succeeded, or failed inside the tool with a tool_error.
func (p *planting) ran(c int, id string) bool {
	if p.toolEvent(c, trajectory.TypeToolSuccess, id) >= 0 {
		return true
	}
	f := p.toolEvent(c, trajectory.TypeToolFailure, id)
	return f >= 0 && p.evs[f].Payload.(*trajectory.ToolFailure).FailureKind == trajectory.FailureToolError
}

// spinDefended reports whether a low_yield_spin defense_trigger was
// recorded in turn.
func (p *planting) spinDefended(turn int) bool {
	return slices.ContainsFunc(p.evs, func(e trajectory.Event) bool {
		d, ok := e.Payload.(*trajectory.DefenseTrigger)
		return ok && e.Turn == turn && d.Defense == trajectory.DefenseLowYieldSpin
	})
}

// setTool renames the tool of an event about one call.
func setTool(pl trajectory.Payload, tool string) {
	if r := trajectory.ToolRefOf(pl); r != nil {
		r.Tool = tool
	}
}
