package detectors

import (
	"fmt"
	"slices"

	"github.com/retrace-dev/retrace/trajectory"
)

// decisionTriggerMin is the default of decision_counted_as_trigger's
// min_triggers.
const decisionTriggerMin = 3

// decisionCountedAsTrigger finds a defense whose defense_trigger events in
// a session are as many as the times its check ran (every denial, every
// reply, every call "triggers") and more than the times its condition,
// recomputed from the events with the liveness table's conditions, held:
// the trigger is recorded in the predicate that decides, not in the
// branch that acts, so it counts decisions (seed §13.3, §8.7). Defenses
// whose condition the contract does not carry are not judged.
func decisionCountedAsTrigger(d *goDetector, s *Session, p Params) []Finding {
	limit := p.Int("min_triggers")
	tools := map[string]trajectory.ToolInfo{}
	triggers := map[trajectory.DefenseName][]Located{}
	var names []trajectory.DefenseName
	for _, e := range s.Events {
		switch p := e.Payload.(type) {
		case *trajectory.SessionStart:
			for _, t := range p.Tools {
				tools[t.Name] = t
			}
		case *trajectory.DefenseTrigger:
			if triggers[p.Defense] == nil {
				names = append(names, p.Defense)
			}
			triggers[p.Defense] = append(triggers[p.Defense], e)
		}
	}
	slices.Sort(names)
	var out []Finding
	for _, name := range names {
		c, ok := conditions[name]
		if !ok {
			continue
		}
		n := len(triggers[name])
		checked, held := c.check(s, tools)
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
