package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/trajectory"
)

// connect starts servers and waits for all of them to settle.
func connect(t testing.TB, cfgs ...Config) *Servers {
	t.Helper()
	s, err := Connect(t.Context(), cfgs, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := s.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return s
}

// byName finds a tool by its model-side name.
func byName(t testing.TB, ts []tools.Tool, name string) tools.Tool {
	t.Helper()
	for _, tool := range ts {
		if tool.Spec().Name == name {
			return tool
		}
	}
	t.Fatalf("no tool %s among %v", name, names(ts))
	return nil
}

func names(ts []tools.Tool) []string {
	var out []string
	for _, tool := range ts {
		out = append(out, tool.Spec().Name)
	}
	return out
}

func TestStdioServerToolsAreOrdinaryTools(t *testing.T) {
	s := connect(t, helperConfig(t, "my helper!", nil))
	if f := s.Failures(); len(f) != 0 {
		t.Fatalf("Failures() = %v, want none", f)
	}
	ts := s.Tools()
	got := names(ts)
	if !slices.IsSorted(got) {
		t.Errorf("tools are not sorted by name: %v", got)
	}
	for _, want := range []string{"mcp__my_helper__echo", "mcp__my_helper__fail", "mcp__my_helper__read_file", "mcp__my_helper__verbose"} {
		if !slices.Contains(got, want) {
			t.Errorf("tool %s missing from %v", want, got)
		}
	}
	if _, err := tools.NewRegistry(ts...); err != nil {
		t.Fatalf("the registry refuses the MCP tools: %v", err)
	}
	for _, tool := range ts {
		sp := tool.Spec()
		if !trajectory.IsToolName(sp.Name) {
			t.Errorf("%s does not match ^[a-zA-Z0-9_-]{1,64}$", sp.Name)
		}
		if sp.Source != trajectory.ToolMCP || !sp.Deferred || sp.ResultTokens != MaxOutputTokens {
			t.Errorf("%s: Source %q Deferred %v ResultTokens %d, want mcp, true, %d", sp.Name, sp.Source, sp.Deferred, sp.ResultTokens, MaxOutputTokens)
		}
		if n := len([]rune(sp.Description)); n > MaxDescription {
			t.Errorf("%s: description has %d characters, over %d", sp.Name, n, MaxDescription)
		}
	}
	echo := byName(t, ts, "mcp__my_helper__echo")
	if !echo.Spec().ReadOnly || !echo.ConcurrencySafe(nil) {
		t.Error("echo says readOnlyHint, but is not read-only and concurrency-safe")
	}
	fail := byName(t, ts, "mcp__my_helper__fail")
	if fail.Spec().ReadOnly || fail.ConcurrencySafe(nil) {
		t.Error("fail has no readOnlyHint, but is read-only or concurrency-safe")
	}
	// "read.file" and "read_file" normalise alike: the one that is already
	// valid keeps its name, the other gets a hash suffix.
	dotted := ToolName("my helper!", "read.file")
	var hashed string
	for _, n := range got {
		if strings.HasPrefix(n, dotted+"_") {
			hashed = n
		}
	}
	if hashed == "" {
		t.Fatalf("no hash-suffixed name for read.file among %v", got)
	}
	for name, want := range map[string]string{"mcp__my_helper__read_file": "underscored", hashed: "dotted"} {
		res, err := byName(t, ts, name).Run(t.Context(), nil, json.RawMessage(`{}`))
		if err != nil || res.Output != want {
			t.Errorf("%s returned %q, %v; want %q", name, res.Output, err, want)
		}
	}
	long := ToolName("my helper!", longToolName)
	if len(long) != 64 {
		t.Errorf("long name %s has %d characters, want 64", long, len(long))
	}
	byName(t, ts, long)
}

func TestStdioCalls(t *testing.T) {
	s := connect(t, helperConfig(t, "h", nil))
	ts := s.Tools()
	tests := []struct {
		name      string
		tool      string
		input     string
		wantOut   string
		wantError bool
		wantCode  string
	}{
		{"a call round trip returns the server's text", "mcp__h__echo", `{"text":"hi"}`, "echo: hi", false, ""},
		{"a result flagged isError is a tool error with code mcp_error", "mcp__h__fail", `{}`, "disk full", true, CodeError},
		{"an image is replaced by a placeholder, not dropped", "mcp__h__picture", `{}`, "[image omitted: image/png", false, ""},
		{"a caption beside an image is kept", "mcp__h__picture", `{}`, "a caption", false, ""},
		{"a call with no input sends an empty object", "mcp__h__fail", ``, "disk full", true, CodeError},
		{"a call the server rejects is a tool error the model can fix", "mcp__h__echo", `{"text":5}`, "rejected the call", true, CodeError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := byName(t, ts, tc.tool).Run(t.Context(), nil, json.RawMessage(tc.input))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !strings.Contains(res.Output, tc.wantOut) || res.IsError != tc.wantError || res.ErrorCode != tc.wantCode {
				t.Errorf("got %+v; want output containing %q, IsError %v, code %q", res, tc.wantOut, tc.wantError, tc.wantCode)
			}
		})
	}
}

