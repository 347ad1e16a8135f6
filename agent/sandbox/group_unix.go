//go:build unix

package sandbox

import "syscall"

// groupAttr makes a process join the process group pgid (0: a new one).
func groupAttr(pgid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
}
