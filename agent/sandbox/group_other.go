//go:build !unix

package sandbox

import "syscall"

// groupAttr sets nothing where there are no process groups.
func groupAttr(int) *syscall.SysProcAttr { return nil }
