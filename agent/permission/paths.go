package permission

import (
	"path/filepath"
	"strings"

	"github.com/retrace-dev/retrace/agent/workspace"
)

// within reports whether p is dir or below it.
func within(p, dir string) bool { return workspace.Within(p, dir) }

// systemDirs are directories a call may never write and must ask to read.
var systemDirs = []string{
	"/etc", "/usr", "/bin", "/sbin", "/boot", "/dev", "/proc", "/sys",
	"/lib", "/lib32", "/lib64", "/libx32", "/var", "/root", "/opt", "/srv",
}

// systemExceptions are directories under systemDirs that are scratch space.
var systemExceptions = []string{"/var/tmp"}

func isSystemPath(p string) bool {
	for _, e := range systemExceptions {
		if within(p, e) {
			return false
		}
	}
	for _, d := range systemDirs {
		if within(p, d) {
			return true
		}
	}
	return false
}

// sensitiveHomeDirs hold credentials, relative to the home directory.
var sensitiveHomeDirs = []string{
	".ssh", ".aws", ".gnupg", ".kube", ".config/gcloud", ".config/gh", ".docker", ".azure",
}

// The base names of files that usually hold secrets, as exact names,
// prefixes (id_rsa*) and suffixes (*.pem). Plain string tests rather than
// globs: they run for every path of every call.
var (
	secretNames    = []string{".env", ".netrc", ".npmrc", ".pypirc", ".git-credentials"}
	secretPrefixes = []string{".env.", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"}
	secretSuffixes = []string{".pem", ".key", ".p12", ".pfx"}
	// templateSuffixes mark .env.example and friends: templates, not secrets.
	templateSuffixes = []string{".example", ".sample", ".template"}
)

// isSensitive reports a credential store or a file that usually holds
// secrets.
func (c *Checker) isSensitive(p string) bool {
	for _, d := range c.secretDirs {
		if within(p, d) {
			return true
		}
	}
	return secretName(filepath.Base(p))
}

func secretName(base string) bool {
	if strings.HasPrefix(base, ".env.") {
		for _, t := range templateSuffixes {
			if strings.HasSuffix(base, t) {
				return false
			}
		}
		return true
	}
	for _, n := range secretNames {
		if base == n {
			return true
		}
	}
	for _, pre := range secretPrefixes {
		if strings.HasPrefix(base, pre) {
			return true
		}
	}
	for _, suf := range secretSuffixes {
		if strings.HasSuffix(base, suf) {
			return true
		}
	}
	return false
}

// place is one path of a call, resolved with the one resolution the tools
// open files with (package workspace).
type place struct {
	given string // as the model gave it, or as the command wrote it
	abs   string // absolute, lexically cleaned: what the path says
	real  string // where it leads, symlinks and ".." resolved; "" when resolution failed
	rel   string // real, relative to the workspace; "" when outside
	write bool
	// shell marks a path taken from a bash command: bash expands ~ and
	// globs in it, and it may only be known when the command runs.
	shell bool
	// unknown marks a bash path only the run will show ("$OUT", a glob
	// that could match ".."): it cannot be resolved now.
	unknown bool
}

// dynamicPath reports a path from a shell word that is only known at run
// time, so it cannot be checked.
func dynamicPath(p string) bool {
	return strings.ContainsAny(p, "$`*?[{") || p == ""
}

// locate resolves one path given by the model (shell false) or found in a
// command (shell true). Only bash expands ~: a tool given ~/x opens the
// workspace's ~/x, so that is what is checked.
func (c *Checker) locate(given string, write, shell bool) place {
	pl := place{given: given, write: write, shell: shell}
	p := given
	if shell {
		// Without a known home ~ stays a name, resolved in the workspace.
		p = workspace.ExpandTilde(p, c.home)
	}
	t, err := c.root.Resolve(p)
	if err != nil {
		pl.abs = filepath.Clean(p)
		if !filepath.IsAbs(p) {
			pl.abs = filepath.Join(c.root.Dir(), p)
		}
		return pl
	}
	pl.abs, pl.real, pl.rel = t.Lexical, t.Path, t.Rel
	return pl
}

// inside reports whether the place is in the workspace, after resolving
// symlinks.
func (pl place) inside() bool { return pl.real != "" && pl.rel != "" }
