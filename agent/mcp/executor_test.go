package mcp

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// TestExecutorRunsMCPToolsLikeAnyOther runs MCP tools through the real
// executor: the big output is truncated by ResultLimit and spilled, and a
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
	// marked as untrusted content (seed §8.6).
	if echo.IsError || echo.Content != "<untrusted-content source=\"mcp__h__echo\">\necho: hi\n</untrusted-content>" {
		t.Errorf("echo: %+v", echo)
	}
}
