package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/agent/shell"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/trajectory"
)

// The caps. Every defense that retries or reminds has one, because an
// uncapped "remind and try again" is a new infinite loop.
const (
	// maxEmptyInputRetries caps the retries of a call whose input came empty.
	maxEmptyInputRetries = 2
	// maxTruncatedRetries is how many cut-off tool_use blocks the model may
	// retry before the session ends with max_tokens.
	maxTruncatedRetries = 2
	// repeatThreshold is how many identical read-only calls with identical
	// output make the model stuck.
	repeatThreshold = 3
	// maxStuckReminders is how many times the repeated-readonly guard
	// reminds before it stops the session.
	maxStuckReminders = 2
	// maxSpinReminders caps the low-yield spin reminders.
	maxSpinReminders = 2
	// shapeThreshold is how many calls in a row of one tool with one key
	// set and different values count as a loop by shape.
	shapeThreshold = 5
	// maxShapeReminders caps the loop-detection reminders; past it the
	// loop keeps going without them.
	maxShapeReminders = 2
)

// executed is one call the executor ran this turn, with its result.
type executed struct {
	id       string
	tool     string
	sig      string // tool name and compact input: the call's identity
	input    json.RawMessage
	output   string
	isError  bool
	readOnly bool
	writes   bool
}

// defenses holds the state of the in-loop defenses over a session.
type defenses struct {
	s       *session
	enabled map[trajectory.DefenseName]bool
	counts  map[trajectory.DefenseName]int

	emptyRetries int
	truncations  int

	repeats        map[string]repeatState
	stuckReminders int

	prevTurnSig, prevTurnOut string
	spinReminders            int

	shapeTool, shapeKeys, shapeLast string
	shapeStreak                     int
	shapeReminders                  int
}

type repeatState struct {
	output string
	n      int
}

func newDefenses(s *session, enabled []trajectory.DefenseName) *defenses {
	d := &defenses{s: s, enabled: map[trajectory.DefenseName]bool{}, counts: map[trajectory.DefenseName]int{},
		repeats: map[string]repeatState{}}
	for _, n := range enabled {
		d.enabled[n] = true
	}
	return d
}

func (d *defenses) on(n trajectory.DefenseName) bool { return d.enabled[n] }

// trigger records a defense acting, where it acts.
func (d *defenses) trigger(n trajectory.DefenseName, a trajectory.DefenseAction, toolUseID string, evidence map[string]string) {
	d.counts[n]++
	d.s.emit(&trajectory.DefenseTrigger{Defense: n, Action: a, ToolUseID: toolUseID, Count: d.counts[n], Evidence: evidence})
}

// afterTools runs the defenses that judge a turn by its results. It
// reports whether one of them stops the session.
func (d *defenses) afterTools(calls []executed, userText bool) (stop bool) {
	if d.on(trajectory.DefenseRepeatedReadOnly) && d.repeatedReadOnly(calls) {
		return true
	}
	if d.on(trajectory.DefenseLowYieldSpin) {
		d.lowYieldSpin(calls, userText)
	}
	if d.on(trajectory.DefenseLoopDetection) {
		d.loopByShape(calls)
	}
	return false
}

// repeatedReadOnly watches for the same read-only call returning the same
// output again and again: a narrow, high-certainty pattern, so it is on by
// default and may stop the session.
func (d *defenses) repeatedReadOnly(calls []executed) (stop bool) {
	for _, c := range calls {
		if !c.readOnly {
			continue
		}
		st := d.repeats[c.sig]
		if st.output == c.output && st.n > 0 {
			st.n++
		} else {
			st = repeatState{output: c.output, n: 1}
		}
		d.repeats[c.sig] = st
		if st.n < repeatThreshold {
			continue
		}
		ev := map[string]string{"tool": c.tool, "repeats": fmt.Sprint(st.n)}
		if d.stuckReminders >= maxStuckReminders {
			d.trigger(trajectory.DefenseRepeatedReadOnly, trajectory.ActionStop, c.id, ev)
			return true
		}
		d.stuckReminders++
		d.repeats[c.sig] = repeatState{output: c.output}
		d.trigger(trajectory.DefenseRepeatedReadOnly, trajectory.ActionRemind, c.id, ev)
		d.s.rem.add(kindRepeatedReadOnly, fmt.Sprintf("%s:%s:%d", kindRepeatedReadOnly, trajectory.Hash([]byte(c.sig))[:16], d.stuckReminders),
			fmt.Sprintf("You have run the same %s call %d times and got the same output each time: running it again will not tell you anything new. "+
				"The output you have is current. Act on it, try a different approach, or finish and report what you found.", c.tool, st.n))
	}
	return false
}

