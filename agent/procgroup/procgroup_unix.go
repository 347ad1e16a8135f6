//go:build unix

package procgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// sentinelScript waits until its stdin reaches end of file, which happens
// only when retrace closes the pipe or exits, and then kills its process
// group: every process of the command it guards, and itself.
const sentinelScript = `read -r _; kill -KILL 0`

// Group is a process group tied to the life of this process. Its zero
// value is not usable; make one with New.
type Group struct {
	pgid     int
	sentinel *exec.Cmd
	mu       sync.Mutex
	tie      *os.File // the pipe's write end; nil once closed
}

// New starts the sentinel of a new process group. Commands join the group
// with Join before they start.
func New() (*Group, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("procgroup: cannot make the sentinel's pipe: %w", err)
	}
	s := exec.Command("/bin/sh", "-c", sentinelScript)
	s.Stdin = r
	s.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = s.Start()
	r.Close() // the sentinel has its own copy
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("procgroup: cannot start the sentinel /bin/sh: %w", err)
	}
	// The sentinel is reaped only by Kill: until then its pid, the group
	// id, stays taken even if something killed it, so no signal to the
	// group can reach an unrelated process that reused the id.
	return &Group{pgid: s.Process.Pid, sentinel: s, tie: w}, nil
}

// Join makes cmd start as a member of the group. It must be called before
// cmd.Start. A command made by exec.CommandContext should also set
// cmd.Cancel to g.Cancel, so that cancelling kills the whole group.
func (g *Group) Join(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, g.pgid
}

// Cancel kills the group; it has the signature of exec.Cmd.Cancel.
func (g *Group) Cancel() error {
	g.Kill()
	return nil
}

// ID returns the process group id.
func (g *Group) ID() int { return g.pgid }

// Kill kills every process of the group with SIGKILL, the sentinel
// included. It is safe to call more than once and after Release.
func (g *Group) Kill() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tie == nil {
		return // the sentinel is gone or going, and the group id with it
	}
	// The sentinel is not reaped yet (see New), so the id is still this
	// group's.
	_ = syscall.Kill(-g.pgid, syscall.SIGKILL)
	g.tie.Close()
	g.tie = nil
	go func() { _ = g.sentinel.Wait() }()
}

// Release lets the group go once the command it was made for has ended:
// the sentinel exits when the group has no other member, or stays while
// background children run, so that they still die with retrace. Finding
// the members costs a pass over /proc, so Release looks at most once every
// sweepEvery, then at every group released since; a sentinel may thus
// outlive its group's last child by that much.
func (g *Group) Release() {
	lingering.mu.Lock()
	defer lingering.mu.Unlock()
	lingering.groups = append(lingering.groups, g)
	if time.Since(lingering.swept) < sweepEvery {
		return
	}
	lingering.swept = time.Now()
	busy, err := busyGroups()
	if err != nil {
		return // the members cannot be listed: every sentinel stays
	}
	var kept []*Group
	for _, old := range lingering.groups {
		if busy[old.pgid] {
			kept = append(kept, old)
			continue
		}
		old.Kill() // only the sentinel is left: this ends it
	}
	lingering.groups = kept
}

// sweepEvery bounds how often Release lists the groups' members.
var sweepEvery = time.Second

// lingering holds the released groups whose sentinels still run.
var lingering struct {
	mu     sync.Mutex
	groups []*Group
	swept  time.Time
}

// errUnknown is busyGroups' answer where the members of process groups
// cannot be listed.
var errUnknown = errors.New("procgroup: the members of a process group cannot be listed on this system")

// WithDeathSignal adds, on Linux, the parent-death signal SIGKILL to cmd,
// which must then be started and waited for by the calling goroutine before
// it calls the returned unlock: the signal fires when the OS thread that
// started the child exits (golang/go#27505), so the goroutine stays locked
// to that thread until the child is gone. It kills the command's first
// process the moment retrace dies, before its sentinel acts; elsewhere it
// only locks the thread.
func WithDeathSignal(cmd *exec.Cmd) (unlock func()) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	setDeathSignal(cmd.SysProcAttr)
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
