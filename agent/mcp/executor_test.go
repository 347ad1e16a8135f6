package mcp

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/agent/hooks"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// TestExecutorRunsMCPToolsLikeAnyOther runs MCP tools through the real
// executor: the big output is truncated to MaxOutputTokens and spilled, and a
// server-side failure comes back as an ordinary tool error.
func TestExecutorRunsMCPToolsLikeAnyOther(t *testing.T) {
	s := connect(t, helperConfig(t, "h", nil))
	reg, err := tools.NewRegistry(s.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	reg.Activate("mcp__h__big", "mcp__h__fail", "mcp__h__echo")
	env, err := tools.NewEnv(t.TempDir(), reg)
	if err != nil {
		t.Fatal(err)
	}
	perm, err := permission.New(permission.Config{Allow: []string{"mcp__h__big", "mcp__h__fail", "mcp__h__echo"}}, env.Workspace())
	if err != nil {
		t.Fatal(err)
	}
	blobs := filepath.Join(t.TempDir(), "blobs")
	ex, err := executor.New(executor.Config{Env: env, Permission: perm, Sink: recorder.New(io.Discard, recorder.Options{}), Blobs: recorder.OpenBlobs(blobs)})
	if err != nil {
		t.Fatal(err)
	}
	use := func(id, name, input string) trajectory.ContentBlock {
		return trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: id, Name: name, Input: []byte(input)}
	}
	results := ex.Execute(t.Context(), 1, []trajectory.ContentBlock{
		use("toolu_1", "mcp__h__big", `{}`),
		use("toolu_2", "mcp__h__fail", `{}`),
		use("toolu_3", "mcp__h__echo", `{"text":"hi"}`),
	})
	if len(results) != 3 {
		t.Fatalf("got %d results, want 3", len(results))
	}
	big, fail, echo := results[0], results[1], results[2]
	if big.IsError || !strings.Contains(big.Content, "Output truncated") || len([]rune(big.Content)) > ResultLimit+1000 {
		t.Errorf("big output was not truncated to about %d characters: error %v, %d characters", ResultLimit, big.IsError, len([]rune(big.Content)))
	}
	if !fail.IsError || !strings.Contains(fail.Content, "disk full") {
		t.Errorf("fail: %+v, want a tool error saying disk full", fail)
	}
	// An MCP server is an outside source: the model gets its output
	// marked as untrusted content.
	if echo.IsError || echo.Content != "<untrusted-content source=\"mcp__h__echo\">\necho: hi\n</untrusted-content>" {
		t.Errorf("echo: %+v", echo)
	}
}

