package agent

import (
	"github.com/retrace-dev/retrace/trajectory"
)

// maxRemindersPerKind caps each kind of harness reminder over a session:
// reminders travel with the user role, and a model that sees many of them
// comes to believe the user said them.
const maxRemindersPerKind = 3

// Reminder kinds (labels in the trajectory).
const (
	kindEmptyInput       = "empty_input"
	kindTruncatedToolUse = "truncated_tool_use"
	kindRepeatedReadOnly = "repeated_readonly"
	kindLowYieldSpin     = "low_yield_spin"
	kindLoopDetection    = "loop_detection"
	kindDeferredTools    = "deferred_tools"
	kindNewTools         = "new_tools"
	kindContinue         = "continue"
)

// reminders queues the harness messages for the next user message.
type reminders struct {
	s       *session
	seen    map[string]bool
	perKind map[string]int
	pending []trajectory.ContentBlock
	fired   int // reminder_cap triggers
}

func newReminders(s *session) *reminders {
	return &reminders{s: s, seen: map[string]bool{}, perKind: map[string]int{}}
}

// add queues one reminder, labelled as a harness message so the model can
// tell it from the user, unless its key was already used or its kind is
// over the cap: then it is suppressed, and that is recorded. It reports
// whether the reminder was queued.
func (r *reminders) add(kind, key, text string) bool {
	if r.seen[key] || r.perKind[kind] >= maxRemindersPerKind {
		r.fired++
		r.s.emit(&trajectory.DefenseTrigger{Defense: trajectory.DefenseReminderCap, Action: trajectory.ActionSuppress,
			Count: r.fired, Evidence: map[string]string{"kind": kind}})
		return false
	}
	r.seen[key] = true
	r.perKind[kind]++
	r.s.emit(&trajectory.Reminder{Kind: kind, DedupKey: key, Role: trajectory.RoleUser, Text: text})
	r.pending = append(r.pending, trajectory.ContentBlock{Type: trajectory.BlockText, Text: "<harness-reminder>" + text + "</harness-reminder>"})
	return true
}

// take returns the queued reminders and empties the queue.
func (r *reminders) take() []trajectory.ContentBlock {
	out := r.pending
	r.pending = nil
	return out
}
