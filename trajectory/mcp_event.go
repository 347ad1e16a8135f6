package trajectory

import "fmt"

// TypeMCPServer is the event type of MCPServer. It is additive: a reader
// that does not know it may skip it, and no other event refers to it.
const TypeMCPServer EventType = "mcp_server"

// MCPServerState is where an MCP server is in its life.
type MCPServerState string

// The MCP server states. A server starts pending; it becomes connected or
// failed; a connected server that dies is reconnecting until it is
// reconnected or, after its last attempt, failed.
const (
	MCPPending      MCPServerState = "pending"
	MCPConnected    MCPServerState = "connected"
	MCPFailed       MCPServerState = "failed"
	MCPReconnecting MCPServerState = "reconnecting"
	MCPReconnected  MCPServerState = "reconnected"
)

var mcpServerStates = closedSet[MCPServerState]{MCPPending, MCPConnected, MCPFailed, MCPReconnecting, MCPReconnected}

// Valid reports whether s is a known MCP server state.
func (s MCPServerState) Valid() bool { return mcpServerStates.has(s) }

// MCPServer records a change of an MCP server's state:
// a server that connects after the session started brings tools
// the first session_start catalog does not list, and Added names them —
// the tools announced to the model. A detector tells "not
// here yet" from "does not exist" with it, and a reader sees when each
// tool became callable.
type MCPServer struct {
	// Server is the configured name of the server.
	Server string `json:"server"`
	// State is the state entered.
	State MCPServerState `json:"state"`
	// Tools are the model-side names of the server's tools, sorted, when
	// the server connected or reconnected.
	Tools []string `json:"tools,omitempty"`
	// Added are the tools of Tools new to the session: in no earlier
	// catalog or mcp_server event. They are the ones announced to the
	// model in the next request.
	Added []string `json:"added,omitempty"`
	// NonStrictTools maps each tool of Added that the provider sends with
	// OpenAI's strict mode off, although it is on for the others, to why
	// (as SessionStart's ToolInfo.NonStrict does for the first catalog).
	NonStrictTools map[string]string `json:"non_strict_tools,omitempty"`
	// Attempt counts reconnect attempts from 1 (reconnecting: the attempt
	// about to be made; reconnected: the one that worked).
	Attempt int `json:"attempt,omitempty"`
	// Error is why the server failed or is reconnecting.
	Error string `json:"error,omitempty"`
}

// EventType implements Payload.
func (*MCPServer) EventType() EventType { return TypeMCPServer }

func (p *MCPServer) validate(c *checks) {
	c.nonEmpty("server", p.Server)
	checkEnum(c, "state", p.State, mcpServerStates)
	for i, n := range p.Tools {
		c.toolName(fmt.Sprintf("tools[%d]", i), n)
	}
	for i, n := range p.Added {
		c.toolName(fmt.Sprintf("added[%d]", i), n)
	}
	for name := range p.NonStrictTools {
		c.toolName("non_strict_tools key", name)
	}
	c.nonNegative("attempt", float64(p.Attempt))
	if p.State == MCPFailed && p.Error == "" {
		c.fail("error", ErrMissingField, "a failed server must say why")
	}
}
