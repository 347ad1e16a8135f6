package detectors

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/retrace-dev/retrace/agent/mcp"
	"github.com/retrace-dev/retrace/trajectory"
)

// mcpCatalog connects real MCP servers (the official SDK over streamable
// HTTP on loopback), one configured resident and one deferred, and
// returns their catalog as the runtime records it, with the notices.
func mcpCatalog(t *testing.T) ([]trajectory.ToolInfo, []string) {
	t.Helper()
	serve := func(tool string) string {
		h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server {
			s := sdk.NewServer(&sdk.Implementation{Name: tool, Version: "1"}, nil)
			s.AddTool(&sdk.Tool{Name: tool, Description: "A tool.", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					return &sdk.CallToolResult{}, nil
				})
			return s
		}, nil)
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	resident := false
	servers, err := mcp.Connect(t.Context(), []mcp.Config{
		{Name: "github", URL: serve("create_issue"), Deferred: &resident},
		{Name: "linear", URL: serve("create_ticket")},
	}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = servers.Close() })
	if err := servers.Wait(t.Context()); err != nil || len(servers.Failures()) > 0 {
		t.Fatalf("connect: %v %v", err, servers.Failures())
	}
	var catalog []trajectory.ToolInfo
	for _, name := range []string{"read", "bash", "tool_search"} {
		catalog = append(catalog, trajectory.ToolInfo{Name: name})
	}
	for _, tl := range servers.Tools() {
		sp := tl.Spec()
		catalog = append(catalog, trajectory.ToolInfo{Name: sp.Name, Deferred: sp.Deferred, Source: trajectory.ToolMCP})
	}
	return catalog, servers.Notices()
}

// Every mcp__ name shares a 5-character prefix, so a resident server
// beside a deferred one is the collapse condition. The runtime defers
// the resident one instead (saying so), and the detector is quiet on the
// catalog it produces; on the catalog as configured (the old behaviour)
// it fires.
func TestPrefixCollapseRiskIsQuietOnTheMCPDeferralAndFiresOnTheMix(t *testing.T) {
	catalog, notices := mcpCatalog(t)
	if len(notices) != 1 || !strings.Contains(notices[0], `"github"`) {
		t.Fatalf("notices %q; want one naming the resident server it deferred", notices)
	}
	if got := check(t, "prefix_collapse_risk", session("s", start(catalog...)), nil); len(got) != 0 {
		t.Fatalf("findings on the runtime's catalog: %+v; want none", got)
	}

	var configured []trajectory.ToolInfo
	for _, ti := range catalog {
		if strings.HasPrefix(ti.Name, "mcp__github__") {
			ti.Deferred = false
		}
		configured = append(configured, ti)
	}
	got := check(t, "prefix_collapse_risk", session("s", start(configured...)), nil)
	if len(got) != 1 || !strings.Contains(got[0].Message, "mcp__github__create_issue × mcp__linear__create_ticket") {
		t.Fatalf("findings on the configured mix: %+v; want the mcp__ pair", got)
	}
}
