package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// newTestEnv returns an Env on a fresh temporary workspace with the
// built-in tools registered.
func newTestEnv(t testing.TB) *Env {
	t.Helper()
	reg, err := NewRegistry(Builtins()...)
	if err != nil {
		t.Fatalf("NewRegistry(Builtins()...): %v", err)
	}
	env, err := NewEnv(t.TempDir(), reg)
	if err != nil {
		t.Fatalf("NewEnv: %v", err)
	}
	return env
}

// mustJSON marshals v for a tool's input.
func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal input: %v", err)
	}
	return b
}

// run calls tool with input as the executor would and applies the
// result's Modify; a returned error fails the test.
func run(t testing.TB, tool Tool, env *Env, input any) Result {
	t.Helper()
	res, err := tool.Run(context.Background(), env, mustJSON(t, input))
	if err != nil {
		t.Fatalf("%s.Run returned an error (an exception): %v", tool.Spec().Name, err)
	}
	if res.ErrorCode != "" && !trajectory.IsLabel(res.ErrorCode) {
		t.Errorf("%s: ErrorCode %q is not a label", tool.Spec().Name, res.ErrorCode)
	}
	if res.IsError && res.ErrorCode == "" {
		t.Errorf("%s: an error result without an ErrorCode: %q", tool.Spec().Name, res.Output)
	}
	if res.Modify != nil {
		res.Modify(env)
	}
	return res
}

// writeFile creates a file below dir, with parents, and returns its path.
func writeFile(t testing.TB, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readBack(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func contextWithCancel(t testing.TB) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx, cancel
}
