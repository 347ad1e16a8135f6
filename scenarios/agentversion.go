package scenarios

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// agentVersions are the versions of the agent CLIs one eval ran, each
// asked once (`<cli> --version`) and kept for every later run. It is
// safe for concurrent use.
type agentVersions struct {
	mu   sync.Mutex
	byCL map[string]*agentVersion
}

// agentVersion is one CLI's version, asked once.
type agentVersion struct {
	once    sync.Once
	version string
}

// versionTimeout bounds `<cli> --version`: a client that hangs there
// leaves its runs without a version, not stuck.
const versionTimeout = 30 * time.Second

// versionRe finds a version number in what --version prints:
// "2.1.328 (Claude Code)", "codex-cli 0.171.0", "1.18.33".
var versionRe = regexp.MustCompile(`\b\d+\.\d+(\.\d+)?([-+.][0-9A-Za-z.-]+)?\b`)

// parseVersion returns the first version number in out, "" when none.
func parseVersion(out string) string {
	return versionRe.FindString(out)
}

// versionMismatch returns the one-line warning for a CLI whose version is
// not the one its profile is tested with; "" when it is, or when either
// is unknown.
func versionMismatch(profileName string, p profile, version string) string {
	if p.tested == "" || version == "" || version == p.tested {
		return ""
	}
	return "WARNING: " + p.bin + " is version " + version + "; retrace's " + profileName + " profile is tested with " + p.tested +
		" (its flags, environment and wire may differ; " + p.install + ")"
}

// of returns the version of a profile's CLI, asking it the first time
// (with the run's PATH, in a scratch home under dir, where the platform
// allows in a network namespace of its own), and warns once through
// warn when it is not the version the profile is tested with. A command
// of the user's own has no version: "".
func (v *agentVersions) of(ctx context.Context, a *Agent, path, dir string, warn func(string, ...any)) string {
	if a.Profile == "" {
		return ""
	}
	p := profileOf(a)
	v.mu.Lock()
	if v.byCL == nil {
		v.byCL = map[string]*agentVersion{}
	}
	av := v.byCL[a.Profile]
	if av == nil {
		av = &agentVersion{}
		v.byCL[a.Profile] = av
	}
	v.mu.Unlock()
	av.once.Do(func() {
		av.version = askVersion(ctx, p.bin, path, dir)
		if w := versionMismatch(a.Profile, p, av.version); w != "" {
			warn("%s", w)
		}
	})
	return av.version
}

// askVersion runs `bin --version` and returns the version it prints, ""
// when it fails or prints none.
func askVersion(ctx context.Context, bin, path, dir string) string {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	argv := []string{bin, "--version"}
	// The socket is never dialled: the version needs no model.
	cmd, isolated, _ := isolatedCommand(ctx, filepath.Join(dir, "none.sock"), argv)
	if !isolated {
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return ""
	}
	cmd.Env = append(cmd.Env, "PATH="+path, "HOME="+home, "TERM=dumb", "LANG=C.UTF-8",
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"CODEX_HOME="+filepath.Join(home, ".codex"), "DISABLE_AUTOUPDATER=1", "OPENCODE_DISABLE_AUTOUPDATE=1")
	cmd.Dir = dir
	ownProcessGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return parseVersion(strings.TrimSpace(string(out)))
}
