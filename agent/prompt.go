package agent

import (
	"encoding/json"
	"strings"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/agent/tools"
)

// notLoadedLabel marks a deferred tool in the system prompt. Without it the
// model takes a listed name for a callable tool and, having no schema for
// it, collapses into the loaded tool with the nearest name (seed §10.5).
const notLoadedLabel = "not loaded; activate with tool_search"

// DeferredToolsHeading opens the section SystemPrompt appends to the base
// system prompt when the registry has deferred tools. BaseSystemPrompt
// removes the section again; nothing else should look for the heading.
const DeferredToolsHeading = "# Deferred tools"

// BaseSystemPrompt returns the base prompt SystemPrompt was given, from the
// system prompt it returned: the deferred-tools section, when there is one,
// is cut off. A replay uses it for recordings whose session_start does not
// hold the base prompt.
func BaseSystemPrompt(system string) string {
	if i := strings.Index(system, "\n\n"+DeferredToolsHeading+"\n"); i >= 0 {
		return system[:i]
	}
	if strings.HasPrefix(system, DeferredToolsHeading+"\n") {
		return ""
	}
	return system
}

// SystemPrompt returns the static system prompt of a session: base, then
// the deferred tools of reg, each labelled as not loaded. The partition
// reads only the tools' static declarations (Spec().Deferred), never which
// tools are loaded now: the system prompt is the cached prefix, and
// runtime state in it would change it on every activation (seed §10.6,
// §13.2). So the list is the same from the first turn to the last.
func SystemPrompt(base string, reg *tools.Registry) string {
	var deferred []tools.Spec
	if reg != nil {
		for _, t := range reg.All() {
			if s := t.Spec(); s.Deferred {
				deferred = append(deferred, s)
			}
		}
	}
	if len(deferred) == 0 {
		return base
	}
	var b strings.Builder
	b.WriteString(base)
	if base != "" {
		b.WriteString("\n\n")
	}
	b.WriteString(DeferredToolsHeading + "\n")
	b.WriteString("These tools exist but their definitions are not loaded, so you cannot call them yet. " +
		"Load one with tool_search (query \"select:NAME\"), then call it from your next message on.\n")
	for _, s := range deferred {
		b.WriteString("- ")
		b.WriteString(s.Name)
		b.WriteString(" (" + notLoadedLabel + ")")
		if d := firstSentence(s.Description); d != "" {
			b.WriteString(": ")
			b.WriteString(d)
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

// firstSentence keeps a description short in the list: the full one comes
// with the definition when the tool is loaded.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// toolDefs returns the definitions to send this turn: the loaded tools in
// the registry's stable order (resident tools, then activated ones in
// activation order, seed §3.5).
func toolDefs(reg *tools.Registry) []llm.ToolDef {
	active := reg.Active()
	out := make([]llm.ToolDef, len(active))
	for i, t := range active {
		s := t.Spec()
		out[i] = llm.ToolDef{Name: s.Name, Description: s.Description, Schema: s.Schema}
	}
	return out
}

// hasRequired reports whether a tool's schema lists required properties,
// which is what makes an empty input a degenerate call (seed §4.5 F1).
func hasRequired(t tools.Tool) bool {
	var schema struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(t.Spec().Schema, &schema); err != nil {
		return false
	}
	return len(schema.Required) > 0
}

// isEmptyObject reports whether raw is a JSON object without members.
func isEmptyObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil && len(m) == 0
}
