// Package mcp turns the tools of Model Context Protocol servers into
// ordinary tools.Tool values, so the executor runs them through the same
// pipeline as the built-in tools: an MCP tool is a tool with
// one more source, not a second kind of tool.
//
// Five things differ from a built-in tool, and this package owns them:
// the name is normalised to mcp__<server>__<tool> within the API's
// ^[a-zA-Z0-9_-]{1,64}$; the description is capped, because a server may
// put a whole manual in it; the output is bounded by estimated tokens and
// spilled by the executor, whose PostToolUse hooks get it raw; every call has a timeout, because an external
// process can hang in ways we cannot predict; and servers connect
// asynchronously and may fail. A server still connecting is "pending", and
// Servers.Pending says so, so that tool_search can tell the model to retry
// shortly instead of letting it conclude the tool does not exist ("absent" has two meanings).
//
// Connect starts every configured server concurrently (at most a few local
// processes at once, more remote connections) and returns at once; the
// runtime reads Tools whenever it builds a turn. A server that fails is
// reported by name with its error, and the others still work.
//
// A connected server is watched: its connection closing, or two heartbeat
// pings in a row without an answer, start a reconnect with exponential
// backoff (30 s heartbeat, 1 s base, 5 attempts). A call
// meanwhile is a tool error saying the server is reconnecting
// (CodeReconnecting), and one to a server given up says it is
// disconnected (CodeDisconnected); a tool keeps its name across a
// reconnect. Every state change is an Event for Options.OnEvent; Lifecycle
// turns them into trajectory mcp_server events and registers the tools of
// a server that came up, so the agent loop can record them and announce
// the new ones to the model.
//
// Output is bounded in estimated tokens (tools.EstimateTokens), not
// characters, because the same characters cost different tokens in
// different scripts. Every name shares the mcp__ prefix, which permission
// rules and hooks match, so a resident server beside a deferred one would
// meet the prefix-collapse condition; Connect defers
// such a mix as a whole and says so in Notices.
package mcp
