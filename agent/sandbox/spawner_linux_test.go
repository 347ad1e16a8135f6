package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSpawnerStartsChildrenOfThisProcess checks that a sandboxed process
// is this process's child (CLONE_PARENT), in the process group it was
// asked to join, and that Close ends the spawner.
func TestSpawnerStartsChildrenOfThisProcess(t *testing.T) {
	f := newFixture(t, Policy{})
	out, ok := f.run(t, `echo "$PPID $$ $(cut -d' ' -f5 /proc/$$/stat)"`)
	if !ok {
		t.Fatalf("run: %s", out)
	}
	fields := strings.Fields(out)
	if len(fields) != 3 || fields[0] != strconv.Itoa(os.Getpid()) || fields[1] != fields[2] {
		t.Errorf("parent, pid and group = %q, want parent %d and a group of its own", out, os.Getpid())
	}
	spawner := f.box.sp.cmd.Process.Pid
	f.box.Close()
	if _, err := os.Stat("/proc/" + strconv.Itoa(spawner)); err == nil {
		t.Errorf("the spawner %d runs on after Close", spawner)
	}
}

// TestSpawnerSurvivesKillAll checks that a command that kills every
// process it may signal takes neither the session's spawner nor an
// earlier call's background process with it (from Landlock ABI 6, which
// scopes signals: each call runs in a domain of its own nested in the
// spawner's).
func TestSpawnerSurvivesKillAll(t *testing.T) {
	f := newFixture(t, Policy{})
	if abi, _ := landlockABI(); abi < scopeABI {
		t.Skipf("Landlock ABI %d does not scope signals", abi)
	}
	out, ok := f.run(t, "sleep 30 >/dev/null 2>&1 & echo $!")
	if !ok {
		t.Fatalf("run: %s", out)
	}
	background, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("the background pid: %q", out)
	}
	t.Cleanup(func() { _ = syscall.Kill(background, syscall.SIGKILL) })
	first := f.box.sp.cmd.Process.Pid
	for _, kill := range []string{"kill -KILL -1", "pkill -9 -f " + SpawnerArg, "kill -9 " + strconv.Itoa(first)} {
		f.run(t, kill)
		time.Sleep(100 * time.Millisecond) // the spawner's exit is noticed by another goroutine
		if f.box.sp.exited() || f.box.sp.cmd.Process.Pid != first {
			t.Fatalf("%q killed the spawner", kill)
		}
	}
	// A killed orphan may stay a zombie where PID 1 does not reap.
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(background) + "/stat"); err != nil || strings.Contains(string(stat[strings.LastIndexByte(string(stat), ')'):]), ") Z") {
		t.Errorf("a later call killed an earlier call's background process: %s %v", stat, err)
	}
}

// TestSpawnerRestartsAfterItDied checks that a spawner that died does not
// leave the session without a sandbox: the next command gets a new
// spawner and is confined as before.
func TestSpawnerRestartsAfterItDied(t *testing.T) {
	f := newFixture(t, Policy{})
	if out, ok := f.run(t, "true"); !ok {
		t.Fatalf("run: %s", out)
	}
	first := f.box.sp.cmd.Process.Pid
	if err := f.box.sp.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-f.box.sp.done
	out, ok := f.run(t, "echo pwned >> ~/.bashrc")
	if ok {
		t.Fatalf("after the spawner died a write outside passed: %s", out)
	}
	if f.box.sp.cmd.Process.Pid == first {
		t.Error("the dead spawner was not replaced")
	}
	if out, ok := f.run(t, "echo fine > ok.txt && cat ok.txt"); !ok || strings.TrimSpace(out) != "fine" {
		t.Errorf("after the restart: %q, %v", out, ok)
	}
}

// TestSpawnerFailsClosed checks that when the spawner cannot start (its
// plan is gone) the command does not run at all.
func TestSpawnerFailsClosed(t *testing.T) {
	f := newFixture(t, Policy{})
	if err := os.Remove(f.box.planFile); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(f.ws, "ran")
	_, err := f.box.Start(Command{Argv: []string{"/bin/touch", marker}, Dir: f.ws})
	if err == nil || !strings.Contains(err.Error(), "plan") {
		t.Errorf("Start without a plan = %v, want an error naming the plan", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although the sandbox could not be set up")
	}
}

// TestSpawnerProtectsPathsMadeLater checks that a protected path created
// after the spawner started (git init in the session) is read-only for
// the next command, as the per-call re-exec made it.
func TestSpawnerProtectsPathsMadeLater(t *testing.T) {
	if !canMount() {
		t.Skip("no mount namespace without CAP_SYS_ADMIN")
	}
	f := newFixture(t, Policy{})
	if err := os.RemoveAll(filepath.Join(f.ws, ".git")); err != nil {
		t.Fatal(err)
	}
	if out, ok := f.run(t, "true"); !ok {
		t.Fatalf("run: %s", out)
	}
	if err := os.MkdirAll(filepath.Join(f.ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, ok := f.run(t, "echo evil > .git/hooks/post-commit"); ok {
		t.Errorf("a hook was planted in a .git/hooks made after the spawner started: %s", out)
	}
	// The workspace itself, recreated, is writable again.
	if err := os.RemoveAll(f.ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, ok := f.run(t, "echo x > new.txt"); !ok {
		t.Errorf("the recreated workspace is not writable: %s", out)
	}
}
