package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/agent/llm/dialect"
	"github.com/retrace-dev/retrace/agent/mcp"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// oneOfSchema is what a real MCP server may declare: a union OpenAI strict
// mode refuses.
const oneOfSchema = `{"type":"object","properties":{"target":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["target"]}`

// shapesServer is a real MCP server (the official SDK over streamable
// HTTP on loopback) with one tool whose schema has a oneOf.
func shapesServer(t *testing.T) *mcp.Servers {
	t.Helper()
	server := func(*http.Request) *sdk.Server {
		s := sdk.NewServer(&sdk.Implementation{Name: "shapes", Version: "1"}, nil)
		s.AddTool(&sdk.Tool{Name: "pick", Description: "Picks a target by name or number.", InputSchema: json.RawMessage(oneOfSchema)},
			func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "picked " + string(req.Params.Arguments)}}}, nil
			})
		return s
	}
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(server, nil))
	t.Cleanup(srv.Close)
	servers, err := mcp.Connect(t.Context(), []mcp.Config{{Name: "shapes", URL: srv.URL}}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = servers.Close() })
	if err := servers.Wait(t.Context()); err != nil || len(servers.Failures()) > 0 {
		t.Fatalf("connect: %v %v", err, servers.Failures())
	}
	return servers
}

// bodyTap keeps the body of every request a client sends, so the test can
// read the wire the official SDK produced.
type bodyTap struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (b *bodyTap) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		b.mu.Lock()
		b.bodies = append(b.bodies, data)
		b.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(data))
	}
	return http.DefaultTransport.RoundTrip(r)
}

