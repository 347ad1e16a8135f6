package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/agent/mcp"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/trajectory"
)

// testSpec is a session over script in a new workspace, recorded to a
// buffer, in bypass mode.
func testSpec(t *testing.T, script string) Spec {
	t.Helper()
	s, err := mockllm.ParseScript([]byte(script), "script.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Workspace: t.TempDir(), Provider: s, Prompt: "Say done.", System: "You are a careful agent.",
		Config: config.Config{Permissions: permission.Config{Mode: trajectory.PermBypass, Home: t.TempDir()}},
		Output: &bytes.Buffer{}, BlobsDir: filepath.Join(t.TempDir(), "blobs")}
}

// sessionStart builds and runs spec and returns its session_start.
func sessionStart(t *testing.T, spec Spec) *trajectory.SessionStart {
	t.Helper()
	var out bytes.Buffer
	spec.Output = &out
	sess, err := Build(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, err := sess.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	ev, err := trajectory.NewDecoder(bytes.NewReader(out.Bytes()), "session").Next()
	if err != nil {
		t.Fatal(err)
	}
	start, ok := ev.Payload.(*trajectory.SessionStart)
	if !ok {
		t.Fatalf("the first event is %s", ev.Type())
	}
	return start
}

func TestASlowMCPServersToolsJoinTheSessionWhenItComesUp(t *testing.T) {
	gate := make(chan struct{})
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server {
		s := sdk.NewServer(&sdk.Implementation{Name: "slow", Version: "1"}, nil)
		s.AddTool(&sdk.Tool{Name: "echo", Description: "Echoes.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{}, nil
			})
		return s
	}, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-gate // the server is "still starting" until the gate opens
		handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}()
	var mu sync.Mutex
	var warnings []string
	spec := testSpec(t, "turns:\n  - content: [{text: done}]\n")
	spec.Config.MCPServers = []mcp.Config{{Name: "slow", URL: srv.URL}}
	spec.MCPGrace = 50 * time.Millisecond
	spec.Warn = func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		warnings = append(warnings, msg)
	}
	sess, err := Build(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	reg := sess.Env.Registry()
	if p := reg.Pending(); len(p) != 1 || p[0] != "slow" {
		t.Fatalf("pending %v, want [slow] while the server is starting", p)
	}
	if _, ok := reg.Lookup("mcp__slow__echo"); ok {
		t.Fatal("the tool is registered before its server is up")
	}
	close(gate)
	for i := 0; i < 500; i++ { // up to 10 s on a loaded machine; normally a few ms
		if _, ok := reg.Lookup("mcp__slow__echo"); ok && len(reg.Pending()) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Fatalf("the tool never joined; pending %v, warnings %q", reg.Pending(), warnings)
}
