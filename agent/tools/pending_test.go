package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// lateTool stands for the tool of an MCP server that connects late.
type lateTool struct{}

func (lateTool) Spec() Spec {
	return Spec{Name: "mcp__notes__echo", Description: "Echoes notes.", Schema: json.RawMessage(`{"type":"object"}`),
		Deferred: true, Display: trajectory.DisplayFull, Source: trajectory.ToolMCP}
}
func (lateTool) ConcurrencySafe(json.RawMessage) bool { return false }
func (lateTool) Run(context.Context, *Env, json.RawMessage) (Result, error) {
	return Result{Output: "echo"}, nil
}

func TestToolSearchSaysWhichServersAreStillConnectingUntilTheirToolsArrive(t *testing.T) {
	env := newTestEnv(t)
	reg := env.Registry()
	pending := []string{"notes"}
	reg.SetPending(func() []string { return pending })
	search := func(q string) string {
		res, err := ToolSearchTool{}.Run(context.Background(), env, json.RawMessage(`{"query":"`+q+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		return res.Output
	}
	if out := search("echo notes"); !strings.Contains(out, "No tools matched") || !strings.Contains(out, "Still connecting: notes") {
		t.Fatalf("while connecting: %q", out)
	}
	before := len(reg.All())
	if err := reg.Add(lateTool{}); err != nil {
		t.Fatal(err)
	}
	pending = nil
	if out := search("echo notes"); !strings.Contains(out, "mcp__notes__echo") || strings.Contains(out, "Still connecting") {
		t.Fatalf("after connecting: %q", out)
	}
	if all := reg.All(); len(all) != before+1 || all[len(all)-1].Spec().Name != "mcp__notes__echo" {
		t.Fatalf("Add must append after the tools registered before")
	}
	if err := reg.Add(lateTool{}); err == nil {
		t.Fatal("adding a tool twice must fail")
	}
}
