package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/retrace-dev/retrace/agent/hooks"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/shell"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/trajectory"
)

// call is one tool_use block on its way to a tool_result.
type call struct {
	t        *turn
	ex       *Executor
	index    int
	id, name string
	// rawInput is the input as the model sent it.
	rawInput json.RawMessage
	tool     tools.Tool
	spec     tools.Spec
	// lookupFailure is the model-facing text when stage 1 failed.
	lookupFailure, lookupCode string
	safe                      bool
	exclusive                 *sync.RWMutex

	// Set by finish, the single exit.
	done    bool
	text    string
	isError bool
	display trajectory.DisplayMode
	modify  func(*tools.Env)
	// outside is set when the text is what a tool from an outside source
	// returned, which the model gets marked as untrusted (see untrusted).
	outside bool
}

func (c *call) ref() trajectory.ToolRef { return trajectory.ToolRef{ToolUseID: c.id, Tool: c.name} }

// newCall performs stage 1 (lookup) and decides whether the call is
// concurrency-safe, for the partition.
func (ex *Executor) newCall(t *turn, index int, u trajectory.ContentBlock) *call {
	c := &call{t: t, ex: ex, index: index, id: u.ID, name: u.Name, rawInput: u.Input}
	switch {
	case len(c.rawInput) == 0 && u.PartialInput != "":
		c.rawInput, _ = json.Marshal(u.PartialInput) // a string is never valid input: it fails validation
	case len(c.rawInput) == 0:
		c.rawInput = json.RawMessage(`{}`)
	case !json.Valid(c.rawInput):
		c.rawInput, _ = json.Marshal(string(u.Input))
	}
	tool, ok := ex.reg.Lookup(c.name)
	pending := ex.reg.Pending()
	switch {
	case !ok && len(pending) > 0 && strings.HasPrefix(c.name, "mcp__"):
		// "Not here yet" is not "does not exist".
		c.lookupCode = "pending"
		c.lookupFailure = fmt.Sprintf("Tool %q is not available yet: MCP servers %s are still connecting. Retry in a moment, or call tool_search to see what is loaded.", c.name, strings.Join(pending, ", "))
	case !ok:
		c.lookupCode = "unknown_tool"
		c.lookupFailure = fmt.Sprintf("Tool %q does not exist. Use one of the tools you were given, or call tool_search with keywords to find one.", c.name)
	case !ex.reg.IsLoaded(c.name):
		c.lookupCode = "not_loaded"
		c.lookupFailure = fmt.Sprintf("Tool %q exists but is not loaded yet, so you have not seen its parameters. Call tool_search with query \"select:%s\" to load it, then retry this call.", c.name, c.name)
	default:
		c.tool, c.spec = tool, tool.Spec()
		c.safe = ex.validateInput(c.spec, c.rawInput) == "" && concurrencySafe(tool, c.rawInput)
	}
	return c
}

// concurrencySafe asks the tool, failing closed: a predicate that panics
// means "not safe".
func concurrencySafe(tool tools.Tool, input json.RawMessage) (safe bool) {
	defer func() {
		if recover() != nil {
			safe = false
		}
	}()
	return tool.ConcurrencySafe(input)
}

// outcome is everything finish needs to close a call.
type outcome struct {
	kind     trajectory.FailureKind // "" for success
	code     string
	text     string
	duration time.Duration
	bytes    int
	trunc    bool
	spill    string
	snapshot string
	// ran is set once the tool's code started (execute); every other
	// exit finishes a call that did not run, recorded with not_run and
	// no duration.
	ran bool
	// pid is the process the tool started, 0 for none.
	pid int
}

