package synth

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// toolTurn generates one turn whose response calls tools: the response,
// the defenses that act on it, the calls through the executor's stages and
// the defenses that judge the results. It reports whether the session ends.
func (g *session) toolTurn(abort, stuck bool) (bool, trajectory.EndReason) {
	r := g.r
	var calls []*call
	thought := "Reading it again to be sure."
	switch {
	case stuck:
		// The same read again and again: what the repeated-readonly guard catches.
		f := g.proj.files[0]
		calls = append(calls, &call{id: g.newID(), name: "read", kind: kindRead, spec: g.spec("read"), safe: true,
			input: json.RawMessage(`{"file_path":` + jsonString(f) + `}`), op: "read:" + f})
	default:
		n := pick(r, []weighted[int]{{55, 1}, {20, 2}, {11, 3}, {6, 4}, {4, 5}, {2, 6}, {2, 8}})
		name, phase := phaseOf(g.turn, g.turns)
		thought = oneOf(r, thoughts[name])
		if d := g.lastDenied; d != nil && (g.plant == "denial_loop" || chance(r, 0.3)) {
			// Models often try a denied call again, which is what the
			// denial fuse is for.
			calls = append(calls, g.again(d))
			n--
		}
		g.lastDenied = nil
		tests := 0
		for range n {
			k := pick(r, phase)
			if g.perm == trajectory.PermPlan && (k == kindEdit || k == kindWrite) && chance(r, 0.85) {
				// Planning, the model mostly reads.
				k = kindRead
			}
			if k == kindBashTest {
				// One test run per turn: the model reads its result first.
				if tests++; tests > 1 {
					k = kindRead
				}
			}
			calls = append(calls, g.newCall(k))
		}
		// Tests run after the turn's changes.
		slices.SortStableFunc(calls, func(a, b *call) int {
			return boolInt(a.kind == kindBashTest) - boolInt(b.kind == kindBashTest)
		})
	}

	var content []trajectory.ContentBlock
	if chance(r, 0.55) {
		content = append(content, trajectory.ContentBlock{Type: trajectory.BlockText, Text: thought})
	}
	out := int64(25)
	for _, c := range calls {
		content = append(content, trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: c.id, Name: c.name, Input: c.input})
		out += int64(len(c.input)/3) + 12
		if c.kind == kindWrite {
			out += logNormal(r, 350, 0.9)
		}
	}
	stop := trajectory.StopToolUse
	var empty, cut *trajectory.ContentBlock
	switch x := r.Float64(); {
	case x < 0.006 && g.enabled[trajectory.DefenseEmptyInputRetry] && g.emptyRetries < 2:
		b := trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: g.newID(), Name: oneOf(r, []string{"read", "edit", "bash"}), Input: json.RawMessage(`{}`)}
		content = append(content, b)
		empty = &content[len(content)-1]
	case x < 0.009 && g.enabled[trajectory.DefenseTruncatedToolUse] && g.truncations < 2:
		b := trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: g.newID(), Name: "write",
			PartialInput: `{"file_path":` + jsonString(oneOf(r, g.proj.files)) + `,"content":"package main\n\nimport (\n\t\"fmt`}
		content = append(content, b)
		cut = &content[len(content)-1]
		stop = trajectory.StopMaxTokens
		out = int64(g.model.maxTokens)
	case x < 0.022 && g.enabled[trajectory.DefenseEndTurnFallthrough]:
		stop = trajectory.StopEndTurn
	}
	if content[0].Type == trajectory.BlockText {
		out += int64(len(content[0].Text) / 4)
	}
	g.respond(content, stop, int64(float64(out)*(0.8+0.4*r.Float64())))

	// The loop's handling of the response, in its order.
	assistant := make([]trajectory.ContentBlock, 0, len(content))
	for _, b := range content {
		switch {
		case cut != nil && b.ID == cut.ID:
			g.truncations++
			g.trigger(trajectory.DefenseTruncatedToolUse, trajectory.ActionSkip, b.ID, map[string]string{"tool": b.Name})
			g.remind("truncated_tool_use", "truncated_tool_use:"+b.ID,
				"Your "+b.Name+" call was cut off by the output limit before its input was complete, so it was not run. Call it again with a smaller input.")
		case empty != nil && b.ID == empty.ID:
			g.emptyRetries++
			g.trigger(trajectory.DefenseEmptyInputRetry, trajectory.ActionRetry, b.ID, map[string]string{"tool": b.Name})
			assistant = append(assistant, trajectory.ContentBlock{Type: trajectory.BlockText, Text: "[harness: my " + b.Name + " call had empty input and was not run]"})
			g.remind("empty_input", fmt.Sprintf("empty_input:%s:%d", b.Name, g.turn), "The "+b.Name+" call had empty input; call it again with its parameters.")
		default:
			assistant = append(assistant, b)
		}
	}
	if stop == trajectory.StopEndTurn {
		g.trigger(trajectory.DefenseEndTurnFallthrough, trajectory.ActionExecute, calls[0].id,
			map[string]string{"stop_reason": string(stop), "tool_uses": itoa(int64(len(calls)))})
	}
	g.history = append(g.history, trajectory.Message{Role: trajectory.RoleAssistant, Content: assistant})

	aborted := g.execute(calls, abort)
	results := make([]trajectory.ContentBlock, len(calls))
	for i, c := range calls {
		// The model is sent what the trajectory records (a shift's planted
		// failure included); the context grows by what the session acts on.
		v := c.visible()
		results[i] = trajectory.ContentBlock{Type: trajectory.BlockToolResult, ToolUseID: c.id, Content: v.text, IsError: v.kind != ""}
		g.ctxTokens += resultTokens(c) + 15
	}
	g.history = append(g.history, trajectory.Message{Role: trajectory.RoleUser, Content: results})
	if aborted {
		return true, trajectory.EndAborted
	}
	return g.afterTools(calls, stuck)
}

