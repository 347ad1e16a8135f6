package detectors

import (
	"fmt"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// decisionReads are the event types decision_counted_as_trigger reads:
// the liveness conditions', and what shows a trigger's action was done.
var decisionReads = append(slices.Clone(livenessReads), trajectory.TypeReminder, trajectory.TypeModelRequest)

// decisionTriggerMin is the default of decision_counted_as_trigger's
// min_triggers.
const decisionTriggerMin = 3

// decisionCountedAsTrigger finds a defense whose defense_trigger events in
// a session are as many as the times its check ran (every denial, every
// reply, every call "triggers") and more than the times its condition,
// recomputed from the events with the liveness table's conditions, held:
// the trigger is recorded in the predicate that decides, not in the
// branch that acts, so it counts decisions. Defenses
// whose condition the contract does not carry are not judged. It also
// finds triggers whose action the events after them show was not done
// (idleTriggers).
func decisionCountedAsTrigger(d *goDetector, s *Session, p Params) []Finding {
	limit := p.Int("min_triggers")
	triggers := map[trajectory.DefenseName][]Located{}
	var names []trajectory.DefenseName
	for _, e := range s.Events {
		if p, ok := e.Payload.(*trajectory.DefenseTrigger); ok {
			if triggers[p.Defense] == nil {
				names = append(names, p.Defense)
			}
			triggers[p.Defense] = append(triggers[p.Defense], e)
		}
	}
	slices.Sort(names)
	out := idleTriggers(d, s, names, triggers)
	for _, name := range names {
		c, ok := conditions[name]
		if !ok {
			continue
		}
		n := len(triggers[name])
		checked, held := holds(s, name)
		if n < limit || n < checked || n <= len(held) {
			continue
		}
		ev := triggers[name][:min(n, livenessEvidenceMax)]
		f := d.finding(s, fmt.Sprintf("defense %s recorded %d defense_triggers and its check ran %d times: every evaluation counted as a trigger (min_triggers %d), while its condition (%s), recomputed from the events, held %d times",
			name, n, checked, limit, c.what, len(held)), ev...)
		f.ToolUseID = ev[0].Payload.(*trajectory.DefenseTrigger).ToolUseID
		out = append(out, f)
	}
	return out
}

// idleTrigger says why a defense_trigger's action left no trace, or "".
// Only actions with an observable effect are judged: remind and retry
// (a reminder, or the reminder cap suppressing one, before the next
// reply), stop (no request after it), execute (a tool_call for its call
// after it) and skip (none after it); continue, needs_confirmation and
// suppress leave nothing the events must show.
func idleTrigger(s *Session, at int, t *trajectory.DefenseTrigger) string {
	after := s.Events[at+1:]
	switch t.Action {
	case trajectory.ActionRemind, trajectory.ActionRetry:
		for _, e := range after {
			switch p := e.Payload.(type) {
			case *trajectory.Reminder:
				return ""
			case *trajectory.DefenseTrigger:
				if p.Defense == trajectory.DefenseReminderCap {
					return ""
				}
			case *trajectory.ModelResponse:
				return string(t.Action) + " with no reminder before the next reply"
			}
		}
		return ""
	case trajectory.ActionStop:
		for _, e := range after {
			if e.Type() == trajectory.TypeModelRequest {
				return "stop with the session going on (a model_request after it)"
			}
		}
	case trajectory.ActionExecute, trajectory.ActionSkip:
		if t.ToolUseID == "" {
			return ""
		}
		ran := false
		for _, e := range after {
			if c, ok := e.Payload.(*trajectory.ToolCall); ok && c.ToolUseID == t.ToolUseID {
				ran = true
				break
			}
		}
		if t.Action == trajectory.ActionExecute && !ran {
			return "execute with no tool_call for " + t.ToolUseID
		}
		if t.Action == trajectory.ActionSkip && ran {
			return "skip, and " + t.ToolUseID + " ran"
		}
	}
	return ""
}

// idleTriggers finds, per defense, the defense_triggers whose action the
// events after them show was not done: a trigger recorded where the
// defense decided, not where it acted.
func idleTriggers(d *goDetector, s *Session, names []trajectory.DefenseName, triggers map[trajectory.DefenseName][]Located) []Finding {
	index := map[int64]int{}
	for i, e := range s.Events {
		index[e.Seq] = i
	}
	var out []Finding
	for _, name := range names {
		var idle []Located
		var why []string
		for _, e := range triggers[name] {
			if w := idleTrigger(s, index[e.Seq], e.Payload.(*trajectory.DefenseTrigger)); w != "" {
				idle = append(idle, e)
				why = append(why, fmt.Sprintf("turn %d: %s", e.Turn, w))
			}
		}
		if len(idle) == 0 {
			continue
		}
		ev := idle[:min(len(idle), livenessEvidenceMax)]
		f := d.finding(s, fmt.Sprintf("%d of defense %s's %d defense_triggers did nothing the events show (%s): a trigger recorded where the defense decided, not where it acted",
			len(idle), name, len(triggers[name]), strings.Join(why, "; ")), ev...)
		f.ToolUseID = ev[0].Payload.(*trajectory.DefenseTrigger).ToolUseID
		out = append(out, f)
	}
	return out
}