func TestBigOutputIsLeftToTheExecutorLimit(t *testing.T) {
	s := connect(t, helperConfig(t, "h", nil))
	tool := byName(t, s.Tools(), "mcp__h__big")
	res, err := tool.Run(t.Context(), nil, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if n := tools.EstimateTokens(res.Output); n <= tool.Spec().ResultTokens {
		t.Errorf("output has %d estimated tokens; the test needs more than the limit %d", n, tool.Spec().ResultTokens)
	}
	if ResultLimit != MaxOutputTokens*4 {
		t.Errorf("ResultLimit = %d, want 25 000 tokens at 4 characters each", ResultLimit)
	}
}

func TestSlowToolHitsTheCallTimeout(t *testing.T) {
	cfg := helperConfig(t, "h", nil)
	cfg.Timeout = 200 * time.Millisecond
	s := connect(t, cfg)
	res, err := byName(t, s.Tools(), "mcp__h__slow").Run(t.Context(), nil, json.RawMessage(`{}`))
	if err != nil {
		t.Fatalf("Run: %v; a timeout should be a tool error the model can act on", err)
	}
	if !res.IsError || res.ErrorCode != CodeTimeout || !strings.Contains(res.Output, `"h"`) {
		t.Errorf("got %+v; want a %s tool error naming the server", res, CodeTimeout)
	}
	// The server still answers after a timed-out call.
	res, err = byName(t, s.Tools(), "mcp__h__echo").Run(t.Context(), nil, json.RawMessage(`{"text":"again"}`))
	if err != nil || res.Output != "echo: again" {
		t.Errorf("echo after a timeout: %+v, %v", res, err)
	}
}

func TestAbortCancelsACallAsAnException(t *testing.T) {
	s := connect(t, helperConfig(t, "h", nil))
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := byName(t, s.Tools(), "mcp__h__slow").Run(ctx, nil, json.RawMessage(`{}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run after abort returned %v, want context.Canceled", err)
	}
}

func TestFailedServersAreReportedAndOthersWork(t *testing.T) {
	s := connect(t,
		Config{Name: "missing", Command: filepath.Join(t.TempDir(), "no-such-server")},
		Config{Name: "crashing", Command: "/bin/sh", Args: []string{"-c", "echo 'cannot open database' >&2; exit 3"}},
		helperConfig(t, "good", nil),
	)
	failures := s.Failures()
	var failed []string
	for _, f := range failures {
		failed = append(failed, f.Server)
		if !strings.Contains(f.Error(), `mcp server "`+f.Server+`"`) {
			t.Errorf("failure %q does not name its server", f)
		}
	}
	if !slices.Equal(failed, []string{"missing", "crashing"}) {
		t.Fatalf("failed servers = %v, want [missing crashing]", failed)
	}
	if !strings.Contains(failures[1].Error(), "cannot open database") {
		t.Errorf("crash report %q does not include the server's stderr", failures[1])
	}
	if len(s.Pending()) != 0 {
		t.Errorf("Pending() = %v after Wait", s.Pending())
	}
	res, err := byName(t, s.Tools(), "mcp__good__echo").Run(t.Context(), nil, json.RawMessage(`{"text":"still here"}`))
	if err != nil || res.Output != "echo: still here" {
		t.Errorf("the good server does not work: %+v, %v", res, err)
	}
	for _, n := range names(s.Tools()) {
		if !strings.HasPrefix(n, "mcp__good__") {
			t.Errorf("tool %s from a failed server", n)
		}
	}
}

func TestPendingWhileConnecting(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	s, err := Connect(t.Context(), []Config{
		helperConfig(t, "gated", map[string]string{gateEnv: gate}),
		helperConfig(t, "quick", nil),
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The quick server connects while the gated one cannot.
	for !slices.Contains(names(s.Tools()), "mcp__quick__echo") {
		if t.Context().Err() != nil {
			t.Fatal("the quick server never connected")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.Pending(); !slices.Equal(got, []string{"gated"}) {
		t.Errorf("Pending() = %v while gated is held, want [gated]", got)
	}
	for _, n := range names(s.Tools()) {
		if strings.HasPrefix(n, "mcp__gated__") {
			t.Errorf("tool %s listed before its server connected", n)
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := s.Pending(); len(got) != 0 {
		t.Errorf("Pending() = %v after Wait, want none", got)
	}
	byName(t, s.Tools(), "mcp__gated__echo")
}

func TestCloseEndsAConnectingServer(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "never")
	s, err := Connect(t.Context(), []Config{helperConfig(t, "gated", map[string]string{gateEnv: gate})}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if len(s.Pending()) != 0 || len(s.Failures()) != 1 {
		t.Errorf("after Close: Pending %v, Failures %v; want none pending and one failure", s.Pending(), s.Failures())
	}
}

func TestBrokenConnectionIsAnExceptionNamingTheServer(t *testing.T) {
	s := connect(t, helperConfig(t, "h", nil))
	echo := byName(t, s.Tools(), "mcp__h__echo")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := echo.Run(t.Context(), nil, json.RawMessage(`{"text":"x"}`))
	if err == nil || !strings.Contains(err.Error(), `mcp server "h"`) {
		t.Errorf("Run on a closed server returned %v, want an error naming server h", err)
	}
}

func TestStreamableHTTPServerWithHeaders(t *testing.T) {
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return helperServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer secret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	no := false
	s := connect(t,
		Config{Name: "web", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer secret"}, Deferred: &no},
		Config{Name: "nokey", URL: srv.URL, Deferred: &no},
	)
	// Before srv.Close, which waits for the session's event stream.
	defer s.Close()
	if f := s.Failures(); len(f) != 1 || f[0].Server != "nokey" {
		t.Errorf("Failures() = %v, want only nokey (sent no Authorization header)", f)
	}
	echo := byName(t, s.Tools(), "mcp__web__echo")
	if echo.Spec().Deferred {
		t.Error("deferred: false in the config, but the tool is deferred")
	}
	res, err := echo.Run(t.Context(), nil, json.RawMessage(`{"text":"over http"}`))
	if err != nil || res.Output != "echo: over http" {
		t.Errorf("HTTP round trip: %+v, %v", res, err)
	}
}

// TestFilesystemServer runs the reference server from npm, when it is
// already installed (globally: `npm install -g
// @modelcontextprotocol/server-filesystem`, or in npx's cache): the test
// never downloads anything.
func TestFilesystemServer(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from disk"), 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg Config
	if bin, err := exec.LookPath("mcp-server-filesystem"); err == nil {
		cfg = Config{Name: "fs", Command: bin, Args: []string{dir}}
	} else if npx, err := exec.LookPath("npx"); err == nil {
		cfg = Config{Name: "fs", Command: npx, Args: []string{"--offline", "--yes", "@modelcontextprotocol/server-filesystem", dir},
			Env: map[string]string{"npm_config_offline": "true", "npm_config_update_notifier": "false"}}
	} else {
		t.Skip("neither mcp-server-filesystem nor npx is on PATH; skipping the @modelcontextprotocol/server-filesystem test")
	}
	s, err := Connect(t.Context(), []Config{cfg}, Options{ConnectTimeout: 8 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if f := s.Failures(); len(f) > 0 {
		t.Skipf("@modelcontextprotocol/server-filesystem is not installed or did not start offline within 8s (%v); install it with npm to run this test", f[0])
	}
	ts := s.Tools()
	if _, err := tools.NewRegistry(ts...); err != nil {
		t.Fatalf("the registry refuses the filesystem tools: %v", err)
	}
	res, err := byName(t, ts, "mcp__fs__read_text_file").Run(t.Context(), nil,
		json.RawMessage(`{"path":`+string(must(json.Marshal(filepath.Join(dir, "hello.txt"))))+`}`))
	if err != nil || !strings.Contains(res.Output, "hello from disk") {
		t.Errorf("read_text_file: %+v, %v", res, err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func BenchmarkStdioCall(b *testing.B) {
	s := connect(b, helperConfig(b, "h", nil))
	echo := byName(b, s.Tools(), "mcp__h__echo")
	in := json.RawMessage(`{"text":"bench"}`)
	ctx := context.Background()
	start := time.Now()
	for b.Loop() {
		if _, err := echo.Run(ctx, nil, in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}
