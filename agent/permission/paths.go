package permission

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinkHops bounds symlink resolution, like the kernel's ELOOP limit.
const maxLinkHops = 40

var errLinkLoop = errors.New("too many levels of symbolic links")

// resolvePath returns the real path the kernel would open for p (absolute
// and clean): every existing component is resolved, symlinks included,
// dangling ones too, and ".." is applied after resolving what precedes it,
// as the kernel does. Components that do not exist yet are appended as
// they are, so a new file is placed in the real directory that will hold
// it.
func resolvePath(p string) (string, error) {
	return resolveFrom("/", strings.TrimPrefix(p, "/"), 0)
}

func resolveFrom(cur, rest string, hops int) (string, error) {
	parts := strings.Split(rest, "/")
	for i, comp := range parts {
		switch comp {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, comp)
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || isNotDir(err) {
				// Nothing below exists: the rest is where a new file would go.
				return filepath.Join(append([]string{cur}, parts[i:]...)...), nil
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops >= maxLinkHops {
			return "", errLinkLoop
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		base := cur
		if filepath.IsAbs(target) {
			base = "/"
		}
		cur, err = resolveFrom(base, strings.TrimPrefix(target, "/"), hops+1)
		if err != nil {
			return "", err
		}
	}
	return cur, nil
}

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	if p == dir {
		return true
	}
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

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

// sensitiveNames are base-name patterns of files that usually hold secrets.
var sensitiveNames = []string{
	".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_dsa*", "id_ecdsa*",
	"id_ed25519*", ".netrc", ".npmrc", ".pypirc", ".git-credentials", "*.p12", "*.pfx",
}

// isSensitive reports a credential store or a file that usually holds
// secrets.
func (c *Checker) isSensitive(p string) bool {
	if c.home != "" {
		for _, d := range sensitiveHomeDirs {
			if within(p, filepath.Join(c.home, d)) {
				return true
			}
		}
	}
	base := filepath.Base(p)
	for _, n := range sensitiveNames {
		if ok, _ := filepath.Match(n, base); ok {
			// .env.example and friends are templates, not secrets.
			if strings.HasPrefix(base, ".env.") && (strings.HasSuffix(base, ".example") || strings.HasSuffix(base, ".sample") || strings.HasSuffix(base, ".template")) {
				return false
			}
			return true
		}
	}
	return false
}

// place is one path of a call, resolved.
type place struct {
	given string // as the model gave it
	abs   string // absolute, lexically cleaned
	real  string // symlinks resolved; "" when resolution failed
	rel   string // real, relative to the workspace; "" when outside
	write bool
}

// dynamicPath reports a path from a shell word that is only known at run
// time, so it cannot be checked.
func dynamicPath(p string) bool {
	return strings.ContainsAny(p, "$`*?[{") || p == ""
}

// locate resolves one path given by the model or found in a command.
func (c *Checker) locate(given string, write bool) place {
	pl := place{given: given, write: write}
	p := given
	if c.home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		p = c.home + p[1:]
	}
	if !filepath.IsAbs(p) {
		// Not filepath.Join: it would apply ".." before symlinks are
		// resolved, and link/.. is not where the kernel goes.
		p = c.workspace + "/" + p
	}
	pl.abs = filepath.Clean(p)
	var real string
	var err error
	if rel, ok := strings.CutPrefix(p, c.workspace+"/"); ok {
		// The workspace is resolved once in New; only what is below it
		// needs looking at.
		real, err = resolveFrom(c.realWorkspace, rel, 0)
	} else {
		real, err = resolvePath(p)
	}
	if err != nil {
		return pl
	}
	pl.real = real
	if within(real, c.realWorkspace) {
		pl.rel, _ = filepath.Rel(c.realWorkspace, real)
	}
	return pl
}

// inside reports whether the place is in the workspace, after resolving
// symlinks.
func (pl place) inside() bool { return pl.real != "" && pl.rel != "" }
