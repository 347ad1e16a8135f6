//go:build unix && !linux

package procgroup

import "syscall"

// setDeathSignal does nothing: only Linux has a parent-death signal, and
// the sentinel does the work alone.
func setDeathSignal(attr *syscall.SysProcAttr) {}

// hasMembers cannot list a group's members without /proc.
func hasMembers(pgid int) (bool, error) { return false, errUnknown }