// strictFlags returns, for the last request that offered tool, each
// offered tool's strict flag.
func (b *bodyTap) strictFlags(t *testing.T, tool string) map[string]bool {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.bodies) - 1; i >= 0; i-- {
		var req struct {
			Tools []struct {
				Name   string `json:"name"`
				Strict bool   `json:"strict"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(b.bodies[i], &req); err != nil {
			t.Fatal(err)
		}
		flags := map[string]bool{}
		for _, tl := range req.Tools {
			flags[tl.Name] = tl.Strict
		}
		if _, ok := flags[tool]; ok {
			return flags
		}
	}
	t.Fatalf("no request offered %s", tool)
	return nil
}

// runOpenAIResponses runs testdata/mcp_oneof.yaml through the real OpenAI
// Responses client against the mock LLM server, with the shapes server's
// tools, and returns the result, the trajectory and the wire.
func runOpenAIResponses(t *testing.T, opts llm.Options) (Result, []trajectory.Event, *bodyTap) {
	t.Helper()
	servers := shapesServer(t)
	script, err := mockllm.LoadScript(filepath.Join("testdata", "mcp_oneof.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	url := startMock(t, script)
	tap := &bodyTap{}
	opts.BaseURL, opts.APIKey, opts.Model, opts.MaxRetries = url+"/v1", "test-key", "mock-1", -1
	opts.HTTPClient = &http.Client{Transport: tap}
	prov, err := llm.NewOpenAIResponses(opts)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec := recorder.New(&buf, recorder.Options{})
	cfg := baseConfig(t, t.TempDir(), script, rec, servers.Tools()...)
	cfg.Provider, cfg.Model = prov, "mock-1"
	res, evs := runRecorded(t, cfg, rec, &buf)
	return res, evs, tap
}

// An MCP tool whose schema strict mode cannot express is sent with strict
// off, alone; every other tool stays strict, the session completes over
// the real OpenAI Responses wire, and session_start records the decision.
func TestAnMCPToolWithAOneOfSchemaWorksOnTheResponsesWire(t *testing.T) {
	res, events, tap := runOpenAIResponses(t, llm.Options{ToolSchema: dialect.OpenAIStrict, StrictTools: true, NonStrictSchema: dialect.OpenAI})
	if res.Reason != trajectory.EndTurn || res.Text != "Picked 7." {
		t.Fatalf("ended %s (%v), text %q", res.Reason, res.Err, res.Text)
	}
	flags := tap.strictFlags(t, "mcp__shapes__pick")
	if flags["mcp__shapes__pick"] || !flags["read"] || !flags["tool_search"] {
		t.Fatalf("strict flags on the wire: %v; want the oneOf tool non-strict and the built-ins strict", flags)
	}
	var result string
	for _, r := range payloads[*trajectory.ToolResult](events) {
		if r.ToolUseID == "call_o2" {
			result = r.Text
		}
	}
	if !strings.Contains(result, `picked {"target":7}`) {
		t.Fatalf("MCP result %q", result)
	}
	start := payloads[*trajectory.SessionStart](events)[0]
	for _, ti := range start.Tools {
		switch {
		case ti.Name == "mcp__shapes__pick" && !strings.Contains(ti.NonStrict, "oneOf"):
			t.Fatalf("catalog entry %+v: want the non-strict decision naming the oneOf", ti)
		case ti.Name != "mcp__shapes__pick" && ti.NonStrict != "":
			t.Fatalf("built-in %s recorded as non-strict: %s", ti.Name, ti.NonStrict)
		}
	}
}

// Without the per-tool decision the same session fails before its first
// request: the one oneOf stops every request, which is what the test
// above would catch if the decision went missing.
func TestWithoutThePerToolDecisionTheOneOfStopsEveryRequest(t *testing.T) {
	res, _, _ := runOpenAIResponses(t, llm.Options{ToolSchema: dialect.OpenAIStrict, StrictTools: true})
	var se *llm.ToolSchemaError
	if res.Reason != trajectory.EndError || !errors.As(res.Err, &se) || se.Tool != "mcp__shapes__pick" {
		t.Fatalf("ended %s (%v); want the oneOf tool's schema error", res.Reason, res.Err)
	}
}

// Sending the oneOf as strict anyway is what the API refuses; the mock
// LLM answers it with the same 400, so the wire check above is not
// trivially satisfied.
func TestTheMockRefusesAOneOfSentStrict(t *testing.T) {
	// The built-ins are rewritten as usual; the refused schema goes as is.
	sendAnyway := func(s json.RawMessage) (json.RawMessage, error) {
		if out, err := dialect.OpenAIStrict(s); err == nil {
			return out, nil
		}
		return s, nil
	}
	res, _, _ := runOpenAIResponses(t, llm.Options{ToolSchema: sendAnyway, StrictTools: true})
	var le *llm.Error
	if res.Reason != trajectory.EndError || !errors.As(res.Err, &le) || le.StatusCode != http.StatusBadRequest {
		t.Fatalf("ended %s (%v); want a 400 from the mock", res.Reason, res.Err)
	}
}

// A late server's tool with a oneOf: the per-tool decision is recorded
// in the mcp_server event that adds it, since session_start's catalog
// never saw it, and the call works over the Responses wire.
func TestALateOneOfToolRecordsItsNonStrictDecision(t *testing.T) {
	url, open := heldServerWith(t, `{"type":"object","properties":{"text":{"oneOf":[{"type":"string"},{"type":"integer"}]}},"required":["text"]}`)
	script, err := mockllm.LoadScript(filepath.Join("testdata", "mcp_late.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base := startMock(t, script)
	prov, err := llm.NewOpenAIResponses(llm.Options{BaseURL: base + "/v1", APIKey: "test-key", Model: "mock-1", MaxRetries: -1,
		ToolSchema: dialect.OpenAIStrict, StrictTools: true, NonStrictSchema: dialect.OpenAI})
	if err != nil {
		t.Fatal(err)
	}
	var servers *mcp.Servers
	var buf bytes.Buffer
	rec := recorder.New(&buf, recorder.Options{})
	cfg := baseConfig(t, t.TempDir(), script, rec, gateTool{open: open, servers: &servers})
	cfg.Provider, cfg.Model = prov, "mock-1"
	reg := cfg.Executor.Env.Registry()
	lifecycle := mcp.NewLifecycle(reg, func(msg string) { t.Errorf("lifecycle: %s", msg) })
	servers, err = mcp.Connect(t.Context(), []mcp.Config{{Name: "late", URL: url}}, mcp.Options{OnEvent: lifecycle.OnEvent})
	if err != nil {
		t.Fatal(err)
	}
	defer servers.Close()
	reg.SetPending(servers.Pending)
	cfg.MCPEvents = lifecycle.Drain
	res, evs := runRecorded(t, cfg, rec, &buf)
	if res.Reason != trajectory.EndTurn {
		t.Fatalf("ended %s (%v)", res.Reason, res.Err)
	}
	var added *trajectory.MCPServer
	for _, ev := range payloads[*trajectory.MCPServer](evs) {
		if len(ev.Added) > 0 {
			added = ev
		}
	}
	if added == nil || !strings.Contains(added.NonStrictTools["mcp__late__echo"], "oneOf") {
		t.Fatalf("the event that added the late tool: %+v; want its non-strict decision naming the oneOf", added)
	}
}