// finish is the single exit of every call: it emits
// tool_success or tool_failure with the kind its caller gave, then tool_end
// with the tool's own duration (or not_run, and no duration, for a call
// whose tool never started), and keeps the model-side result for the
// tool_result that Execute emits in order. A second finish for the same
// call is ignored, so no path can emit twice.
func (c *call) finish(o outcome) {
	if c.done {
		return
	}
	c.done = true
	sink, turnNo := c.ex.cfg.Sink, c.t.number
	if o.kind == "" {
		sink.Emit(turnNo, &trajectory.ToolSuccess{ToolRef: c.ref()})
	} else {
		sink.Emit(turnNo, &trajectory.ToolFailure{ToolRef: c.ref(), FailureKind: o.kind, ErrorCode: o.code})
	}
	end := &trajectory.ToolEnd{ToolRef: c.ref(), OutputBytes: int64(o.bytes), Truncated: o.trunc, Spill: o.spill, Snapshot: o.snapshot, PID: o.pid}
	if o.ran {
		end.DurationMs = trajectory.Millis(o.duration)
	} else {
		end.NotRun = true
	}
	sink.Emit(turnNo, end)
	c.text, c.isError = o.text, o.kind != ""
	c.display = trajectory.DisplayFull
	if !c.isError && c.spec.Display.Valid() {
		// Errors are always shown: hiding one turns a visible failure into a silent one.
		c.display = c.spec.Display
	}
}

// run takes the call through stages 3 to 11.
func (c *call) run() {
	if c.lookupFailure != "" {
		c.finish(outcome{kind: trajectory.FailureNotFound, code: c.lookupCode, text: c.lookupFailure})
		return
	}
	ctx := c.t.ctx
	if ctx.Err() != nil {
		c.finish(outcome{kind: trajectory.FailureAborted, code: "user_abort", text: "Not run: the user interrupted the turn before this call started."})
		return
	}
	if c.unrecorded() {
		return
	}
	input, changed, hookDecision, ok := c.preHooks(ctx)
	if !ok {
		return
	}
	if !c.permit(ctx, input, hookDecision) {
		return
	}
	if msg := c.ex.validateInput(c.spec, input); msg != "" {
		if sent := c.ex.cfg.SchemaSent; sent != nil && !sent(c.name) {
			msg += fmt.Sprintf("\nNote: the parameters of %s were not sent to you in this turn, so you were guessing them. Call tool_search with query \"select:%s\" to load its schema, then retry.", c.name, c.name)
		}
		c.finish(outcome{kind: trajectory.FailureInvalidInput, code: "schema", text: msg})
		return
	}
	if c.exclusive != nil {
		if changed && !concurrencySafe(c.tool, input) {
			c.exclusive.Lock()
			defer c.exclusive.Unlock()
		} else {
			c.exclusive.RLock()
			defer c.exclusive.RUnlock()
		}
	}
	snapshot := c.snapshot(input)
	if c.unrecorded() {
		return
	}
	o := c.execute(ctx, input)
	o.snapshot = snapshot
	// An MCP tool's PostToolUse hooks get the output before shaping, so a
	// hook that redacts or audits sees what truncation would hide; a built-in tool's hooks see what the model will see.
	raw := o.text
	if o.kind == "" || o.kind == trajectory.FailureToolError {
		c.shape(&o)
	}
	if c.spec.Source != trajectory.ToolMCP {
		raw = o.text
	}
	if c.ex.recordErr() == nil {
		// PostToolUse hooks are effects of their own: after a failure to
		// record they do not run, and the outcome says what the tool did.
		c.postHooks(ctx, input, raw, &o)
	}
	c.outside = (o.kind == "" || o.kind == trajectory.FailureToolError) && fromOutside(c.spec)
	if changed {
		o.text = "Note: a PreToolUse hook changed the input of this call before it ran. The result below is for the changed input, not exactly the one you sent.\n\n" + o.text
	}
	c.finish(o)
}

// RecordFailedCode is the error_code of the tool_failure (kind aborted)
// of a call that did not run because the recorder could not write: the
// call's tool_call, or an event before it, is not on disk (see
// Config.RecordErr).
const RecordFailedCode = "record_failed"

// recordErr is the recorder's error, nil while the events are written.
func (ex *Executor) recordErr() error {
	if ex.cfg.RecordErr == nil {
		return nil
	}
	return ex.cfg.RecordErr()
}

// unrecorded finishes the call as not run when the recorder cannot write,
// and reports whether it did.
func (c *call) unrecorded() bool {
	if c.ex.recordErr() == nil {
		return false
	}
	c.finish(outcome{kind: trajectory.FailureAborted, code: RecordFailedCode,
		text: "Not run: the session's trajectory could not be written, so the session stopped before this call ran; nothing runs unrecorded."})
	return true
}

