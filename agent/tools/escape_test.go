package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tools refuse writes outside the workspace themselves, whatever the
// caller checked, and open the file the kernel would reach (package
// workspace), not the lexically cleaned path.
func TestToolsOpenTheResolvedFileAndNeverWriteOutside(t *testing.T) {
	env := newTestEnv(t)
	ws := env.Workspace()
	outside := filepath.Join(filepath.Dir(ws), "outside")
	for _, d := range []string{filepath.Join(ws, "d1", "d2"), filepath.Join(ws, "outside"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, ws, "outside/x", "inside\n")
	writeFile(t, outside, "x", "outside\n")
	for name, target := range map[string]string{"l": "d1/d2", "escape": outside, "dangling": filepath.Join(outside, "new")} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	if res := run(t, ReadTool{}, env, map[string]any{"file_path": "l/../../outside/x"}); res.IsError || !strings.Contains(res.Output, "inside") {
		t.Errorf("read l/../../outside/x = %q, want the workspace's outside/x", res.Output)
	}
	if res := run(t, LsTool{}, env, map[string]any{"path": "l/../../outside"}); res.IsError || res.Output != "x\n" {
		t.Errorf("ls l/../../outside = %q, want the workspace's outside directory", res.Output)
	}
	for _, p := range []string{"../outside/x", filepath.Join(outside, "x"), "escape/x", "escape/new", "dangling", "l/../../../outside/x"} {
		res := run(t, WriteTool{}, env, map[string]any{"file_path": p, "content": "pwned\n"})
		if !res.IsError || res.ErrorCode != "outside_workspace" || !strings.Contains(res.Output, "outside the workspace") {
			t.Errorf("write %s = %+v, want an outside_workspace refusal", p, res)
		}
		env.MarkRead(filepath.Join(outside, "x"))
		res = run(t, EditTool{}, env, map[string]any{"file_path": p, "old_string": "outside", "new_string": "pwned"})
		if !res.IsError || res.ErrorCode != "outside_workspace" {
			t.Errorf("edit %s = %+v, want an outside_workspace refusal", p, res)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "x")); string(b) != "outside\n" {
		t.Errorf("the file outside was changed to %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Error("a file was created outside through a link")
	}
	if res := run(t, WriteTool{}, env, map[string]any{"file_path": "l/../../outside/x", "content": "new\n"}); res.IsError {
		t.Errorf("write l/../../outside/x (inside for the kernel) = %q", res.Output)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "outside", "x")); string(b) != "new\n" {
		t.Errorf("the workspace's outside/x holds %q, want the write", b)
	}
}

func TestAPathWithTildeIsNotExpandedAndTheModelIsToldSo(t *testing.T) {
	env := newTestEnv(t)
	res := run(t, ReadTool{}, env, map[string]any{"file_path": "~/notes.txt"})
	if !res.IsError || res.ErrorCode != "ENOENT" || !strings.Contains(res.Output, "~ is not expanded") {
		t.Errorf("read ~/notes.txt = %+v, want ENOENT saying ~ is not expanded", res)
	}
}
