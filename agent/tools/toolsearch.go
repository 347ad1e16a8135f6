package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/retrace-dev/retrace/trajectory"
)

// toolSearchDefaultMax is how many tools a keyword search returns unless
// the model asks for another number.
const toolSearchDefaultMax = 5

type toolSearchInput struct {
	Query      string `json:"query" jsonschema:"minLength=1" jsonschema_description:"Keywords describing the capability you need (e.g. create issue), or select:NAME[,NAME...] to load tools whose exact names you know."`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"minimum=1,maximum=20" jsonschema_description:"The most tools to return for a keyword search (default 5)."`
}

// ToolSearchTool is the tool_search built-in: finds deferred tools and
// loads them.
type ToolSearchTool struct{}

var toolSearchSpec = sync.OnceValue(func() Spec {
	return Spec{
		Name: "tool_search",
		Description: "Finds tools that are available but not loaded yet, and loads them so you can call them. " +
			"Search by keywords (matched against tool names and descriptions), or use select:NAME to load a tool whose exact name you know. " +
			"It returns each match's full definition; the matched tools can be called from your next message on. " +
			"Use it when no loaded tool fits the task, or when told a tool exists but is not loaded.",
		Schema:   SchemaFor[toolSearchInput](),
		ReadOnly: true,
		// Loading definitions is invisible to the user; the call that
		// follows is what they see.
		Display:     trajectory.DisplayHidden,
		ResultLimit: 0,
		Interrupt:   InterruptCancel,
		EmptyOutput: "(the tool succeeded with no output)",
		Source:      trajectory.ToolBuiltin,
	}
})

// Spec returns tool_search's declarations.
func (ToolSearchTool) Spec() Spec { return toolSearchSpec() }

// ConcurrencySafe reports true: searching reads the registry, and the
// loading happens in Modify, applied in call order.
func (ToolSearchTool) ConcurrencySafe(json.RawMessage) bool { return true }

// Run searches the registry and returns the matches' definitions, with a
// Modify that activates them.
func (ToolSearchTool) Run(_ context.Context, env *Env, input json.RawMessage) (Result, error) {
	in, err := decode[toolSearchInput](input)
	if err != nil {
		return invalidInput("tool_search", err), nil
	}
	reg := env.Registry()
	if reg == nil {
		return Result{Output: "No other tools are available in this session: use the tools you already have."}, nil
	}
	max := in.MaxResults
	if max <= 0 {
		max = toolSearchDefaultMax
	}
	matches := reg.Search(in.Query, max)
	// Tools of a source still connecting are "not here yet", not "absent":
	// say so, or the model concludes they do not exist.
	pendingNote := ""
	if p := reg.Pending(); len(p) > 0 {
		pendingNote = fmt.Sprintf("\nStill connecting: %s. Their tools are not listed yet; if you need one of them, call tool_search again shortly.", strings.Join(p, ", "))
	}
	if len(matches) == 0 {
		return Result{Output: fmt.Sprintf("No tools matched %q. Try other or fewer keywords, or select:NAME with an exact tool name.", in.Query) + pendingNote}, nil
	}
	names := make([]string, len(matches))
	var b strings.Builder
	fmt.Fprintf(&b, "Found %d tool(s). Their definitions follow, one per line; they are loaded and can be called from your next message on.\n", len(matches))
	for i, t := range matches {
		names[i] = t.Spec().Name
		b.Write(Definition(t))
		b.WriteByte('\n')
	}
	b.WriteString(strings.TrimPrefix(pendingNote, "\n"))
	return Result{
		Output: b.String(),
		Modify: func(e *Env) {
			if r := e.Registry(); r != nil {
				r.Activate(names...)
			}
		},
	}, nil
}
