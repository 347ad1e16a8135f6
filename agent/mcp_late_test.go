package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/retrace-dev/retrace/agent/mcp"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/trajectory"
)

// gateTool opens the gate of a held MCP server and waits until every
// server has connected: the session's first call makes the server late.
type gateTool struct {
	open    func()
	servers **mcp.Servers
}

func (gateTool) Spec() tools.Spec {
	return tools.Spec{Name: "open_gate", Description: "Lets the held MCP server finish connecting.",
		Schema: json.RawMessage(`{"type":"object","properties":{}}`), Display: trajectory.DisplayFull, Source: trajectory.ToolBuiltin}
}
func (gateTool) ConcurrencySafe(json.RawMessage) bool { return false }
func (g gateTool) Run(ctx context.Context, _ *tools.Env, _ json.RawMessage) (tools.Result, error) {
	g.open()
	return tools.Result{Output: "opened"}, (*g.servers).Wait(ctx)
}

// heldServer is a real MCP server over streamable HTTP whose answers wait
// until open is called, so it stays pending as long as a test likes.
func heldServer(t *testing.T) (url string, open func()) {
	t.Helper()
	return heldServerWith(t, `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
}

// heldServerWith is heldServer with the echo tool's input schema.
func heldServerWith(t *testing.T, schema string) (url string, open func()) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server {
		s := sdk.NewServer(&sdk.Implementation{Name: "late", Version: "1"}, nil)
		s.AddTool(&sdk.Tool{Name: "echo", Description: "Echoes the text back.", InputSchema: json.RawMessage(schema)},
			func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				var in struct{ Text string }
				_ = json.Unmarshal(req.Params.Arguments, &in)
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil
			})
		return s
	}, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		handler.ServeHTTP(w, r)
	}))
	open = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(srv.Close)
	t.Cleanup(open)
	return srv.URL, open
}

// A server that connects after the session started: its tools are in no
// catalog, so the mcp_server event names them as added, the model is told
// (a harness reminder naming them as not loaded) in the very next
// request, and it can load and call them.
func TestALateMCPServersToolsAreRecordedAndAnnounced(t *testing.T) {
	url, open := heldServer(t)
	var servers *mcp.Servers
	var lifecycle *mcp.Lifecycle
	r := runScript(t, "mcp_late", runOpts{verify: true, extra: []tools.Tool{gateTool{open: open, servers: &servers}},
		cfg: func(cfg *Config) {
			reg := cfg.Executor.Env.Registry()
			lifecycle = mcp.NewLifecycle(reg, func(msg string) { t.Errorf("lifecycle: %s", msg) })
			var err error
			servers, err = mcp.Connect(t.Context(), []mcp.Config{{Name: "late", URL: url}}, mcp.Options{OnEvent: lifecycle.OnEvent})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = servers.Close() })
			reg.SetPending(servers.Pending)
			cfg.MCPEvents = lifecycle.Drain
		}})
	if r.res.Reason != trajectory.EndTurn {
		t.Fatalf("ended %s (%v)", r.res.Reason, r.res.Err)
	}
	start := payloads[*trajectory.SessionStart](r.events)[0]
	if slices.ContainsFunc(start.Tools, func(ti trajectory.ToolInfo) bool { return ti.Name == "mcp__late__echo" }) {
		t.Fatal("the late tool is in session_start's catalog; the server was not late")
	}
	var states []trajectory.MCPServerState
	var connectedAt, announcedAt, requestAt = -1, -1, -1
	for i, e := range r.events {
		switch p := e.Payload.(type) {
		case *trajectory.MCPServer:
			states = append(states, p.State)
			if p.State == trajectory.MCPConnected {
				if !slices.Equal(p.Added, []string{"mcp__late__echo"}) || !slices.Equal(p.Tools, []string{"mcp__late__echo"}) {
					t.Fatalf("connected event %+v: want the tool listed and added", p)
				}
				connectedAt = i
			}
		case *trajectory.Reminder:
			if p.Kind == kindNewTools {
				if !strings.Contains(p.Text, "mcp__late__echo") || !strings.Contains(p.Text, "not loaded") {
					t.Fatalf("announcement %q: want the tool named as not loaded", p.Text)
				}
				announcedAt = i
			}
		case *trajectory.ModelRequest:
			if announcedAt >= 0 && requestAt < 0 {
				for _, m := range p.NewMessages {
					for _, b := range m.Content {
						if strings.Contains(b.Text, "mcp__late__echo") {
							requestAt = i
						}
					}
				}
			}
		}
	}
	if !slices.Equal(states, []trajectory.MCPServerState{trajectory.MCPPending, trajectory.MCPConnected}) {
		t.Fatalf("mcp_server states %v; want pending, connected", states)
	}
	if connectedAt < 0 || announcedAt < connectedAt || requestAt < announcedAt {
		t.Fatalf("connected at %d, announced at %d, in a request at %d: want them in that order", connectedAt, announcedAt, requestAt)
	}
}

// A server that is up before the session starts has its tools in the
// catalog: its connected event adds nothing and nothing is announced.
func TestAnMCPServerUpBeforeTheSessionIsNotAnnounced(t *testing.T) {
	url, open := heldServer(t)
	open()
	r := runScript(t, "mcp", runOpts{verify: true, cfg: func(cfg *Config) {
		reg := cfg.Executor.Env.Registry()
		lifecycle := mcp.NewLifecycle(reg, func(msg string) { t.Errorf("lifecycle: %s", msg) })
		servers, err := mcp.Connect(t.Context(), []mcp.Config{{Name: "notes", URL: url}}, mcp.Options{OnEvent: lifecycle.OnEvent})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = servers.Close() })
		if err := servers.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		cfg.MCPEvents = lifecycle.Drain
	}})
	if r.res.Reason != trajectory.EndTurn {
		t.Fatalf("ended %s (%v)", r.res.Reason, r.res.Err)
	}
	evs := payloads[*trajectory.MCPServer](r.events)
	if len(evs) != 2 || evs[1].State != trajectory.MCPConnected || len(evs[1].Added) != 0 || !slices.Equal(evs[1].Tools, []string{"mcp__notes__echo"}) {
		t.Fatalf("mcp_server events %+v; want pending, then connected with its tool and nothing added", evs)
	}
	for _, rem := range payloads[*trajectory.Reminder](r.events) {
		if rem.Kind == kindNewTools {
			t.Fatalf("a server in the catalog was announced: %q", rem.Text)
		}
	}
}
