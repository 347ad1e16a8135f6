package agent

import (
	"fmt"
	"strings"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/agent/tools"
)

// nonStrict is why the provider sends the tool with OpenAI's strict mode
// off although it is on for the others, or "" (an MCP server's
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

// sourceEvents records the MCP server state changes since the last
// request and announces the tools they add, once each (only
// the new ones; compaction announces the deferred ones in full again).
// A deferred tool is announced as not loaded, with the way to load it; a
// resident one is in this request's tools already. A tool that goes away
// is not announced: calling it says why.
//
// At the end of the session (announce false) the changes are recorded but
// not announced: no request follows.
func (s *session) sourceEvents(announce bool) {
	if s.cfg.MCPEvents == nil {
		return
	}
	var loaded, deferred []string
	for _, ev := range s.cfg.MCPEvents() {
		for _, name := range ev.Tools {
			if s.known[name] {
				continue
			}
			s.known[name] = true
			ev.Added = append(ev.Added, name)
			if t, ok := s.reg.Lookup(name); ok {
				if why := nonStrict(s.cfg.Provider, t.Spec()); why != "" {
					if ev.NonStrictTools == nil {
						ev.NonStrictTools = map[string]string{}
					}
					ev.NonStrictTools[name] = why
				}
			}
			if s.offered != nil && !s.offered(name) {
				continue
			}
			if s.reg.IsLoaded(name) {
				loaded = append(loaded, name)
			} else {
				deferred = append(deferred, name)
			}
		}
		s.emit(ev)
	}
	if !announce || len(loaded)+len(deferred) == 0 {
		return
	}
	var parts []string
	if len(loaded) > 0 {
		parts = append(parts, "These tools are now available and can be called: "+strings.Join(loaded, ", ")+".")
	}
	if len(deferred) > 0 {
		parts = append(parts, "These tools are now available but not loaded; load one with tool_search (select:NAME) before calling it: "+strings.Join(deferred, ", ")+".")
	}
	s.rem.add(kindNewTools, fmt.Sprintf("%s:%d", kindNewTools, s.turn),
		"An MCP server finished connecting. "+strings.Join(parts, " "))
}