// An MCP tool's PostToolUse hook gets the whole raw output, though the
// model gets it truncated; a built-in tool's hook gets what the model
// gets. The hook saves its stdin, so the test reads what it was given.
func TestPostToolUseHooksOfMCPToolsGetTheRawOutput(t *testing.T) {
	s := connect(t, helperConfig(t, "h", nil))
	reg, err := tools.NewRegistry(append(tools.Builtins(), s.Tools()...)...)
	if err != nil {
		t.Fatal(err)
	}
	reg.Activate("mcp__h__big")
	ws := t.TempDir()
	env, err := tools.NewEnv(ws, reg)
	if err != nil {
		t.Fatal(err)
	}
	perm, err := permission.New(permission.Config{Mode: trajectory.PermBypass, Home: t.TempDir()}, env.Workspace())
	if err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(t.TempDir(), "stdin")
	hr, err := hooks.New([]hooks.Config{
		{Name: "audit_mcp", Event: hooks.EventPostToolUse, Matcher: "mcp__h__big", Command: "cat > " + saved + ".mcp__h__big"},
		{Name: "audit_bash", Event: hooks.EventPostToolUse, Matcher: "bash", Command: "cat > " + saved + ".bash"},
	}, ws)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := executor.New(executor.Config{Env: env, Permission: perm, Hooks: hr, Sink: recorder.New(io.Discard, recorder.Options{}),
		Blobs: recorder.OpenBlobs(filepath.Join(t.TempDir(), "blobs"))})
	if err != nil {
		t.Fatal(err)
	}
	results := ex.Execute(t.Context(), 1, []trajectory.ContentBlock{
		{Type: trajectory.BlockToolUse, ID: "toolu_1", Name: "mcp__h__big", Input: []byte(`{}`)},
		{Type: trajectory.BlockToolUse, ID: "toolu_2", Name: "bash", Input: []byte(`{"command":"head -c 60000 /dev/zero | tr '\\0' y"}`)},
	})
	for _, r := range results {
		if r.IsError || !strings.Contains(r.Content, "Output truncated") {
			t.Fatalf("%s: the model must get a truncated output: %.200s", r.ToolUseID, r.Content)
		}
	}
	given := func(tool string) string {
		data, err := os.ReadFile(saved + "." + tool)
		if err != nil {
			t.Fatalf("the hook of %s did not run: %v", tool, err)
		}
		var in struct {
			ToolResponse struct{ Output string } `json:"tool_response"`
		}
		if err := json.Unmarshal(data, &in); err != nil {
			t.Fatal(err)
		}
		return in.ToolResponse.Output
	}
	if raw := given("mcp__h__big"); raw != strings.Repeat("x", 3*ResultLimit/2) {
		t.Errorf("the MCP tool's hook got %d characters (truncated: %v); want the raw %d", len(raw), strings.Contains(raw, "Output truncated"), 3*ResultLimit/2)
	}
	if shaped := given("bash"); !strings.Contains(shaped, "Output truncated") {
		t.Errorf("the built-in tool's hook got %d characters without the truncation notice; want what the model sees", len(shaped))
	}
}

// The limit counts estimated tokens, not characters: 60,000 Chinese
// characters (about 30,000 tokens) are truncated although a 100,000
// character limit would let them through, and 90,000 ASCII characters
// (22,500 tokens) reach the model whole.
func TestMCPOutputIsLimitedInTokensNotCharacters(t *testing.T) {
	s := connect(t, helperConfig(t, "h", nil))
	reg, err := tools.NewRegistry(s.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	reg.Activate("mcp__h__chinese", "mcp__h__english")
	env, err := tools.NewEnv(t.TempDir(), reg)
	if err != nil {
		t.Fatal(err)
	}
	perm, err := permission.New(permission.Config{Mode: trajectory.PermBypass, Home: t.TempDir()}, env.Workspace())
	if err != nil {
		t.Fatal(err)
	}
	ex, err := executor.New(executor.Config{Env: env, Permission: perm, Sink: recorder.New(io.Discard, recorder.Options{}),
		Blobs: recorder.OpenBlobs(filepath.Join(t.TempDir(), "blobs"))})
	if err != nil {
		t.Fatal(err)
	}
	results := ex.Execute(t.Context(), 1, []trajectory.ContentBlock{
		{Type: trajectory.BlockToolUse, ID: "toolu_1", Name: "mcp__h__chinese", Input: []byte(`{}`)},
		{Type: trajectory.BlockToolUse, ID: "toolu_2", Name: "mcp__h__english", Input: []byte(`{}`)},
	})
	zh, en := results[0].Content, results[1].Content
	if !strings.Contains(zh, "Output truncated") || !strings.Contains(zh, "The limit is 25000 estimated tokens; the output is about 30000.") {
		t.Errorf("60,000 Chinese characters were not truncated by tokens: %.300s", zh[max(0, len(zh)-400):])
	}
	if n := tools.EstimateTokens(zh); n > MaxOutputTokens+100 {
		t.Errorf("the truncated Chinese output is %d estimated tokens, over the %d budget", n, MaxOutputTokens)
	}
	if strings.Contains(en, "Output truncated") || !strings.Contains(en, strings.Repeat("word ", 18000)) {
		t.Errorf("90,000 ASCII characters (22,500 tokens) were truncated")
	}
}
