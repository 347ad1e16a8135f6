package permission

import (
	"encoding/json"

	"github.com/retrace-dev/retrace/trajectory"
)

// Behavior is the verdict of the permission chain.
type Behavior string

// The verdicts. Ask fails closed: headless, it becomes a deny.
const (
	Allow Behavior = "allow"
	Ask   Behavior = "ask"
	Deny  Behavior = "deny"
)

// Access is a path a call reads or writes, as the model gave it.
type Access struct {
	Path  string
	Write bool
}

// HookDecision is a PreToolUse hook's permission decision, fed to the chain.
type HookDecision struct {
	Behavior Behavior
	Reason   string
}

// Request is one call as the permission chain sees it. The executor builds
// it from the tool's declarations, after PreToolUse hooks ran (so Input is
// the possibly rewritten input).
type Request struct {
	ToolUseID string
	Tool      string
	Input     json.RawMessage
	// ReadOnly is the tool's static declaration (Spec.ReadOnly).
	ReadOnly bool
	// Command is the shell command of a bash call, analysed by the chain;
	// "" for other tools.
	Command string
	// Paths are the files the call reads or writes.
	Paths []Access
	// Hook is the PreToolUse hooks' decision, if any gave one.
	Hook *HookDecision
}

// Decision is where the chain ended, with what the trajectory records.
type Decision struct {
	Behavior Behavior
	Source   trajectory.PermissionSource
	Step     trajectory.ChainStep
	// Rule is the configured rule that matched, e.g. "Bash(rm:*)".
	Rule string
	// Reason explains a deny or an ask to the model in terms of what to do
	// next.
	Reason string
}
