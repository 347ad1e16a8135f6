//go:build !unix

package procgroup

import "os/exec"

// Group does nothing where process groups do not exist: cancelling a
// command kills only the command itself (exec's default), and its children
// may outlive retrace.
type Group struct{}

// New returns a Group that does nothing.
func New() (*Group, error) { return &Group{}, nil }

// Join leaves cmd as it is.
func (g *Group) Join(cmd *exec.Cmd) {}

// ID returns 0: there is no group.
func (g *Group) ID() int { return 0 }

// Cancel kills nothing; exec.Cmd.Cancel's default kills the command.
// It is never used as cmd.Cancel here: callers set it only on Unix.
func (g *Group) Cancel() error { return nil }

// Kill does nothing.
func (g *Group) Kill() {}

// Release does nothing.
func (g *Group) Release() {}

// WithDeathSignal does nothing.
func WithDeathSignal(cmd *exec.Cmd) (unlock func()) { return func() {} }
