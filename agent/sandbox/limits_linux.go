package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MaxProcs bounds the processes and threads of a session's sandboxed
// commands together, so that a fork bomb exhausts this and not the
// machine.
const MaxProcs = 1024

// limits is how a session's processes are bounded.
type limits struct {
	// procs are the cgroup.procs files a process joins.
	procs []string
	// nproc is RLIMIT_NPROC, when no pids cgroup could be made.
	nproc uint64
	// remove deletes the cgroups.
	remove func()
}

var cgroupSeq atomic.Int64

// newLimits makes the session's pids and memory cgroups where retrace may
// (cgroup v1 or v2, as root or with a delegated cgroup). RLIMIT_NPROC is
// the fallback for a user other than root: it counts every process of the
// user, so it is set to what the user runs now plus MaxProcs. For root
// without a pids cgroup no limit applies (RLIMIT_NPROC would count every
// root process on the machine); desc says which applies, for session_start.
func newLimits() (limits, string) {
	name := fmt.Sprintf("retrace-sandbox-%s-%d-%d", pidNS(), os.Getpid(), cgroupSeq.Add(1))
	var made []string
	lim := limits{remove: func() {
		for _, dir := range made {
			removeCgroup(dir)
		}
	}}
	var desc []string
	if dir, err := makeCgroup("pids", name, "pids.max", strconv.Itoa(MaxProcs)); err == nil {
		made = append(made, dir)
		lim.procs = append(lim.procs, filepath.Join(dir, "cgroup.procs"))
		desc = append(desc, fmt.Sprintf("pids cgroup (%d)", MaxProcs))
	} else if unix.Geteuid() != 0 {
		lim.nproc = uint64(userProcs(unix.Geteuid()) + MaxProcs)
		desc = append(desc, fmt.Sprintf("RLIMIT_NPROC (%d)", lim.nproc))
	} else {
		desc = append(desc, "no process limit ("+err.Error()+")")
	}
	// A cgroup of its own for CPU time too: the scheduler then shares the
	// CPU between the session's processes as a whole and everything else,
	// so a thousand spinning processes of a fork bomb get one share, not a
	// thousand.
	if dir, err := makeCgroup("cpu", name, "cpu.weight", "100"); err == nil {
		made, lim.procs = append(made, dir), append(lim.procs, filepath.Join(dir, "cgroup.procs"))
		desc = append(desc, "cpu cgroup")
	} else if dir, err := makeCgroup("cpu", name, "cpu.shares", "1024"); err == nil {
		made, lim.procs = append(made, dir), append(lim.procs, filepath.Join(dir, "cgroup.procs"))
		desc = append(desc, "cpu cgroup")
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil && si.Totalram > 0 {
		half := strconv.FormatUint(uint64(si.Totalram)*uint64(si.Unit)/2, 10)
		if dir, err := makeCgroup("memory", name, "memory.max", half); err == nil {
			made, lim.procs = append(made, dir), append(lim.procs, filepath.Join(dir, "cgroup.procs"))
			desc = append(desc, "memory cgroup (half the RAM)")
		} else if dir, err := makeCgroup("memory", name, "memory.limit_in_bytes", half); err == nil {
			made, lim.procs = append(made, dir), append(lim.procs, filepath.Join(dir, "cgroup.procs"))
			desc = append(desc, "memory cgroup (half the RAM)")
		}
	}
	return lim, strings.Join(dedupe(desc), ", ")
}

func dedupe(s []string) []string {
	var out []string
	for _, x := range s {
		if len(out) == 0 || out[len(out)-1] != x {
			out = append(out, x)
		}
	}
	return out
}

// makeCgroup makes the cgroup name under this process's own cgroup of
// controller and writes value to its file key. With cgroup v2 the v1
// controller directory does not exist and the unified hierarchy is used.
func makeCgroup(controller, name, key, value string) (string, error) {
	base, err := ownCgroup(controller)
	if err != nil {
		return "", err
	}
	sweep(base)
	dir := filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("make cgroup %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, key), []byte(value), 0); err != nil {
		_ = syscall.Rmdir(dir)
		return "", fmt.Errorf("set %s of cgroup %s: %w", key, dir, err)
	}
	return dir, nil
}

// ownCgroup is the directory of this process's cgroup for controller:
// the v1 hierarchy named for it, else the unified one.
func ownCgroup(controller string) (string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	var unified string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				return filepath.Join("/sys/fs/cgroup", controller, parts[2]), nil
			}
		}
	}
	if unified != "" {
		if b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", unified, "cgroup.controllers")); err == nil && strings.Contains(string(b), controller) {
			return filepath.Join("/sys/fs/cgroup", unified), nil
		}
	}
	return "", fmt.Errorf("no %s cgroup controller is available to retrace", controller)
}

// pidNS names this process's pid namespace, so that a pid in a cgroup's
// name is only ever looked up in the namespace it belongs to.
func pidNS() string {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/pid", &st); err != nil {
		return "0"
	}
	return strconv.FormatUint(st.Ino, 10)
}

// sweep removes the cgroups a retrace of this pid namespace left under
// base when it died without closing its sessions (its pid no longer runs).
func sweep(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, "retrace-sandbox-"+pidNS()+"-*"))
	for _, dir := range dirs {
		fields := strings.Split(filepath.Base(dir), "-")
		if len(fields) != 5 {
			continue
		}
		pid, err := strconv.Atoi(fields[3])
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		removeCgroup(dir)
	}
}

// removeCgroup kills what is left in a cgroup and removes it.
func removeCgroup(dir string) {
	for range 20 {
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if err := syscall.Rmdir(dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// userProcs counts the processes of uid.
func userProcs(uid int) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", e.Name()), &st) == nil && int(st.Uid) == uid {
			n++
		}
	}
	return n
}