// afterTools runs the defenses that judge a turn by its results.
func (g *session) afterTools(calls []*call, stuck bool) (bool, trajectory.EndReason) {
	r := g.r
	var ro *call
	for _, c := range calls {
		if c.spec != nil && c.spec.readOnly && c.out.kind == "" {
			ro = c
			break
		}
	}
	if stuck {
		g.stuckReads++
	}
	// The guard acts at the third identical read and, after a reminder,
	// counts again from the next: a stuck session is reminded at its third
	// and sixth reads and stopped at its ninth, as the runtime does; a
	// trigger at every read would be a decision counted as a trigger.
	if ro != nil && (stuck && g.stuckReads%3 == 0 || !stuck && chance(r, 0.01)) && g.enabled[trajectory.DefenseRepeatedReadOnly] {
		ev := map[string]string{"tool": ro.name, "repeats": "3"}
		if g.stuckNotes >= 2 {
			g.trigger(trajectory.DefenseRepeatedReadOnly, trajectory.ActionStop, ro.id, ev)
			return true, trajectory.EndStuck
		}
		g.stuckNotes++
		g.trigger(trajectory.DefenseRepeatedReadOnly, trajectory.ActionRemind, ro.id, ev)
		g.remind("repeated_readonly", fmt.Sprintf("repeated_readonly:%s:%d", trajectory.Hash(ro.input), g.stuckNotes),
			"You have run the same "+ro.name+" call 3 times and got the same output each time. Act on it, try a different approach, or finish.")
		return false, ""
	}
	if ro != nil && chance(r, 0.012) && g.enabled[trajectory.DefenseLowYieldSpin] {
		g.trigger(trajectory.DefenseLowYieldSpin, trajectory.ActionRemind, ro.id, map[string]string{"tool": ro.name, "output": "scalar"})
		g.remind("low_yield_spin", fmt.Sprintf("low_yield_spin:%d", g.turn),
			"Your last calls returned little new information. Summarise what you know and decide the next step before calling more tools.")
	}
	if chance(r, 0.02) && g.enabled[trajectory.DefenseLoopDetection] {
		c := calls[0]
		g.trigger(trajectory.DefenseLoopDetection, trajectory.ActionContinue, c.id, map[string]string{"tool": c.name, "calls": "5"})
		g.remind("loop_detection", fmt.Sprintf("loop_detection:%s:%d", c.name, g.turn),
			"You have called "+c.name+" five times in a row with the same kind of input. Check whether this approach is converging.")
	}
	return false, ""
}

