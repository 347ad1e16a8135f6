package agent

import (
	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/agent/tools"
)

// nonStrict is why the provider sends the tool with OpenAI's strict mode
// off although it is on for the others, or "" (seed §11.6: an MCP server's
// schema strict mode cannot express is sent non-strict, not dropped, and
// the decision is recorded so it is visible).
func nonStrict(p llm.Provider, spec tools.Spec) string {
	ts, ok := p.(llm.ToolStrictness)
	if !ok {
		return ""
	}
	strict, reason, on := ts.ToolStrict(llm.ToolDef{Name: spec.Name, Description: spec.Description, Schema: spec.Schema})
	if !on || strict {
		return ""
	}
	return reason
}
