//go:build !linux

package scenarios

import (
	"context"
	"os/exec"
)

// agentMockAddr is unused where there is no namespace helper.
const agentMockAddr = "127.0.0.1:18080"

// isolatedCommand reports that this platform gives an agent no network
// namespace of its own.
func isolatedCommand(context.Context, string, []string) (*exec.Cmd, bool, string) {
	return nil, false, "network namespaces exist only on Linux"
}

// ownProcessGroup leaves cmd as it is: process groups are killed as a
// whole only on Linux here.
func ownProcessGroup(*exec.Cmd) {}
