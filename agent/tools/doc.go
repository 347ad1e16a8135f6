// Package tools holds what a tool is to the agent runtime and the built-in
// tools themselves. A Tool only declares itself (Spec: name, description,
// input schema, read-only, display, result limit, deferred, interrupt
// behaviour) and does its own work in Run; everything around a call —
// hooks, permission, validation, scheduling, truncation, events — belongs
// to the executor.
//
// Each built-in tool has one Go input struct that is the single source of
// both its JSON Schema (SchemaFor) and its decoding, so the schema the model
// sees and the input the tool reads can never drift apart (seed §3.6).
// Definitions are rendered by one function, Definition, in a fixed key
// order, and the Registry hands them out in a stable order, because any
// change to those bytes breaks the provider's prompt cache (seed §3.5).
//
// A result limit is in characters (Spec.ResultLimit) or in estimated
// tokens (Spec.ResultTokens, EstimateTokens: a quarter of a token per
// ASCII character, half a token per other one), which MCP tools use so
// that output in any script gets the same budget (seed §12.3 (3)). The
// tools of an MCP server that connects late join the Registry with Add or
// AddMissing, after every tool already there.
//
// Tools run in an Env: the workspace, the files read in this session, the
// todo list and the Registry. Tools never change the Env directly while
// running; they return a Result.Modify that the executor applies in the
// calls' original order after a parallel batch (seed §6.8).
//
// Tool output is written for the model, the reader who acts next: every
// failure says what to do instead (seed §5.3), a partial read says which
// lines were shown of how many and how to continue (seed §9.3), and an
// empty success is named by Spec.EmptyOutput rather than left blank (seed
// §9.1).
package tools