// preHooks runs stage 3. ok is false when a hook blocked the call, which
// is then finished.
func (c *call) preHooks(ctx context.Context) (input json.RawMessage, changed bool, decision *permission.HookDecision, ok bool) {
	input = c.rawInput
	h := c.ex.cfg.Hooks
	if h == nil {
		return input, false, nil, true
	}
	pre := h.Pre(ctx, hooks.Call{SessionID: c.ex.cfg.SessionID, ToolUseID: c.id, Tool: c.name, Input: input})
	c.emitHookRuns(pre.Runs)
	if pre.Blocked {
		c.finish(outcome{kind: trajectory.FailureHookBlocked, text: fmt.Sprintf("Blocked by a PreToolUse hook: %s\nDo not retry the same call; change your approach or ask the user.", strings.TrimSpace(pre.Reason))})
		return nil, false, nil, false
	}
	if len(pre.Input) > 0 {
		input = pre.Input
	}
	if pre.Decision != "" {
		decision = &permission.HookDecision{Behavior: permission.Behavior(pre.Decision), Reason: pre.DecisionReason}
	}
	return input, pre.InputChanged, decision, true
}

// emitHookRuns records the hooks that ran. A hook's stderr is redacted
// whole before it is clipped to the event's limit.
func (c *call) emitHookRuns(runs []hooks.Run) {
	for _, r := range runs {
		stderr := hooks.ClipStderr(string(c.ex.cfg.Blobs.Redact([]byte(r.Stderr))))
		c.ex.cfg.Sink.Emit(c.t.number, &trajectory.HookRun{ToolRef: c.ref(), Phase: r.Phase, Hook: r.Hook, Outcome: r.Outcome,
			InputChanged: r.InputChanged, DurationMs: trajectory.Millis(r.Duration), ExitCode: r.ExitCode, Stderr: stderr})
	}
}

// permit runs stage 4 and reports whether the call may run; a denied call
// is finished here.
func (c *call) permit(ctx context.Context, input json.RawMessage, hook *permission.HookDecision) bool {
	req := permission.Request{ToolUseID: c.id, Tool: c.name, Input: input, ReadOnly: c.spec.ReadOnly, Hook: hook}
	if ct, ok := c.tool.(tools.CommandTool); ok {
		req.Command = ct.Command(input)
	}
	if pt, ok := c.tool.(tools.PathTool); ok {
		for _, a := range pt.Paths(input) {
			req.Paths = append(req.Paths, permission.Access{Path: a.Path, Write: a.Write})
		}
	}
	perm, sink, turnNo := c.ex.cfg.Permission, c.ex.cfg.Sink, c.t.number
	d := perm.Check(req)
	decision := func(src trajectory.PermissionSource, prompted bool) trajectory.PermissionDecision {
		return trajectory.PermissionDecision{ToolRef: c.ref(), Source: src, Step: d.Step, NeededPrompt: prompted, Rule: d.Rule}
	}
	if d.Behavior == permission.Allow {
		sink.Emit(turnNo, &trajectory.PermissionAllow{PermissionDecision: decision(d.Source, false)})
		return true
	}
	if d.Behavior == permission.Deny {
		sink.Emit(turnNo, &trajectory.PermissionDeny{PermissionDecision: decision(d.Source, false)})
		c.deny(req, d.Reason, d.Source, true)
		return false
	}
	// Ask, and anything unknown: fail closed.
	sink.Emit(turnNo, &trajectory.PermissionPrompt{PermissionDecision: decision(d.Source, true)})
	if c.ex.cfg.Prompter == nil {
		sink.Emit(turnNo, &trajectory.PermissionDeny{PermissionDecision: decision(trajectory.SourceNonInteractive, true)})
		c.deny(req, "This call needs a person's confirmation, but the session is non-interactive, so it was refused. "+d.Reason, trajectory.SourceNonInteractive, false)
		return false
	}
	if c.unrecorded() {
		return false // no one is asked about a call that will not run
	}
	allowed, err := c.ex.cfg.Prompter.Confirm(ctx, Prompt{ToolUseID: c.id, Tool: c.name, Input: input, Reason: d.Reason})
	if err == nil && allowed {
		perm.Remember(req)
		sink.Emit(turnNo, &trajectory.PermissionAllow{PermissionDecision: decision(trajectory.SourceUser, true)})
		return true
	}
	sink.Emit(turnNo, &trajectory.PermissionDeny{PermissionDecision: decision(trajectory.SourceUser, true)})
	if ctx.Err() != nil {
		c.finish(outcome{kind: trajectory.FailureAborted, code: "user_abort", text: "Not run: the user interrupted the turn while this call waited for confirmation."})
		return false
	}
	c.deny(req, "The user denied this call. Do not retry it; ask the user what they want instead.", trajectory.SourceUser, false)
	return false
}

