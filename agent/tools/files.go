package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/retrace-dev/retrace/agent/workspace"
)

// sniffLen is how much of a file is looked at to decide it is binary, as
// git and grep do.
const sniffLen = 8 << 10

// isBinary reports whether the start of a file's content holds a NUL byte.
func isBinary(head []byte) bool {
	return bytes.IndexByte(head[:min(len(head), sniffLen)], 0) >= 0
}

// errnoCodes are the error codes tools report for file-system failures,
// labels the failure metrics can group by.
var errnoCodes = map[syscall.Errno]string{
	syscall.ENOENT:       "ENOENT",
	syscall.EACCES:       "EACCES",
	syscall.EPERM:        "EPERM",
	syscall.EISDIR:       "EISDIR",
	syscall.ENOTDIR:      "ENOTDIR",
	syscall.ELOOP:        "ELOOP",
	syscall.ENAMETOOLONG: "ENAMETOOLONG",
	syscall.ENOSPC:       "ENOSPC",
	syscall.EROFS:        "EROFS",
	syscall.EEXIST:       "EEXIST",
}

// errorCode returns the label for a file-system error: its errno name when
// known, "io" otherwise.
func errorCode(err error) string {
	if errors.Is(err, workspace.ErrLoop) {
		return "ELOOP"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if code, ok := errnoCodes[errno]; ok {
			return code
		}
	}
	return "io"
}

// fsError turns a file-system failure into a tool_error whose text tells
// the model what to do next.
func fsError(err error, path string) Result {
	code := errorCode(err)
	msg := "Cannot access " + path + ": " + rootCause(err) + "."
	switch code {
	case "ENOENT":
		msg = path + " does not exist. Check the path for typos; use glob or ls to find the right file."
	case "EACCES", "EPERM":
		msg += " You do not have permission; choose another path or ask the user."
	case "ENOTDIR":
		msg += " A part of the path is a file, not a directory; check the path with ls."
	}
	return Result{Output: msg, IsError: true, ErrorCode: code}
}

// targetError is fsError for a resolved target: it names the file that
// was to be opened, and says that ~ is not expanded when the model wrote
// one, because a missing ~/x is otherwise a puzzle.
func targetError(err error, t workspace.Target) Result {
	r := fsError(err, t.Path)
	if r.ErrorCode == "ENOENT" && strings.HasPrefix(t.Given, "~") {
		r.Output += " Note that ~ is not expanded: give the absolute path."
	}
	if errors.Is(err, workspace.ErrOutside) {
		r.ErrorCode = "outside_workspace"
		r.Output = "Writing " + t.Given + " is not allowed: it resolves to " + t.Path + ", outside the workspace. Write inside the workspace instead, or ask the user to do it."
	}
	return r
}

// rootCause is the innermost message of a *fs.PathError, without the
// operation and path the caller names itself.
func rootCause(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// ignoreSet holds the .gitignore patterns that apply to a walk, with the
// path components relative to base as their domain.
type ignoreSet struct {
	base     string
	patterns []gitignore.Pattern
}

// newIgnoreSet prepares the .gitignore rules for a walk of root. When root
// lies inside the workspace, the .gitignore files from the workspace down
// to root's parent apply too, so that searching a subdirectory ignores what
// the project ignores; root's own .gitignore and those below it are read as
// the walk reaches them.
func newIgnoreSet(workspace, root string) *ignoreSet {
	s := &ignoreSet{base: root}
	rel, err := filepath.Rel(workspace, root)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return s
	}
	s.base = workspace
	if rel == "." {
		return s
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i := range parts {
		// the directories from the workspace down to root's parent
		s.load(filepath.Join(workspace, filepath.Join(parts[:i]...)), parts[:i])
	}
	if s.ignored(root, true) {
		// The model asked for an ignored directory by name (build/,
		// vendor/): search it, applying only the rules found inside it.
		return &ignoreSet{base: root}
	}
	return s
}

// load adds the patterns of dir/.gitignore, whose domain is dir's path
// components relative to base.
func (s *ignoreSet) load(dir string, domain []string) {
	f, err := os.Open(filepath.Join(dir, ".gitignore"))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		s.patterns = append(s.patterns, gitignore.ParsePattern(line, domain))
	}
}

// components splits abs into path components relative to base.
func (s *ignoreSet) components(abs string) []string {
	rel, err := filepath.Rel(s.base, abs)
	if err != nil || rel == "." {
		return nil
	}
	return strings.Split(filepath.ToSlash(rel), "/")
}

func (s *ignoreSet) ignored(abs string, isDir bool) bool {
	if len(s.patterns) == 0 {
		return false
	}
	return gitignore.NewMatcher(s.patterns).Match(s.components(abs), isDir)
}

// walkFiles calls fn for every regular file under root (or root itself when
// it is a file) in lexical order, skipping .git directories, entries that
// .gitignore files exclude, symlinks and unreadable directories. It stops
// with ctx's error when ctx is done.
func walkFiles(ctx context.Context, workspace, root string, fn func(abs string, d fs.DirEntry) error) error {
	ign := newIgnoreSet(workspace, root)
	return filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if err != nil {
			if abs == root {
				return err
			}
			// An unreadable directory below root is skipped, as grep -r does.
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if abs != root && (d.Name() == ".git" || ign.ignored(abs, true)) {
				return fs.SkipDir
			}
			ign.load(abs, ign.components(abs))
			return nil
		}
		if !d.Type().IsRegular() || ign.ignored(abs, false) {
			return nil
		}
		return fn(abs, d)
	})
}

// readHead reads up to n bytes from the start of r.
func readHead(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, n)
	k, err := io.ReadFull(r, buf)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	return buf[:k], err
}

// hardLinked is the refusal to write a file with more than one hard link:
// the file is the same as its other names, one of which may be outside
// the workspace (a link to ~/.bashrc made before the session), and the
// sandbox's path rules cannot tell.
func hardLinked(abs string, info fs.FileInfo) Result {
	return Result{IsError: true, ErrorCode: "hard_linked", Output: fmt.Sprintf(
		"%s has %d hard links: it is one file with several names, some of which may be outside the workspace, so writing it would change them all. It is not written. "+
			"If you need different content here, tell the user; do not try to write it another way.", abs, workspace.LinkCount(info))}
}
