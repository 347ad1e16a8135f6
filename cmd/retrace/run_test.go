package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/scenarios"
	"github.com/retrace-dev/retrace/trajectory"
)

func TestRunWithNoArgumentsPlaysTheDemoAndRecordsAValidTrajectory(t *testing.T) {
	runs := t.TempDir()
	code, stdout, stderr := runCLI(t, map[string]string{"RETRACE_DIR": runs}, "run")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	for _, want := range []string{"retrace demo", "⏺ read calc.go", "⏺ edit calc.go · ok", "rm -rf build · permission_denied", "ended: end_turn after 4 turns", "trajectory: " + runs} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the live transcript lacks %q:\n%s", want, stderr)
		}
	}
	files, err := trajectory.Expand(runs)
	if err != nil || len(files) != 1 {
		t.Fatalf("runs %v (%v)", files, err)
	}
	rep, err := trajectory.ValidateFile(files[0])
	if err != nil || len(rep.Problems) != 0 || len(rep.Warnings) != 0 {
		t.Fatalf("the demo's trajectory: problems %v, warnings %v (%v)", rep.Problems, rep.Warnings, err)
	}
	// The workspace snapshot, recorded right after session_start, restores
	// the demo workspace as it was before the agent fixed the bug.
	r, err := trajectory.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if ev, err := r.Next(); err != nil || ev.Type() != trajectory.TypeSessionStart {
		t.Fatalf("the first event is %v (%v), want session_start", ev.Type(), err)
	}
	ev, err := r.Next()
	snap, ok := ev.Payload.(*trajectory.WorkspaceSnapshot)
	if err != nil || !ok || snap.Manifest == "" || snap.Files == 0 {
		t.Fatalf("the second event %+v (%v) is no workspace snapshot", ev.Payload, err)
	}
	dst := filepath.Join(t.TempDir(), "restored")
	if err := recorder.RestoreWorkspace(recorder.OpenBlobs(recorder.BlobsDir(files[0])), snap.Manifest, dst); err != nil {
		t.Fatal(err)
	}
	demo, err := scenarios.BuiltinScenario(demoScenario)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"README.md", "calc.go"} {
		want, ok := demo.Files[name]
		if !ok {
			t.Fatalf("the demo scenario has no workspace/%s", name)
		}
		if got, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(got) != string(want) {
			t.Errorf("restored %s = %q (%v), want the original %q", name, got, err, want)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "calc.go")); !strings.Contains(string(got), "a - b") {
		t.Errorf("restored calc.go lacks the original bug:\n%s", got)
	}
}

func TestRunWithAScriptWorksInTheGivenWorkspace(t *testing.T) {
	ws, runs := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "README.md"), []byte("# a project\n"), 0o644)
	code, _, stderr := runCLI(t, nil, "run", "--script", "../../mockllm/testdata/read_then_answer.yaml",
		"--workspace", ws, "--runs", runs, "--headless", "What does the README say?")
	if code != ExitOK || !strings.Contains(stderr, "⏺ read README.md · ok") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	files, _ := trajectory.Expand(runs)
	if rep, err := trajectory.ValidateFile(files[0]); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("problems %v (%v)", rep.Problems, err)
	}
}

func TestRunStoppedByItsTurnLimitExitsInconclusive(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "README.md"), []byte("# a project\n"), 0o644)
	code, _, stderr := runCLI(t, nil, "run", "--script", "../../mockllm/testdata/read_then_answer.yaml",
		"--workspace", ws, "--runs", t.TempDir(), "--headless", "--max-turns", "1", "Read the README")
	if code != ExitInconclusive || !strings.Contains(stderr, "ended: max_turns") {
		t.Fatalf("exit %d, want 4\n%s", code, stderr)
	}
}

func TestRunRejectsBadInvocationsWithExitTwo(t *testing.T) {
	ws := t.TempDir()
	bad := filepath.Join(ws, "retrace.yaml")
	os.WriteFile(bad, []byte("permissions:\n  alow: [Read]\n"), 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a prompt without a model", []string{"run", "do it"}, "exactly one model"},
		{"two models", []string{"run", "--script", "x.yaml", "--provider", "anthropic", "do it"}, "exactly one model"},
		{"a provider without a model name", []string{"run", "--provider", "anthropic", "do it"}, "--provider needs --model"},
		{"an unknown provider", []string{"run", "--provider", "gemini", "--model", "m", "do it"}, "not supported"},
		{"a config with an unknown key", []string{"run", "--script", "../../mockllm/testdata/read_then_answer.yaml", "--workspace", ws, "--runs", t.TempDir(), "do it"}, "alow"},
		{"a missing script", []string{"run", "--script", filepath.Join(ws, "none.yaml"), "do it"}, "none.yaml"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, nil, c.args...)
			if code != ExitInvalid || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d stderr %q; want 2 and %q", code, stderr, c.want)
			}
		})
	}
}

func TestRunConnectsTheConfiguredMCPServers(t *testing.T) {
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server {
		s := sdk.NewServer(&sdk.Implementation{Name: "notes", Version: "1"}, nil)
		s.AddTool(&sdk.Tool{Name: "echo", Description: "Echoes the text back.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echoed"}}}, nil
			})
		return s
	}, nil))
	defer srv.Close()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "retrace.yaml"), []byte("permissions:\n  mode: bypass\nmcp_servers:\n  - name: notes\n    url: "+srv.URL+"\n    deferred: false\n"), 0o644)
	script := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(script, []byte("turns:\n  - content: [{tool_use: {id: toolu_1, name: mcp__notes__echo, input: {text: hi}}}]\n  - content: [{text: done}]\n"), 0o644)
	code, _, stderr := runCLI(t, nil, "run", "--script", script, "--workspace", ws, "--runs", t.TempDir(), "--headless", "--trust-workspace", "Echo hi")
	if code != ExitOK || !strings.Contains(stderr, "⏺ mcp__notes__echo") || !strings.Contains(stderr, "· ok ·") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
}
