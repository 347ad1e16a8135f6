package hooks

import (
	"encoding/json"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// Call identifies the tool call a hook runs for.
type Call struct {
	SessionID string
	ToolUseID string
	Tool      string
	Input     json.RawMessage
}

// Run is one hook run, as the trajectory records it in a hook_run event.
type Run struct {
	Hook         string
	Phase        trajectory.HookPhase
	Outcome      trajectory.HookOutcome
	InputChanged bool
	Duration     time.Duration
	// ExitCode is the hook's exit status when it ran to its own end; nil
	// when it timed out, was killed by a signal, was stopped with the
	// call or could not start.
	ExitCode *int
	// Stderr is what the hook wrote on standard error, up to the first
	// 64 KiB, as written: it may hold secrets, so redact it before it is
	// recorded or shown, and only then shorten it with ClipStderr.
	Stderr string
}

// PreResult is what the PreToolUse hooks decided for one call.
type PreResult struct {
	// Runs lists every hook that ran, in order.
	Runs []Run
	// Blocked is set when a hook blocked the call; Reason says why, for the model.
	Blocked bool
	Reason  string
	// Input is the input to use from now on: the hooks' updatedInput, or
	// the original.
	Input json.RawMessage
	// InputChanged is true only when the input really changed (deep
	// equality, not identity), so the model is told only then.
	InputChanged bool
	// Decision is a hook's permission decision: "" (none), or allow, ask,
	// deny, with DecisionReason.
	Decision       string
	DecisionReason string
}

// PostResult is what the PostToolUse hooks did with a call's output.
type PostResult struct {
	Runs []Run
	// Context is extra text for the model that hooks asked to add.
	Context string
}