// batch is a run of calls that execute together, as the executor
// partitions them: contiguous concurrency-safe calls, or one call alone.
type batch struct {
	safe  bool
	calls []*call
}

func partition(calls []*call) []batch {
	var out []batch
	for _, c := range calls {
		if c.safe && len(out) > 0 && out[len(out)-1].safe {
			out[len(out)-1].calls = append(out[len(out)-1].calls, c)
			continue
		}
		out = append(out, batch{safe: c.safe, calls: []*call{c}})
	}
	return out
}

// execute takes the calls through the executor: every tool_call first,
// then batch by batch each call's stages and its outcome and tool_end (a
// parallel batch's in the order they finish), then every tool_result in
// the calls' order. With abort, the user interrupts one batch: its calls
// are cut short, the later ones never start, and every call still gets its
// outcome and result. It reports whether the turn was aborted.
func (g *session) execute(calls []*call, abort bool) bool {
	batches := partition(calls)
	for bi, b := range batches {
		for _, c := range b.calls {
			g.emit(g.turn, &trajectory.ToolCall{ToolRef: c.ref(), Input: c.input, Index: slices.Index(calls, c), Batch: bi, ConcurrencySafe: b.safe})
		}
	}
	g.calls += len(calls)
	abortAt := -1
	if abort {
		abortAt = g.r.IntN(len(batches))
	}
	aborted, bashFailed := false, false
	for bi, b := range batches {
		if aborted {
			for _, c := range b.calls {
				c.out = outcome{kind: trajectory.FailureAborted, code: "user_abort", text: "Not run: the user interrupted the turn."}
				g.finish(c)
			}
			continue
		}
		start := g.now
		for _, c := range b.calls {
			if c.name == "bash" && bashFailed {
				c.out = outcome{kind: trajectory.FailureAborted, code: "sibling_failed", text: "Not run: an earlier bash command of this turn failed."}
			} else {
				g.pre(c)
			}
			c.done = g.now.Add(c.out.dur)
			if !b.safe {
				// A call alone: its run is the time that passes.
				g.now = c.done
			}
		}
		if bi == abortAt {
			cut := start.Add(time.Duration(float64(g.now.Sub(start)+time.Second) * (0.2 + 0.6*g.r.Float64())))
			for _, c := range b.calls {
				if c.out.ran {
					began := c.done.Add(-c.out.dur)
					partial := min(c.out.dur, max(cut.Sub(began), 0))
					c.out = outcome{kind: trajectory.FailureAborted, code: "user_abort", dur: partial, bytes: c.out.bytes / 3,
						text: "Interrupted by the user after " + partial.Round(time.Millisecond).String() + ".", ran: true}
					c.shown = nil // the interruption is what is recorded
					c.done = began.Add(partial)
				}
			}
			aborted = true
			// Time runs only until the interruption.
			g.now = g.last.Add(time.Microsecond)
		}
		// Calls timed on their own do not report the same duration to
		// the microsecond; two draws that round alike would read as a
		// flattened batch (latency_flattened), so the later one
		// runs a microsecond longer.
		seen := map[int64]bool{}
		for _, c := range b.calls {
			if c.out.dur <= 0 {
				continue
			}
			for seen[c.out.dur.Microseconds()] {
				c.out.dur += time.Microsecond
				c.done = c.done.Add(time.Microsecond)
			}
			seen[c.out.dur.Microseconds()] = true
		}
		order := slices.Clone(b.calls)
		slices.SortStableFunc(order, func(a, b *call) int { return a.done.Compare(b.done) })
		for _, c := range order {
			g.advanceTo(c.done)
			g.finish(c)
			if c.name == "bash" && (c.out.kind == trajectory.FailureToolError || c.out.kind == trajectory.FailureTimeout) {
				bashFailed = true
			}
		}
	}
	for _, c := range calls {
		display := trajectory.DisplayFull
		if c.spec != nil {
			display = c.spec.display
		}
		if c.inputChanged && c.out.ran {
			// As the executor does: the model is told that the result is
			// for an input a hook rewrote.
			c.out.text = hookChangedNote + c.out.text
			if c.shown != nil {
				c.shown.text = hookChangedNote + c.shown.text
			}
		}
		v := c.visible()
		g.emit(g.turn, &trajectory.ToolResult{ToolRef: c.ref(), Text: v.text, IsError: v.kind != "", Display: display})
	}
	return aborted
}