// deny finishes a denied call. It is the one place every final denial goes
// through, so the denial fuse is counted here and its trigger is recorded
// where it acts, never where it is merely evaluated.
// by is the source of the final decision; hard says the permission chain
// itself denied the call (a deny rule, a hard block, a hook's deny), so no
// person was or will be asked.
//
// The trigger's action is what the fuse does from this denial on, which
// depends on the path. After an ask that was refused, the same call goes
// to a person with the fuse's reason (chain step fuse): needs_confirmation.
// A hard deny the fuse never turns into a question (permission.Checker
// keeps it a deny), so recording needs_confirmation there would claim a
// confirmation nothing will ask for. What the fuse does instead is tell
// the model, in this result and in every later denial of the call, to stop
// retrying; the call stays denied and the session continues: continue.
func (c *call) deny(req permission.Request, reason string, by trajectory.PermissionSource, hard bool) {
	if c.ex.cfg.Permission.Denied(req) {
		action := trajectory.ActionNeedsConfirmation
		if hard {
			action = trajectory.ActionContinue
			reason += " This exact call has now been denied repeatedly and will be denied again; stop retrying it, and tell the user what you wanted to do."
		}
		c.ex.cfg.Sink.Emit(c.t.number, &trajectory.DefenseTrigger{Defense: trajectory.DefenseDenialFuse,
			Action: action, ToolUseID: c.id, Count: int(c.ex.fuseTrips.Add(1)),
			Evidence: map[string]string{"tool": c.name, "source": string(by)}})
	}
	c.finish(outcome{kind: trajectory.FailurePermissionDenied, text: reason})
}

// errPanic marks a tool that panicked; the process keeps running.
type errPanic struct{ value any }

func (e errPanic) Error() string { return fmt.Sprintf("panic: %v", e.value) }

func runTool(ctx context.Context, tool tools.Tool, env *tools.Env, input json.RawMessage) (res tools.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = errPanic{value: v}
		}
	}()
	return tool.Run(ctx, env, input)
}

// execute runs stage 7: the tool itself, with its timeout, cancellation and
// the bash sibling cascade, and classifies what happened.
func (c *call) execute(ctx context.Context, input json.RawMessage) outcome {
	runCtx := ctx
	if c.spec.Interrupt == tools.InterruptBlock {
		runCtx = context.WithoutCancel(ctx)
	}
	runCtx, cancel := context.WithCancelCause(runCtx)
	defer cancel(nil)
	runCtx, stop := context.WithTimeout(runCtx, c.ex.cfg.Timeout)
	defer stop()
	_, shell := c.tool.(tools.CommandTool)
	if shell && c.t.startBash(c, cancel) {
		return outcome{kind: trajectory.FailureAborted, code: "sibling_failed",
			text: "Not run: an earlier bash call in this turn failed, and bash calls often depend on each other. Look at that failure first, then run this again if it is still needed."}
	}
	start := time.Now()
	res, err := runTool(runCtx, c.tool, c.ex.cfg.Env, input)
	o := outcome{ran: true, duration: time.Since(start), text: res.Output, code: res.ErrorCode, pid: res.PID}
	var p errPanic
	switch {
	case errors.As(err, &p):
		o.kind, o.code = trajectory.FailureException, "panic"
		o.text = fmt.Sprintf("The %s tool crashed with an internal error (a bug in the harness, not in your input): %v. Try to reach your goal another way.", c.name, p.value)
	case err != nil && errors.Is(context.Cause(runCtx), errSiblingFailed):
		o.kind, o.code = trajectory.FailureAborted, "sibling_failed"
		o.text = withPartial("Stopped: another bash call in this turn failed, and bash calls often depend on each other.", res.Output)
	case err != nil && ctx.Err() != nil && c.spec.Interrupt != tools.InterruptBlock:
		o.kind, o.code = trajectory.FailureAborted, "user_abort"
		o.text = withPartial(fmt.Sprintf("Interrupted by the user after %s.", o.duration.Round(time.Millisecond)), res.Output)
	case errors.Is(err, context.DeadlineExceeded):
		o.kind, o.code = trajectory.FailureTimeout, "timeout"
		o.text = withPartial(fmt.Sprintf("Timed out after %s. If the work is expected to take long, run it with a larger timeout or in smaller steps.", o.duration.Round(time.Millisecond)), res.Output)
	case errors.Is(err, context.Canceled):
		o.kind, o.code = trajectory.FailureAborted, "cancelled"
		o.text = withPartial("Cancelled.", res.Output)
	case err != nil:
		o.kind, o.code = trajectory.FailureException, "error"
		o.text = fmt.Sprintf("The %s tool failed with an internal error: %v. Try to reach your goal another way.", c.name, err)
	case res.IsError:
		o.kind = trajectory.FailureToolError
	default:
		c.modify = res.Modify
	}
	if shell && (o.kind == "" || o.kind == trajectory.FailureToolError) {
		c.sandboxRefusal(input, &o)
	}
	if shell {
		c.t.endBash(c, o.kind != "")
	}
	return o
}

