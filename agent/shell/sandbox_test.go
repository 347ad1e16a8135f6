package shell

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestCorpusReadOnlyCommandsChangeNothing runs every read_only corpus
// command with real bash in a throwaway workspace, with HOME pointed at a
// throwaway directory and, where unshare works, without a network, and
// checks that neither tree changed. It verifies the labels, not Analyze:
// a label that is wrong about a command that writes fails here.
func TestCorpusReadOnlyCommandsChangeNothing(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	var prefix []string
	if u, err := exec.LookPath("unshare"); err == nil && exec.Command(u, "-n", "true").Run() == nil {
		prefix = []string{u, "-n"}
	} else {
		t.Log("unshare -n is not available: commands run with the network (none of them should use it)")
	}
	rows := loadCorpus(t)
	ws, home := t.TempDir(), t.TempDir()
	makeSandbox(t, ws, home)
	before := treeHash(t, ws) + treeHash(t, home)
	run := func(command string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		args := append(append([]string{}, prefix...), bash, "--noprofile", "--norc", "-c", command)
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir = ws
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig")}
		cmd.WaitDelay = time.Second
		_ = cmd.Run() // a failing command is fine; a changing one is not
	}
	// The check must be able to fail: a write in the workspace, a mode
	// change, a write in HOME and a change of what git has staged are each
	// seen, and undone.
	for _, probe := range []struct{ do, undo string }{
		{"echo x >> a.txt", "printf 'hello world\\nfoo 3\\nbar 5\\n' > a.txt"},
		{"chmod 600 b.txt", "chmod 644 b.txt"},
		{"touch ~/new", "rm ~/new"},
		{"git rm -q --cached a.go", "git add a.go"},
	} {
		run(probe.do)
		if treeHash(t, ws)+treeHash(t, home) == before {
			t.Fatalf("the sandbox check did not see %q change anything", probe.do)
		}
		run(probe.undo)
		if treeHash(t, ws)+treeHash(t, home) != before {
			t.Fatalf("undoing %q with %q did not restore the sandbox", probe.do, probe.undo)
		}
	}
	ran := 0
	for _, r := range rows {
		if r.Label != "read_only" {
			continue
		}
		ran++
		run(r.Cmd)
		if after := treeHash(t, ws) + treeHash(t, home); after != before {
			t.Errorf("%q (labelled read_only: %s) changed the sandbox", r.Cmd, r.Reason)
			os.RemoveAll(ws)
			os.RemoveAll(home)
			os.MkdirAll(ws, 0o755)
			os.MkdirAll(home, 0o755)
			makeSandbox(t, ws, home)
			before = treeHash(t, ws) + treeHash(t, home)
		}
	}
	if ran < 100 {
		t.Fatalf("only %d read_only commands ran; the corpus should have more", ran)
	}
}

// makeSandbox writes the files the corpus commands name, and a git
// repository with one commit.
func makeSandbox(t *testing.T, ws, home string) {
	t.Helper()
	files := map[string]string{
		"a.txt": "hello world\nfoo 3\nbar 5\n", "b.txt": "hello there\nfoo 4\n", "sub/c.txt": "c\n",
		"data.json": `{"name":"x","items":[1,2]}`, "b64.txt": "aGVsbG8K\n", "a.go": "package a\n",
		"-weird": "weird\n",
	}
	for name, body := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{".profile": "# profile\n", ".bashrc": "# rc\n", ".gitconfig": "[user]\n\tname = t\n\temail = t@example.com\n"} {
		if err := os.WriteFile(filepath.Join(home, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if tar, err := exec.LookPath("tar"); err == nil {
		c := exec.Command(tar, "-cf", "a.tar", "a.txt")
		c.Dir = ws
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("tar: %v: %s", err, out)
		}
	}
	if git, err := exec.LookPath("git"); err == nil {
		for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-qm", "init"}, {"status"}} {
			c := exec.Command(git, args...)
			c.Dir = ws
			c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"}
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v: %s", args, err, out)
			}
		}
	}
}

// treeHash hashes every entry under root: path, type, mode, size,
// content and link target. Access times are left out: reading changes
// them.
func treeHash(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := rel + " " + info.Mode().String()
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case rel == filepath.Join(".git", "index"):
			// git status refreshes the stat cache in the index (racily
			// clean entries are rewritten), which changes no content: what
			// counts is the staged content, as git ls-files -s lists it.
			c := exec.Command("git", "ls-files", "-s")
			c.Dir = root
			out, err := c.Output()
			if err != nil {
				return fmt.Errorf("git ls-files -s: %w", err)
			}
			sum := sha256.Sum256(out)
			line = rel + " staged " + hex.EncodeToString(sum[:])
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatalf("hash %s: %v", root, err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
