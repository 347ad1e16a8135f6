//go:build unix

package procgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a parent that starts a command in
// a Group and then waits to be killed.
const helperEnv = "PROCGROUP_TEST_PARENT_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(parent(dir))
	}
	os.Exit(m.Run())
}

// parent starts a command whose side effects come late, from a subshell
// and a background job (grandchildren of this process), says so on stdout
// and blocks until it is killed.
func parent(dir string) int {
	g, err := New()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	script := fmt.Sprintf(`(sleep 0.4; touch %[1]s/subshell) & (sleep 0.4; touch %[1]s/background) & sleep 0.4; touch %[1]s/direct; wait`, dir)
	cmd := exec.Command("/bin/bash", "-c", script)
	g.Join(cmd)
	unlock := WithDeathSignal(cmd)
	defer unlock()
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("started")
	_ = cmd.Wait()
	return 0
}

func TestCommandAndItsGrandchildrenDieWithTheirParent(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := exec.Command(exe, "-test.run=^$")
	p.Env = append(os.Environ(), helperEnv+"="+dir)
	out, err := p.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "started\n" {
		p.Process.Kill()
		p.Wait()
		t.Fatalf("the helper parent said %q (%v), want started", line, err)
	}
	if err := p.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.Wait()
	time.Sleep(800 * time.Millisecond) // twice the commands' sleep
	for _, name := range []string{"direct", "subshell", "background"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s: the marker appeared after the parent was killed, so a process of its group outlived it", name)
		}
	}
}

func TestKillEndsBackgroundChildren(t *testing.T) {
	g, err := New()
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "late")
	cmd := exec.Command("/bin/bash", "-c", "(sleep 0.3; touch "+marker+") >/dev/null 2>&1 &")
	g.Join(cmd)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	g.Kill()
	g.Kill() // idempotent
	time.Sleep(600 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the background child ran on after Kill")
	}
}

func TestReleaseKeepsTheSentinelWhileBackgroundChildrenRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("members are listed from /proc")
	}
	defer func(d time.Duration) { sweepEvery = d }(sweepEvery)
	sweepEvery = 0 // every Release looks
	g, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Kill()
	cmd := exec.Command("/bin/bash", "-c", "sleep 0.5 >/dev/null 2>&1 &")
	g.Join(cmd)
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	g.Release()
	if !alive(g.ID()) {
		t.Fatal("the sentinel exited while a background child still ran in its group")
	}
	time.Sleep(700 * time.Millisecond)
	other, err := New() // any later Release sweeps the lingering groups
	if err != nil {
		t.Fatal(err)
	}
	other.Release()
	if !waitGone(g.ID()) {
		t.Fatal("the sentinel still runs after its group's last child exited and a later Release swept")
	}
	if !waitGone(other.ID()) {
		t.Fatal("the sentinel of an empty group still runs after Release")
	}
}

func alive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// waitGone waits for a sentinel to exit and be reaped.
func waitGone(pid int) bool {
	for range 100 {
		if !alive(pid) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func TestACommandThatKillsItsOwnGroupLeavesTheIDReservedUntilKill(t *testing.T) {
	g, err := New()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/bash", "-c", "kill -KILL 0")
	g.Join(cmd)
	if err := cmd.Run(); err == nil {
		t.Fatal("the command survived killing its own group")
	}
	// The sentinel died with the group but is not reaped: its pid, the
	// group id, cannot have been reused, so signalling the group is safe.
	time.Sleep(50 * time.Millisecond)
	if !alive(g.ID()) {
		t.Fatal("the sentinel was reaped before Kill, so the group id could be reused")
	}
	g.Kill()
	if !waitGone(g.ID()) {
		t.Fatal("Kill did not reap the sentinel")
	}
}
