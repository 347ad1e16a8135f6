// Package mcp turns the tools of Model Context Protocol servers into
// ordinary tools.Tool values, so the executor runs them through the same
// pipeline as the built-in tools (seed §12.3): an MCP tool is a tool with
// one more source, not a second kind of tool.
//
// Five things differ from a built-in tool, and this package owns them:
// the name is normalised to mcp__<server>__<tool> within the API's
// ^[a-zA-Z0-9_-]{1,64}$; the description is capped, because a server may
// put a whole manual in it; the output is bounded by estimated tokens and
// spilled by the executor; every call has a timeout, because an external
// process can hang in ways we cannot predict; and servers connect
// asynchronously and may fail. A server still connecting is "pending", and
// Servers.Pending says so, so that tool_search can tell the model to retry
// shortly instead of letting it conclude the tool does not exist (seed
// §12.4, §13.12: "absent" has two meanings).
//
// Connect starts every configured server concurrently (at most a few local
// processes at once, more remote connections) and returns at once; the
// runtime reads Tools whenever it builds a turn. A server that fails is
// reported by name with its error, and the others still work.
package mcp
