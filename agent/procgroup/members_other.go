//go:build unix && !linux

package procgroup

import "syscall"

// setDeathSignal does nothing: only Linux has a parent-death signal, and
// the sentinel does the work alone.
func setDeathSignal(attr *syscall.SysProcAttr) {}

// busyGroups cannot list the groups' members without /proc.
func busyGroups() (map[int]bool, error) { return nil, errUnknown }