func (c *call) ref() trajectory.ToolRef { return trajectory.ToolRef{ToolUseID: c.id, Tool: c.name} }

// pre takes a call through lookup, PreToolUse hooks, the permission chain
// and input validation, and runs it when all of them let it.
func (g *session) pre(c *call) {
	r := g.r
	switch {
	case c.kind == kindUnknown:
		c.out = outcome{kind: trajectory.FailureNotFound, code: "unknown_tool", dur: latRejected.draw(r),
			text: fmt.Sprintf("Tool %q does not exist. Use one of the tools you were given, or call tool_search with keywords to find one.", c.name)}
		return
	case c.kind == kindMCP && !g.mcpLoaded:
		c.out = outcome{kind: trajectory.FailureNotFound, code: "not_loaded", dur: latRejected.draw(r),
			text: fmt.Sprintf("Tool %q exists but is not loaded yet. Call tool_search with query \"select:%s\" to load it, then retry this call.", c.name, c.name)}
		return
	}
	hookAllow := false
	var hooksTime time.Duration
	for _, h := range g.hooks {
		if h.phase != trajectory.HookPre || h.tools != nil && !h.tools[c.name] {
			continue
		}
		d := latHook.draw(r)
		o, changed := trajectory.HookContinue, false
		switch x := r.Float64(); {
		case x < h.block:
			o = trajectory.HookBlock
		case x < h.block+0.02:
			o, changed = trajectory.HookModified, true
		case x < h.block+0.028:
			o = trajectory.HookError
		case x < h.block+0.031:
			o, d = trajectory.HookTimeout, 10*time.Second
		case x < h.block+0.06:
			hookAllow = true
		}
		g.emit(g.turn, &trajectory.HookRun{ToolRef: c.ref(), Phase: trajectory.HookPre, Hook: h.name, Outcome: o, InputChanged: changed, DurationMs: trajectory.Millis(d)})
		c.inputChanged = c.inputChanged || changed
		g.advance(d)
		hooksTime += d
		if o == trajectory.HookBlock {
			c.out = outcome{kind: trajectory.FailureHookBlocked, dur: hooksTime,
				text: "Blocked by a PreToolUse hook: " + h.name + " refused this call.\nDo not retry the same call; change your approach or ask the user."}
			return
		}
	}
	if !g.permit(c, hookAllow) {
		return
	}
	if c.invalid {
		c.out = outcome{kind: trajectory.FailureInvalidInput, code: "schema", dur: latRejected.draw(r),
			text: fmt.Sprintf("Invalid input for %s: %s is required and was not sent. Call it again with %s set.", c.name, c.spec.required, c.spec.required)}
		return
	}
	g.runTool(c)
}

// The permission behaviours.
const (
	allow = iota
	deny
	ask
)

type decision struct {
	behavior int
	source   trajectory.PermissionSource
	step     trajectory.ChainStep
	rule     string
}

