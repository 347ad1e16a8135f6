package tools

import (
	"context"
	"encoding/json"

	"github.com/retrace-dev/retrace/trajectory"
)

// Tool is one tool the model can ask for. The executor owns everything
// around a call (lookup, hooks, permission, validation, scheduling, result
// shaping, events); a Tool only declares itself and does its own work.
type Tool interface {
	// Spec returns the tool's static declarations. It is called often and
	// must return the same value every time.
	Spec() Spec
	// ConcurrencySafe reports whether this call may run in parallel with
	// the neighbouring safe calls of the same turn. It is asked
	// per call, with input already validated against Spec().Schema. A panic
	// counts as "not safe".
	ConcurrencySafe(input json.RawMessage) bool
	// Run does the call's work. The input is validated against
	// Spec().Schema and may have been rewritten by a hook. A Result with
	// IsError is a tool_error (the tool ran and reported failure); a
	// returned error or a panic is an exception (our bug). ctx is cancelled
	// on timeout and on abort.
	Run(ctx context.Context, env *Env, input json.RawMessage) (Result, error)
}

// Interrupt says what happens to a running call when the user aborts the turn.
type Interrupt int

const (
	// InterruptCancel: the call's context is cancelled (the default).
	InterruptCancel Interrupt = iota
	// InterruptBlock: the call runs to completion, because stopping it
	// halfway would leave the workspace in a broken state.
	InterruptBlock
)

// Spec is what a tool declares about itself. A test cross-checks every
// built-in tool's declarations against an expected table.
type Spec struct {
	// Name is the name the model calls the tool by.
	Name string
	// Description is sent to the model with the schema.
	Description string
	// Schema is the JSON Schema of the input, generated from the tool's
	// input struct: the struct is the single source of both.
	Schema json.RawMessage
	// ReadOnly tools never change the workspace, whatever their input.
	ReadOnly bool
	// Display is how results are shown to the user; it never changes what
	// the model receives.
	Display trajectory.DisplayMode
	// ResultLimit is the most characters of output the model gets before
	// the executor truncates and spills; 0 means unlimited.
	ResultLimit int
	// ResultTokens, when above 0, is the output limit in estimated tokens
	// (EstimateTokens) instead of characters, and ResultLimit is ignored:
	// the same number of characters costs twice the tokens in Chinese as
	// in English, so a character limit is a different budget per content.
	// MCP tools use it.
	ResultTokens int
	// Deferred tools are not sent to the model until tool_search loads them.
	Deferred bool
	// Interrupt is the call's behaviour on a user abort.
	Interrupt Interrupt
	// EmptyOutput is what the model is told when a successful call prints
	// nothing, so "no match" is never confused with "broken".
	EmptyOutput string
	// Source says whether the tool is built in or comes from MCP.
	Source trajectory.ToolSource
	// Untrusted marks a built-in tool whose output a third party wrote (a
	// web fetch): the model gets it wrapped as untrusted content, like the
	// output of every MCP tool.
	Untrusted bool
}

// Access is a path a call reads or writes, for permission checks and
// snapshots. Paths are as the model gave them (relative to the workspace
// or absolute); the permission layer resolves them.
type Access struct {
	Path  string
	Write bool
}

// PathTool is implemented by tools whose input names files, so that the
// permission chain can validate them and the executor can snapshot the
// ones a call will change.
type PathTool interface {
	Paths(input json.RawMessage) []Access
}

// CommandTool is implemented by the bash tool: the permission chain
// analyses the command itself (compound commands, redirections,
// subcommands).
type CommandTool interface {
	Command(input json.RawMessage) string
}

// Result is what a tool's work produced.
type Result struct {
	// Output is the model-side text, before the executor's truncation.
	Output string
	// IsError marks a tool_error: the tool ran and reported failure.
	IsError bool
	// ErrorCode is a structured code for a failure (ENOENT, exit:2); a
	// label, never text.
	ErrorCode string
	// PID is the process id of the process the tool started (bash's
	// shell), 0 for none; tool_end records it so that a replay maps the
	// recorded id to its own.
	PID int
	// Modify, when set, changes the session state (files read, tools
	// loaded). The executor applies modifiers in the calls' original order
	// after a parallel batch, never in completion order.
	Modify func(*Env)
}
