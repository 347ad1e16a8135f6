package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/retrace-dev/retrace/agent/mcp"
	"github.com/retrace-dev/retrace/trajectory"
)

// An MCP tool is recorded like any other tool: tool_call, permission,
// outcome, tool_end with its own duration, tool_result.
func TestASessionWithAnMCPToolRecordsItLikeAnyOtherTool(t *testing.T) {
	server := func(*http.Request) *sdk.Server {
		s := sdk.NewServer(&sdk.Implementation{Name: "notes", Version: "1"}, nil)
		s.AddTool(&sdk.Tool{Name: "echo", Description: "Echoes the text back.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
			func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				var in struct{ Text string }
				if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
					return nil, err
				}
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil
			})
		return s
	}
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(server, nil))
	defer srv.Close()
	servers, err := mcp.Connect(t.Context(), []mcp.Config{{Name: "notes", URL: srv.URL}}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer servers.Close()
	if err := servers.Wait(t.Context()); err != nil || len(servers.Failures()) > 0 {
		t.Fatalf("connect: %v %v", err, servers.Failures())
	}
	r := runScript(t, "mcp", runOpts{extra: servers.Tools(), verify: true})
	if r.res.Reason != trajectory.EndTurn {
		t.Fatalf("ended %s (%v)", r.res.Reason, r.res.Err)
	}
	var call *trajectory.ToolCall
	for _, c := range payloads[*trajectory.ToolCall](r.events) {
		if c.ToolUseID == "toolu_m2" {
			call = c
		}
	}
	if call == nil || call.Tool != "mcp__notes__echo" {
		t.Fatalf("no tool_call for the MCP tool: %+v", payloads[*trajectory.ToolCall](r.events))
	}
	var ok, ended bool
	for _, s := range payloads[*trajectory.ToolSuccess](r.events) {
		ok = ok || s.ToolUseID == "toolu_m2"
	}
	for _, e := range payloads[*trajectory.ToolEnd](r.events) {
		ended = ended || (e.ToolUseID == "toolu_m2" && e.DurationMs > 0)
	}
	var result string
	for _, res := range payloads[*trajectory.ToolResult](r.events) {
		if res.ToolUseID == "toolu_m2" {
			result = res.Text
		}
	}
	if !ok || !ended || result != "echo: hello" {
		t.Fatalf("success %v, tool_end with its duration %v, result %q", ok, ended, result)
	}
	start := payloads[*trajectory.SessionStart](r.events)[0]
	for _, ti := range start.Tools {
		if ti.Name == "mcp__notes__echo" && (ti.Source != trajectory.ToolMCP || !ti.Deferred) {
			t.Fatalf("catalog entry %+v: want source mcp, deferred", ti)
		}
	}
}