// sandboxRefusal records a command whose output shows the sandbox
// refusing an access (sandbox.Sandbox.Refused), or that the sandbox could
// not start at all, as permission_deny with source sandbox, after the
// call ran, so the metrics and detectors count it, and tells the model
// what is writable. A failed command becomes a permission_denied failure;
// one that succeeded anyway (`ln ~/.bashrc hl; echo x >> hl` writes a new
// hl) keeps its success, with the explanation added.
func (c *call) sandboxRefusal(input json.RawMessage, o *outcome) {
	box := c.ex.cfg.Env.Sandbox()
	if box == nil {
		return
	}
	failed := o.kind != ""
	if o.code != "sandbox_unavailable" {
		var writes []string
		if failed {
			writes = commandWrites(c.tool, input)
		}
		path, ok := box.Refused(o.text, writes, commandWords(c.tool, input))
		if !ok {
			return
		}
		o.text = withTrailerLine(o.text, box.Explain(path))
		if failed {
			o.code = "sandbox"
		}
	}
	if failed {
		o.kind = trajectory.FailurePermissionDenied
	}
	if o.code == "sandbox_unavailable" {
		// The command never started: no duration, not a latency sample.
		o.ran, o.duration = false, 0
	}
	c.ex.cfg.Sink.Emit(c.t.number, &trajectory.PermissionDeny{PermissionDecision: trajectory.PermissionDecision{
		ToolRef: c.ref(), Source: trajectory.SourceSandbox, Step: trajectory.StepSandbox}})
}

// commandWrites lists the paths the command line is known to write, from
// the shell analysis; nil when it cannot be analysed.
func commandWrites(tool tools.Tool, input json.RawMessage) (writes []string) {
	defer func() {
		if recover() != nil {
			writes = nil
		}
	}()
	ct, ok := tool.(tools.CommandTool)
	if !ok {
		return nil
	}
	return shell.Analyze(ct.Command(input)).Writes
}

// commandWords are the command line's words split at blanks, for
// Refused to find the path of a refusal whose message names none.
func commandWords(tool tools.Tool, input json.RawMessage) []string {
	ct, ok := tool.(tools.CommandTool)
	if !ok {
		return nil
	}
	return strings.Fields(ct.Command(input))
}

func withTrailerLine(text, line string) string {
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text + line
}

func withPartial(msg, partial string) string {
	if partial == "" {
		return msg
	}
	return msg + " Output so far:\n" + partial
}

// postHooks runs stage 9 with output, the text the hooks are given: for
// built-in tools what the model will see, for MCP tools the raw output
// before truncation (run chooses).
func (c *call) postHooks(ctx context.Context, input json.RawMessage, output string, o *outcome) {
	h := c.ex.cfg.Hooks
	if h == nil || o.kind == trajectory.FailureAborted {
		return
	}
	post := h.Post(ctx, hooks.Call{SessionID: c.ex.cfg.SessionID, ToolUseID: c.id, Tool: c.name, Input: input}, output, o.kind != "")
	c.emitHookRuns(post.Runs)
	if post.Context != "" {
		o.text += "\n\n[PostToolUse hook] " + post.Context
	}
}