// decide walks the permission chain of agent/permission in its order.
func (g *session) decide(c *call, hookAllow bool) decision {
	readOnly := c.spec.readOnly && c.kind != kindBashRO
	switch {
	case hookAllow:
		return decision{allow, trajectory.SourceHook, trajectory.StepHook, ""}
	case g.remembered[c.op]:
		return decision{allow, trajectory.SourceSessionMemory, trajectory.StepSessionMemory, ""}
	case c.kind == kindBashRuleDenied && g.denyRules:
		return decision{deny, trajectory.SourceRule, trajectory.StepDenyRule, c.rule}
	case c.secret && g.denyRules:
		return decision{deny, trajectory.SourceRule, trajectory.StepDenyRule, "Read(.env)"}
	case c.kind == kindBashDangerous:
		return decision{deny, trajectory.SourceSafety, trajectory.StepDangerousCommand, ""}
	case c.outside || c.secret:
		return decision{ask, trajectory.SourceSafety, trajectory.StepPathValidation, ""}
	case c.kind == kindBashAskRule:
		return decision{ask, trajectory.SourceRule, trajectory.StepAskRule, c.rule}
	case c.kind == kindBashRO:
		return decision{allow, trajectory.SourceReadOnly, trajectory.StepToolCheck, ""}
	case c.protected:
		return decision{ask, trajectory.SourceSafety, trajectory.StepProtectedPath, ""}
	case g.perm == trajectory.PermBypass:
		return decision{allow, trajectory.SourceMode, trajectory.StepBypassMode, ""}
	case c.kind == kindBashTest && g.allowTests, (c.kind == kindBashOther || c.kind == kindMCP) && g.allowOther:
		return decision{allow, trajectory.SourceRule, trajectory.StepAllowRule, c.rule}
	case (c.kind == kindEdit || c.kind == kindWrite) && g.allowEdits && (c.inRuleScope || !g.interactive):
		return decision{allow, trajectory.SourceRule, trajectory.StepAllowRule, c.rule}
	case g.perm == trajectory.PermPlan && !readOnly:
		return decision{deny, trajectory.SourceMode, trajectory.StepPlanMode, ""}
	case readOnly:
		return decision{allow, trajectory.SourceReadOnly, trajectory.StepReadOnly, ""}
	case g.perm == trajectory.PermAcceptEdits && (c.kind == kindEdit || c.kind == kindWrite):
		return decision{allow, trajectory.SourceMode, trajectory.StepAcceptEdits, ""}
	}
	return decision{ask, trajectory.SourceMode, trajectory.StepDefault, ""}
}

// permit records the permission decision and, for a prompt, its answer. A
// denied call is finished with permission_denied.
func (g *session) permit(c *call, hookAllow bool) bool {
	d := g.decide(c, hookAllow)
	pd := func(src trajectory.PermissionSource, prompted bool) trajectory.PermissionDecision {
		return trajectory.PermissionDecision{ToolRef: c.ref(), Source: src, Step: d.step, NeededPrompt: prompted, Rule: d.rule}
	}
	switch d.behavior {
	case allow:
		g.emit(g.turn, &trajectory.PermissionAllow{PermissionDecision: pd(d.source, false)})
		return true
	case deny:
		g.emit(g.turn, &trajectory.PermissionDeny{PermissionDecision: pd(d.source, false)})
		g.deny(c, "Permission denied by "+string(d.step)+". Do not retry; tell the user.")
		return false
	}
	g.emit(g.turn, &trajectory.PermissionPrompt{PermissionDecision: pd(d.source, true)})
	if !g.interactive {
		g.emit(g.turn, &trajectory.PermissionDeny{PermissionDecision: pd(trajectory.SourceNonInteractive, true)})
		g.deny(c, "This call needs a person's confirmation, but the session is non-interactive, so it was refused.")
		return false
	}
	// A person reads the prompt and answers.
	g.advance(time.Duration(logNormal(g.r, 5500, 0.9)) * time.Millisecond)
	if chance(g.r, 0.88) {
		g.remembered[c.op] = true
		g.emit(g.turn, &trajectory.PermissionAllow{PermissionDecision: pd(trajectory.SourceUser, true)})
		return true
	}
	g.emit(g.turn, &trajectory.PermissionDeny{PermissionDecision: pd(trajectory.SourceUser, true)})
	g.deny(c, "The user denied this call. Do not retry it; ask the user what they want instead.")
	return false
}

