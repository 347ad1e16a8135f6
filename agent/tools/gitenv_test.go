package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// hostileRepo makes the workspace a git repository whose own config and
// hooks run programs on "git status", each leaving a marker outside the
// workspace, and returns the marker paths.
func hostileRepo(t *testing.T, env *Env) (fsmonitor, hook string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	out := t.TempDir()
	fsmonitor, hook = filepath.Join(out, "fsmonitor-ran"), filepath.Join(out, "hook-ran")
	ws := env.Workspace()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", ws}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
	}
	git("init", "-q")
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	git("add", "a.txt")
	git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "a")
	monitor := filepath.Join(ws, ".git", "monitor.sh")
	os.WriteFile(monitor, []byte("#!/bin/sh\ntouch "+fsmonitor+"\n"), 0o755)
	os.WriteFile(filepath.Join(ws, ".git", "hooks", "post-index-change"), []byte("#!/bin/sh\ntouch "+hook+"\n"), 0o755)
	git("config", "core.fsmonitor", monitor)
	return fsmonitor, hook
}

func TestAReadOnlyGitCommandRunsNoProgramTheRepositoryNames(t *testing.T) {
	env := newTestEnv(t)
	fsmonitor, hook := hostileRepo(t, env)
	os.WriteFile(filepath.Join(env.Workspace(), "a.txt"), []byte("changed\n"), 0o644)
	if !(BashTool{}).ConcurrencySafe(mustJSON(t, bashInput{Command: "git status --short"})) {
		t.Fatal("git status --short is expected to be read-only; the test needs a read-only command")
	}
	res := run(t, BashTool{}, env, bashInput{Command: "git status --short"})
	if res.IsError {
		t.Fatalf("git status failed: %s", res.Output)
	}
	for _, m := range []string{fsmonitor, hook} {
		if _, err := os.Stat(m); err == nil {
			t.Errorf("%s exists: a read-only call ran the workspace's code", filepath.Base(m))
		}
	}
}

func TestAnApprovedGitCommandKeepsTheRepositorysOwnConfig(t *testing.T) {
	env := newTestEnv(t)
	fsmonitor, _ := hostileRepo(t, env)
	os.WriteFile(filepath.Join(env.Workspace(), "a.txt"), []byte("changed\n"), 0o644)
	// Not read-only (it writes a file), so only a person or a rule lets it
	// run, and git behaves as the repository says: the same fsmonitor runs.
	res := run(t, BashTool{}, env, bashInput{Command: "git status --short && touch b.txt"})
	if res.IsError {
		t.Fatalf("git status failed: %s", res.Output)
	}
	if _, err := os.Stat(fsmonitor); err != nil {
		t.Errorf("the repository's fsmonitor did not run for an approved command (%v): the read-only test above proves nothing", err)
	}
}

func TestReadOnlyGitConfigIsAppendedAfterTheCallersOwn(t *testing.T) {
	got := withReadOnlyGit([]string{"HOME=/h", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=me"})
	want := []string{"HOME=/h", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=me",
		"GIT_CONFIG_KEY_1=core.fsmonitor", "GIT_CONFIG_VALUE_1=false",
		"GIT_CONFIG_KEY_2=core.hooksPath", "GIT_CONFIG_VALUE_2=/dev/null",
		"GIT_CONFIG_KEY_3=log.showSignature", "GIT_CONFIG_VALUE_3=false",
		"GIT_CONFIG_COUNT=4"}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
