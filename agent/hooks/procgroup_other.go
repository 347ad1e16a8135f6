//go:build !unix

package hooks

import "os/exec"

// setProcessGroup is a no-op where process groups do not exist; the default
// cancellation kills the hook process itself.
func setProcessGroup(cmd *exec.Cmd) {}

// killProcessGroup is a no-op where process groups do not exist.
func killProcessGroup(cmd *exec.Cmd) {}
