package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/trajectory"
)

// Runner runs the configured hooks around tool calls. It is immutable after
// New and safe for concurrent use by parallel calls. A nil *Runner runs no
// hooks, so a runtime without hooks need not special-case it.
type Runner struct {
	hooks     []*hook
	workspace string
}

// Pre runs the PreToolUse hooks matching call.Tool, in config order, once
// each. The first hook that blocks ends the chain; an updatedInput is what
// the following hooks see; the strictest permission decision wins. A hook
// that fails or times out is recorded and otherwise ignored. When ctx ends,
// the running hook is killed and no further hook starts.
func (r *Runner) Pre(ctx context.Context, call Call) PreResult {
	res := PreResult{Input: call.Input}
	if r == nil {
		return res
	}
	current := call.Input
	for _, h := range r.hooks {
		if h.phase != trajectory.HookPre || !h.matches(call.Tool) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		seen := call
		seen.Input = current
		run, ans, ok := r.run(ctx, h, seen, nil)
		if !ok {
			res.Runs = append(res.Runs, run)
			continue
		}
		if ans.block {
			run.Outcome = trajectory.HookBlock
			res.Runs = append(res.Runs, run)
			res.Blocked = true
			res.Reason = blockReason(h.name, ans.reason)
			break
		}
		if ans.updatedInput != nil && !jsonEqual(current, ans.updatedInput) {
			current = ans.updatedInput
			run.InputChanged = true
			run.Outcome = trajectory.HookModified
		}
		if strictness(ans.decision) > strictness(res.Decision) {
			res.Decision = ans.decision
			res.DecisionReason = ans.decisionReason
		}
		res.Runs = append(res.Runs, run)
	}
	res.Input = current
	// Compared with the original, not per run: two hooks that change a
	// field and change it back have not changed the call.
	res.InputChanged = !bytes.Equal(current, call.Input) && !jsonEqual(current, call.Input)
	return res
}

// Post runs the PostToolUse hooks matching call.Tool, in config order, once
// each, with the call's output. The tool already ran, so nothing a hook says
// can undo it: a block and an additionalContext both become text for the
// model, and every matching hook runs, because stopping after a block would
// only skip the others' side effects (logging, formatting) for no gain.
// When ctx ends, the running hook is killed and no further hook starts.
func (r *Runner) Post(ctx context.Context, call Call, output string, isError bool) PostResult {
	var res PostResult
	if r == nil {
		return res
	}
	var parts []string
	for _, h := range r.hooks {
		if h.phase != trajectory.HookPost || !h.matches(call.Tool) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		run, ans, ok := r.run(ctx, h, call, &toolResponse{Output: output, IsError: isError})
		if ok && ans.block {
			run.Outcome = trajectory.HookBlock
			parts = append(parts, feedback(h.name, ans.reason))
		}
		if ok && strings.TrimSpace(ans.context) != "" {
			parts = append(parts, strings.TrimSpace(ans.context))
		}
		res.Runs = append(res.Runs, run)
	}
	res.Context = strings.Join(parts, "\n\n")
	return res
}

// run runs one hook for call and interprets how it ended. ok is false when
// the hook itself failed (error or timeout): then its answer must be
// ignored and the run's outcome already says why. Otherwise the outcome is
// continue and the caller refines it from the answer.
func (r *Runner) run(ctx context.Context, h *hook, call Call, resp *toolResponse) (Run, answer, bool) {
	run := Run{Hook: h.name, Phase: h.phase, Outcome: trajectory.HookError}
	event := EventPreToolUse
	if h.phase == trajectory.HookPost {
		event = EventPostToolUse
	}
	payload, err := json.Marshal(stdinPayload{
		SessionID:     call.SessionID,
		Cwd:           r.workspace,
		HookEventName: event,
		ToolName:      call.Tool,
		ToolInput:     toolInputJSON(call.Input),
		ToolUseID:     call.ToolUseID,
		ToolResponse:  resp,
	})
	if err != nil {
		return run, answer{}, false
	}

	res := r.execHook(ctx, h, call, payload)
	run.Duration = res.duration
	run.Stderr = string(res.stderr)
	if res.status == exited && res.exitCode >= 0 {
		code := res.exitCode
		run.ExitCode = &code
	}
	switch {
	case res.status == timedOut:
		run.Outcome = trajectory.HookTimeout
		return run, answer{}, false
	case res.status != exited:
		return run, answer{}, false
	case res.exitCode == 2:
		// Claude Code's "blocking error": stdout is ignored, stderr is the
		// reason.
		run.Outcome = trajectory.HookContinue
		return run, answer{block: true, reason: string(bytes.TrimSpace(res.stderr))}, true
	case res.exitCode != 0 || res.stdoutOverflow:
		return run, answer{}, false
	}
	ans, err := parseOutput(res.stdout)
	if err != nil {
		return run, answer{}, false
	}
	run.Outcome = trajectory.HookContinue
	return run, ans, true
}

// blockReason tells the model that a user's hook, not the tool, stopped the
// call, and what to do instead of retrying it unchanged.
func blockReason(hook, reason string) string {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return fmt.Sprintf("The PreToolUse hook %q blocked this call without giving a reason. Do not retry the same call; take a different approach or ask the user.", hook)
	}
	return fmt.Sprintf("The PreToolUse hook %q blocked this call: %s", hook, reason)
}

// feedback attributes a PostToolUse block to its hook, so the model does not
// mistake it for the tool's own output.
func feedback(hook, reason string) string {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "it flagged this result without giving a reason."
	}
	return fmt.Sprintf("The PostToolUse hook %q reports: %s", hook, reason)
}

// ClipStderr shortens a hook's stderr to trajectory.MaxHookStderr bytes
// for a hook_run event: the head and the tail, where a failing program
// says what it was doing and how it died, with the number of bytes left
// out between them. It cuts between UTF-8 characters. Call it on redacted
// text only: a secret cut in two is no longer recognised.
func ClipStderr(s string) string {
	if len(s) <= trajectory.MaxHookStderr {
		return s
	}
	// The marker's number has at most 20 digits; 48 bytes always hold it.
	room := trajectory.MaxHookStderr - 48
	head := cutBefore(s, room*6/10)
	tail := s[cutAfter(s, len(s)-(room-len(head))):]
	return fmt.Sprintf("%s\n… [%d bytes omitted] …\n%s", head, len(s)-len(head)-len(tail), tail)
}

// cutBefore returns the longest prefix of s of at most n bytes that ends
// between two UTF-8 characters.
func cutBefore(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// cutAfter returns the smallest index i >= n at which a UTF-8 character
// starts, or len(s).
func cutAfter(s string, n int) int {
	for n < len(s) && !utf8.RuneStart(s[n]) {
		n++
	}
	return n
}