// scalar matches an output that is one number and nothing else.
var scalar = regexp.MustCompile(`^[-+]?[0-9]+(\.[0-9]+)?%?$`)

// lowYieldSpin catches a turn that fetched one unchanged number with the
// same command as the turn before, wrote nothing and said nothing: a loop
// driven by low-information observations. It judges the
// output's shape, never the command's name, so it covers grep -c, wc -l
// and every checker alike.
func (d *defenses) lowYieldSpin(calls []executed, userText bool) {
	sigs := make([]string, len(calls))
	outs := make([]string, len(calls))
	wrote, allScalar := false, len(calls) > 0
	for i, c := range calls {
		sigs[i], outs[i] = c.sig, strings.TrimSpace(c.output)
		wrote = wrote || (c.writes && !c.isError)
		allScalar = allScalar && scalar.MatchString(outs[i])
	}
	turnSig, turnOut := strings.Join(sigs, "\x00"), strings.Join(outs, "\x00")
	prevSig, prevOut := d.prevTurnSig, d.prevTurnOut
	d.prevTurnSig, d.prevTurnOut = turnSig, turnOut
	if wrote || userText || !allScalar || prevSig == "" || turnSig != prevSig || turnOut != prevOut {
		return
	}
	if d.spinReminders >= maxSpinReminders {
		return
	}
	d.spinReminders++
	c := calls[len(calls)-1]
	d.trigger(trajectory.DefenseLowYieldSpin, trajectory.ActionRemind, c.id, map[string]string{"tool": c.tool, "output": "scalar"})
	d.s.rem.add(kindLowYieldSpin, fmt.Sprintf("%s:%d", kindLowYieldSpin, d.spinReminders),
		"The last turns ran the same command and got back the same single number, so nothing was learned. "+
			"Use a command whose output says what to do next: list the actual errors or lines (save the full output to a file, then look at a part of it), not only their count.")
}

// loopByShape catches calls of one tool with the same input keys and
// different values, many in a row. Legitimate systematic exploration has
// the same shape, so it is off by default and, when on, it reminds and lets
// the loop continue: stopping would throw away a long task it misjudged.
func (d *defenses) loopByShape(calls []executed) {
	for _, c := range calls {
		keys := inputKeys(c.input)
		switch {
		case c.tool == d.shapeTool && keys == d.shapeKeys && c.sig != d.shapeLast:
			d.shapeStreak++
		case c.tool == d.shapeTool && keys == d.shapeKeys:
			// An identical call is the repeated-readonly guard's business.
		default:
			d.shapeTool, d.shapeKeys, d.shapeStreak = c.tool, keys, 1
		}
		d.shapeLast = c.sig
		if d.shapeStreak < shapeThreshold || d.shapeReminders >= maxShapeReminders {
			continue
		}
		d.shapeReminders++
		d.shapeStreak = 0
		d.trigger(trajectory.DefenseLoopDetection, trajectory.ActionContinue, c.id, map[string]string{"tool": c.tool, "calls": fmt.Sprint(shapeThreshold)})
		d.s.rem.add(kindLoopDetection, fmt.Sprintf("%s:%d", kindLoopDetection, d.shapeReminders),
			fmt.Sprintf("Your last %d calls were all %s with different values. If you are searching for something that is not there, stop and try another approach; if this is deliberate exploration, carry on.", shapeThreshold, c.tool))
	}
}

// inputKeys returns the sorted top-level keys of a tool input.
func inputKeys(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

// callSig is a call's identity: its tool and its input, compacted so that
// whitespace does not make two calls differ.
func callSig(tool string, input json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, input) != nil {
		return tool + "\x00" + string(input)
	}
	return tool + "\x00" + b.String()
}

// classify says whether a call is read-only and whether it may have
// written a file. For bash both come from the shell analysis, the one
// list of what writes that the permission chain reads too: a command that
// is not provably read-only (a pipeline through an unknown tool, say)
// still wrote nothing unless some step of it writes files by what it is,
// a redirection or a writing program (shell.Analysis.WritesFiles), which
// is what "no file landed on disk" means for a low-yield spin.
func classify(t tools.Tool, input json.RawMessage) (readOnly, writes bool) {
	if t == nil {
		return false, false
	}
	if ct, ok := t.(tools.CommandTool); ok {
		a := shell.Analyze(ct.Command(input))
		return a.ReadOnly, !a.ReadOnly && a.WritesFiles
	}
	ro := t.Spec().ReadOnly
	return ro, !ro
}
