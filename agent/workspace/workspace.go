package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// MaxLinks bounds the symlinks followed in one resolution, like the
// kernel's ELOOP limit.
const MaxLinks = 40

// ErrLoop is wrapped by Resolve when a path goes through more than MaxLinks
// symlinks, which is how a loop shows.
var ErrLoop = errors.New("too many levels of symbolic links")

// ErrOutside is wrapped by the writing methods when the target is not
// inside the workspace: writes outside it are a hard block in every
// permission mode, and the tools refuse them even if a caller skipped the
// permission chain.
var ErrOutside = errors.New("outside the workspace")

// Root is a workspace directory. It is safe for concurrent use.
type Root struct {
	dir   string // absolute, symlinks resolved
	given string // absolute and clean, as given (it may contain symlinks)
}

// New returns the workspace at dir, which must be an existing directory.
// dir is made absolute and its symlinks are resolved once, here.
func New(dir string) (*Root, error) {
	if dir == "" {
		return nil, errors.New("workspace: no directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("workspace %q is not a directory: give the project directory instead", dir)
	}
	return &Root{dir: real, given: filepath.Clean(abs)}, nil
}

// Dir returns the workspace directory: absolute, with symlinks resolved.
func (r *Root) Dir() string { return r.dir }

// Target is where a path leads, as Resolve found it.
type Target struct {
	// Given is the path as the caller gave it.
	Given string
	// Lexical is Given made absolute and cleaned without looking at the
	// disk: what the path says, not where it leads. Rules written against
	// what the model typed are matched against it as well.
	Lexical string
	// Path is the file the kernel would open: absolute, every symlink and
	// ".." resolved. For a path through a dangling symlink it is the link's
	// target, which a write would create.
	Path string
	// Rel is Path relative to the workspace directory, slash-separated,
	// "." for the directory itself; "" when Path is outside.
	Rel string
	// Inside reports that Path is the workspace directory or below it.
	Inside bool
	// ThroughLink reports that the resolution followed a symlink.
	ThroughLink bool
}

// Resolve turns a path relative to the workspace, or absolute, into the
// file that will be opened. An empty path is the workspace directory.
// Every component is resolved in order as the kernel does: a symlink is
// replaced by its target (relative targets from the link's directory), a
// ".." after a symlink applies to the symlink's target, and components
// that do not exist are appended as they are. The error wraps ErrLoop for
// a symlink loop; an error never comes with a usable Target, so callers
// fail closed.
func (r *Root) Resolve(p string) (Target, error) {
	t := Target{Given: p}
	start, rest := r.dir, p
	switch {
	case p == "":
		t.Lexical = r.given
	case filepath.IsAbs(p):
		t.Lexical = filepath.Clean(p)
		// The workspace's own components were resolved in New; only what
		// lies below it needs looking at. The cut is on the path as given,
		// before any "..", so "<ws>/../x" still climbs from the real
		// workspace directory, as the kernel would.
		if after, ok := cutDir(p, r.dir); ok {
			rest = after
		} else if after, ok := cutDir(p, r.given); ok {
			rest = after
		} else {
			start, rest = "/", p
		}
	default:
		t.Lexical = filepath.Join(r.given, p)
	}
	hops := 0
	path, err := walk(start, rest, &hops)
	if err != nil {
		return Target{}, fmt.Errorf("resolving %s: %w", p, err)
	}
	t.Path, t.ThroughLink = path, hops > 0
	if within(path, r.dir) {
		t.Inside = true
		rel, _ := filepath.Rel(r.dir, path)
		t.Rel = filepath.ToSlash(rel)
	}
	return t, nil
}

// cutDir returns p below dir, when p is dir or lies below it as written.
func cutDir(p, dir string) (string, bool) {
	if p == dir {
		return "", true
	}
	if dir == "/" {
		return strings.TrimPrefix(p, "/"), true
	}
	return strings.CutPrefix(p, dir+"/")
}

// walk resolves rest, a slash-separated path, starting from the resolved
// directory cur. hops counts the symlinks followed across the whole
// resolution, nested targets included.
func walk(cur, rest string, hops *int) (string, error) {
	for comp := range strings.SplitSeq(rest, "/") {
		switch comp {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, comp)
		info, err := os.Lstat(next)
		if err != nil {
			if absent(err) {
				// Nothing here yet: a write creates it as a plain file or
				// directory, so the rest applies to it lexically. A later
				// ".." may climb back into what exists, and is looked at
				// again from there.
				cur = next
				continue
			}
			return "", err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if *hops >= MaxLinks {
			return "", fmt.Errorf("%s: %w", next, ErrLoop)
		}
		*hops++
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if target == "" {
			return "", fmt.Errorf("%s is a symlink with an empty target", next)
		}
		base := cur
		if filepath.IsAbs(target) {
			base = "/"
		}
		if cur, err = walk(base, target, hops); err != nil {
			return "", err
		}
	}
	return cur, nil
}

// absent reports a component that cannot be looked at because it does not
// exist, its parent is not a directory, or its parent cannot be searched:
// in each case the kernel cannot go through it either, so opening the
// resolved path fails the same way, or creates a new file.
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOTDIR)
}

// within reports whether p is dir or below it; both are absolute and clean.
func within(p, dir string) bool {
	if p == dir || dir == "/" {
		return true
	}
	// Not HasPrefix(p, dir+"/"): the permission chain asks this for every
	// path against every sensitive directory, and the concatenation was
	// the chain's largest cost.
	return len(p) > len(dir) && p[len(dir)] == '/' && p[:len(dir)] == dir
}

// Within reports whether the absolute, clean path p is dir or lies below
// it, comparing whole components (so /ws2 is not within /ws).
func Within(p, dir string) bool { return within(p, dir) }

