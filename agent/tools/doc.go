// Package tools holds what a tool is to the agent runtime and the built-in
// tools themselves. A Tool only declares itself (Spec: name, description,
// input schema, read-only, display, result limit, deferred, interrupt
// behaviour) and does its own work in Run; everything around a call —
// hooks, permission, validation, scheduling, truncation, events — belongs
// to the executor.
//
// Each built-in tool has one Go input struct that is the single source of
// both its JSON Schema (SchemaFor) and its decoding, so the schema the model
// sees and the input the tool reads can never drift apart.
// Definitions are rendered by one function, Definition, in a fixed key
// order, and the Registry hands them out in a stable order, because any
// change to those bytes breaks the provider's prompt cache.
//
// A result limit is in characters (Spec.ResultLimit) or in estimated
// tokens (Spec.ResultTokens, EstimateTokens: a quarter of a token per
// ASCII character, half a token per other one), which MCP tools use so
// that output in any script gets the same budget. The
// tools of an MCP server that connects late join the Registry with Add or
// AddMissing, after every tool already there.
//
// Tools run in an Env: the workspace, the files read in this session, the
// todo list and the Registry. Tools never change the Env directly while
// running; they return a Result.Modify that the executor applies in the
// calls' original order after a parallel batch.
//
// Tool output is written for the model, the reader who acts next: every
// failure says what to do instead, a partial read says which
// lines were shown of how many and how to continue, and an
// empty success is named by Spec.EmptyOutput rather than left blank.
package tools
