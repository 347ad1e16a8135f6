//go:build unix

package hooks

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts cmd as the leader of a new process group and makes
// its context cancellation kill the whole group.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
			// The group may already be gone; still make sure of the leader.
			return cmd.Process.Kill()
		}
		return nil
	}
}

// killProcessGroup kills whatever is left of cmd's process group. The group
// id stays reserved while any member lives, so this cannot hit an unrelated
// process; when the group is empty the kill fails harmlessly.
func killProcessGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