// deny finishes a denied call; the third denial of one exact call (the
// tool and its input, as agent/permission keys it) trips the denial fuse,
// recorded where it acts. c.op would not do: it leaves out inputs such as
// bash's timeout, so three denials of two different calls tripped the
// fuse while the same call was denied three times without it.
func (g *session) deny(c *call, text string) {
	k := c.name + "\x00" + string(c.input)
	g.denials[k]++
	if g.denials[k] == 3 && g.enabled[trajectory.DefenseDenialFuse] && g.plant != "denial_loop" {
		g.trigger(trajectory.DefenseDenialFuse, trajectory.ActionNeedsConfirmation, c.id, map[string]string{"tool": c.name})
	}
	g.lastDenied = c
	c.out = outcome{kind: trajectory.FailurePermissionDenied, dur: latRejected.draw(g.r), text: text}
}

// finish runs the PostToolUse hooks of a call that ran and records its
// outcome and tool_end: the one exit every call goes through.
func (g *session) finish(c *call) {
	o := c.out
	if o.ran && (o.kind == "" || o.kind == trajectory.FailureToolError) {
		for _, h := range g.hooks {
			if h.phase != trajectory.HookPost || h.tools != nil && !h.tools[c.name] {
				continue
			}
			d, outc := latHook.draw(g.r), trajectory.HookContinue
			if chance(g.r, 0.03) {
				outc = trajectory.HookError
			}
			g.emit(g.turn, &trajectory.HookRun{ToolRef: c.ref(), Phase: trajectory.HookPost, Hook: h.name, Outcome: outc, DurationMs: trajectory.Millis(d)})
			g.advance(d)
		}
	}
	// What is recorded: a shift's planted failure, if any (the hooks above
	// ran on what the session acts on, and run for a tool_error alike).
	o = *c.visible()
	if c.shown != nil {
		g.planted++
	}
	if o.kind == "" {
		g.emit(g.turn, &trajectory.ToolSuccess{ToolRef: c.ref()})
	} else {
		g.failures++
		g.emit(g.turn, &trajectory.ToolFailure{ToolRef: c.ref(), FailureKind: o.kind, ErrorCode: o.code})
	}
	end := &trajectory.ToolEnd{ToolRef: c.ref(), DurationMs: trajectory.Millis(o.dur), OutputBytes: o.bytes, Truncated: o.truncated}
	if !o.ran || o.kind.NeverRuns() {
		// As the executor records it: the time the refusal took passed
		// on the clock, but a call that did not run has no duration.
		end.DurationMs, end.NotRun = 0, true
	}
	if o.truncated {
		end.Spill = g.spillRef(c)
	}
	if o.ran && (c.kind == kindEdit || c.kind == kindWrite) {
		end.Snapshot = trajectory.BlobRef([]byte("snapshot:" + g.id + ":" + c.id))
	}
	g.emit(g.turn, end)
}

// hookChangedNote is the executor's notice before the result of a call
// whose input a PreToolUse hook changed.
const hookChangedNote = "Note: a PreToolUse hook changed the input of this call before it ran. The result below is for the changed input, not exactly the one you sent.\n\n"

// spillRef is the blob reference of a truncated call's full output.
func (g *session) spillRef(c *call) string {
	return trajectory.BlobRef([]byte("spill:" + g.id + ":" + c.id))
}

// resultTokens is what a call's result adds to the context.
func resultTokens(c *call) int64 {
	b := c.out.bytes
	if c.out.truncated && c.spec != nil {
		b = c.spec.limit
	}
	if b == 0 {
		b = int64(len(c.out.text))
	}
	return b / 4
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