// Walked returns the Target of a file found by walking, without following
// symlinks, a directory that Resolve returned: its path is already
// resolved, so it is not looked at again, and a file inside the workspace
// is still opened through os.Root.
func (r *Root) Walked(abs string) Target {
	t := Target{Given: abs, Lexical: abs, Path: abs}
	if within(abs, r.dir) {
		t.Inside = true
		rel, _ := filepath.Rel(r.dir, abs)
		t.Rel = filepath.ToSlash(rel)
	}
	return t
}

// open opens the workspace directory as an os.Root for one operation.
func (r *Root) open() (*os.Root, error) { return os.OpenRoot(r.dir) }

// OpenFile opens the file t resolved to. A target inside the workspace is
// opened through os.Root by its resolved relative path, so the open cannot
// leave the workspace even if a component became an escaping symlink after
// Resolve; a target outside is opened by its absolute path. Writing flags
// on a target outside the workspace fail with ErrOutside.
func (r *Root) OpenFile(t Target, flag int, perm fs.FileMode) (*os.File, error) {
	if !t.Inside {
		if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
			return nil, r.outside(t)
		}
		return os.OpenFile(t.Path, flag, perm)
	}
	root, err := r.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(t.Rel, flag, perm)
	if err != nil {
		return nil, withPath(err, t.Path)
	}
	return f, nil
}

// Open opens the file t resolved to for reading; see OpenFile.
func (r *Root) Open(t Target) (*os.File, error) { return r.OpenFile(t, os.O_RDONLY, 0) }

// Stat returns the file information of what t resolved to.
func (r *Root) Stat(t Target) (fs.FileInfo, error) {
	if !t.Inside {
		return os.Stat(t.Path)
	}
	root, err := r.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	info, err := root.Stat(t.Rel)
	return info, withPath(err, t.Path)
}

// ReadFile reads the whole file t resolved to.
func (r *Root) ReadFile(t Target) ([]byte, error) {
	if !t.Inside {
		return os.ReadFile(t.Path)
	}
	root, err := r.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	data, err := root.ReadFile(t.Rel)
	return data, withPath(err, t.Path)
}

// WriteFile writes data to the file t resolved to, creating it and its
// missing parent directories, all through os.Root. A target outside the
// workspace fails with ErrOutside.
func (r *Root) WriteFile(t Target, data []byte, perm fs.FileMode) error {
	if !t.Inside {
		return r.outside(t)
	}
	root, err := r.open()
	if err != nil {
		return err
	}
	defer root.Close()
	if dir := filepath.Dir(filepath.FromSlash(t.Rel)); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return withPath(err, filepath.Dir(t.Path))
		}
	}
	return withPath(root.WriteFile(t.Rel, data, perm), t.Path)
}

func (r *Root) outside(t Target) error {
	return &fs.PathError{Op: "write", Path: t.Path, Err: fmt.Errorf("%w %s", ErrOutside, r.dir)}
}

// withPath names the absolute path in an os.Root error, which names the
// relative one, so messages to the model say which file failed.
func withPath(err error, abs string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: abs, Err: pe.Err}
	}
	return err
}

// MaxGlobMatches bounds how many files ResolveShell expands a glob to; a
// glob matching more counts as only known when the command runs.
const MaxGlobMatches = 1000

// ExpandTilde does bash's tilde expansion of a static word: ~ and ~/x are
// below home. With home "" the word is returned unchanged.
func ExpandTilde(word, home string) string {
	if home != "" && (word == "~" || strings.HasPrefix(word, "~/")) {
		return home + word[1:]
	}
	return word
}

// ResolveShell resolves a path operand of a bash command as bash will use
// it: ~ is the home directory, and a glob is expanded against the disk
// now, as bash expands it when the command runs. It returns the word
// itself resolved (for a glob, the pattern as a name below its directory,
// so .git/hooks/* is still below .git/hooks when nothing matches) and the
// glob's matches. known is false when the file is only known at run time:
// an expansion ($, `), a glob component that could match ".." (one
// starting with a dot or a bracket), more than MaxGlobMatches matches, or
// a path that cannot be resolved.
func (r *Root) ResolveShell(word, home string) (self Target, matches []Target, known bool) {
	if word == "" || strings.ContainsAny(word, "$`") {
		return Target{Given: word}, nil, false
	}
	p := ExpandTilde(word, home)
	self, err := r.Resolve(p)
	if err != nil {
		return Target{Given: word}, nil, false
	}
	self.Given = word
	if !strings.ContainsAny(word, "*?[") {
		return self, nil, true
	}
	for comp := range strings.SplitSeq(word, "/") {
		if strings.ContainsAny(comp, "*?[") && (strings.HasPrefix(comp, ".") || strings.HasPrefix(comp, "[")) {
			return Target{Given: word}, nil, false // .* matches .. in bash without globskipdots
		}
	}
	if !filepath.IsAbs(p) {
		// Not filepath.Join, which would apply ".." before the kernel does.
		p = r.dir + "/" + p
	}
	names, err := filepath.Glob(p)
	if err != nil || len(names) > MaxGlobMatches {
		return Target{Given: word}, nil, false
	}
	for _, n := range names {
		t, err := r.Resolve(n)
		if err != nil {
			return Target{Given: word}, nil, false
		}
		t.Given = word
		matches = append(matches, t)
	}
	return self, matches, true
}

// HardLinked reports a regular file with more than one hard link: its
// content is shared with another name that may lie outside the workspace
// (a link made to ~/.bashrc before the session), so a write through it
// would change that file too. The file tools refuse such a file and the
// permission chain denies writing it.
func HardLinked(info fs.FileInfo) bool {
	return info.Mode().IsRegular() && LinkCount(info) > 1
}
