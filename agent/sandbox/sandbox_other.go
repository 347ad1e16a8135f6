//go:build !linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
)

// selfExe is unused where there is no sandbox.
const selfExe = ""

// netABI is the first Landlock ABI that restricts the network.
const netABI = 4

// ExitSetup is the exit status of a re-exec that could not restrict itself.
const ExitSetup = 125

func landlockABI() (int, error) {
	return 0, errors.New("Landlock exists only on Linux")
}

func canUnshareNet() bool { return false }

func canMount() bool { return false }

func (s *Sandbox) wrapNamespaces(*exec.Cmd) {}

type limits struct {
	procs  []string
	nproc  uint64
	remove func()
}

func newLimits() (limits, string) { return limits{remove: func() {}}, "none" }

// spawner does not exist where there is no sandbox.
type spawner struct{}

func (*spawner) stop() {}

// spawn is never reached: New makes no available sandbox here.
func (s *Sandbox) spawn(Command, []string) (*os.Process, error) {
	return nil, errors.New("sandbox: no sandbox on this system")
}
