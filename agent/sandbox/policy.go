package sandbox

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// Mode says what a sandboxed process may change.
type Mode string

// The sandbox modes.
const (
	// ModeWorkspaceWrite, the default, lets a tool's process read
	// everything but the secret paths and write only the workspace, the
	// session's private temporary directory and the trusted extras.
	ModeWorkspaceWrite Mode = "workspace-write"
	// ModeReadOnly lets it write only the private temporary directory.
	ModeReadOnly Mode = "read-only"
	// ModeOff runs tools without a sandbox: an explicit, recorded opt-out
	// that only trusted configuration (or --no-sandbox) may choose.
	ModeOff Mode = "off"
)

// Policy is the sandbox section of retrace.yaml.
//
//	sandbox:
//	  mode: workspace-write      # read-only, or off (trusted config only)
//	  network: false             # the default: no TCP connect or bind
//	  allow_network: ["proxy.internal:3128"]   # trusted config only
//	  writable: ["~/.cache/go-build"]          # trusted config only
type Policy struct {
	// Mode is what a tool's process may write; "" is ModeWorkspaceWrite.
	Mode Mode `yaml:"mode"`
	// Network lets the process use the network freely when true.
	Network bool `yaml:"network"`
	// AllowNetwork lists host:port destinations a process may connect to
	// when Network is false. Landlock rules name ports, not hosts, so an
	// entry opens its port towards every host (docs/sandbox.md).
	AllowNetwork []string `yaml:"allow_network"`
	// Writable lists extra directories a process may write, such as a
	// build cache. A leading "~/" is the home directory.
	Writable []string `yaml:"writable"`
}

// EffectiveMode is the mode the policy asks for, the default filled in.
func (p Policy) EffectiveMode() Mode {
	if p.Mode == "" {
		return ModeWorkspaceWrite
	}
	return p.Mode
}

// ErrPolicy is wrapped by Check's errors.
var ErrPolicy = errors.New("invalid sandbox policy")

// Check reports a mode that does not exist and a network destination that
// is not host:port with a port from 1 to 65535.
func (p Policy) Check() error {
	var errs []error
	switch p.EffectiveMode() {
	case ModeWorkspaceWrite, ModeReadOnly, ModeOff:
	default:
		errs = append(errs, fmt.Errorf("%w: sandbox.mode %q: use workspace-write, read-only or off", ErrPolicy, p.Mode))
	}
	for i, hp := range p.AllowNetwork {
		if _, err := port(hp); err != nil {
			errs = append(errs, fmt.Errorf("%w: sandbox.allow_network[%d] %q: %v", ErrPolicy, i, hp, err))
		}
	}
	for i, w := range p.Writable {
		if w == "" || !filepath.IsAbs(w) && !strings.HasPrefix(w, "~/") {
			errs = append(errs, fmt.Errorf("%w: sandbox.writable[%d] %q: give an absolute path or one starting with ~/", ErrPolicy, i, w))
		}
	}
	return errors.Join(errs...)
}

// port returns the port of a host:port destination.
func port(hostPort string) (uint16, error) {
	_, p, err := net.SplitHostPort(hostPort)
	if err != nil {
		return 0, fmt.Errorf("want host:port: %v", err)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q: want a number from 1 to 65535", p)
	}
	return uint16(n), nil
}

// SecretPaths are the paths under the home directory whose content no
// sandboxed process may read: keys, cloud credentials and the files
// package managers keep tokens in. Files named .env* in the directories
// the sandbox enumerates (the home directory and the workspace's
// ancestors) are denied too (docs/sandbox.md says why only those).
var SecretPaths = []string{".ssh", ".aws", ".config/gcloud", ".netrc", ".npmrc", ".gnupg", ".docker/config.json", ".kube/config"}
