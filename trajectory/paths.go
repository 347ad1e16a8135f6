package trajectory

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Ext is the file extension of trajectory files.
const Ext = ".jsonl"

// Stdin is the path that names standard input, as in most Unix tools.
const Stdin = "-"

// StdinName is how messages, reports and the metrics' file column name
// standard input: "-" alone reads badly in "file:line: reason".
const StdinName = "<stdin>"

// ErrUnreadable means an input could not be opened or examined: a symlink
// loop, a dangling link, a permission denied, a socket.
var ErrUnreadable = errors.New("cannot read")

// ErrEmpty means an input holds no event at all, so not even the
// session_start every session opens with: it is empty, or its only line is
// torn (it has no newline yet). A crash before the first event is written
// leaves this; the message does not say "empty" of a file that is not.
var ErrEmpty = errors.New("no events (no complete line, so no session_start)")

// FileError is a problem with a whole input rather than with one of its
// lines. Its message is "file: reason; what to do".
type FileError struct {
	File string
	Err  error
}

// Error implements error.
func (e *FileError) Error() string { return e.File + ": " + e.Err.Error() }

// Unwrap returns the underlying error, so errors.Is sees ErrUnreadable,
// ErrEmpty and the system error (such as syscall.ELOOP) under them.
func (e *FileError) Unwrap() error { return e.Err }

// Unreadable returns the *FileError for an input that could not be opened
// or examined, saying what to do about the usual causes.
func Unreadable(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is in the message already
	}
	hint := "leave it out of the paths"
	switch {
	case errors.Is(err, syscall.ELOOP):
		hint = "a symlink loop: fix or remove the link"
	case errors.Is(err, fs.ErrPermission):
		hint = "make it readable (chmod) or leave it out of the paths"
	case errors.Is(err, fs.ErrNotExist):
		hint = "it is gone, or a symlink to nothing: fix the path or the link"
	case errors.Is(err, syscall.ENXIO):
		hint = "a socket is not a file: leave it out of the paths"
	}
	return &FileError{File: path, Err: fmt.Errorf("%w: %w; %s", ErrUnreadable, err, hint)}
}

// Empty returns the *FileError for an input without a single event.
func Empty(name string) error {
	return &FileError{File: name, Err: fmt.Errorf("%w; %s", ErrEmpty, emptyHint)}
}

// emptyHint says what to do about an input without events; validate and
// the metrics loader say the same.
const emptyHint = "delete it if a crash left it, or leave it out of the paths"

// Name returns how messages name the input at path: StdinName for Stdin,
// the path itself otherwise.
func Name(path string) string {
	if path == Stdin {
		return StdinName
	}
	return path
}

// OpenInput opens an input Expand returned for reading front to back:
// stdin for Stdin (an error when stdin is nil), the file otherwise. A named
// pipe or a device is opened like a file and read as a stream. An error is a
// *FileError wrapping ErrUnreadable.
func OpenInput(path string, stdin io.Reader) (io.ReadCloser, error) {
	if path == Stdin {
		if stdin == nil {
			return nil, &FileError{File: StdinName, Err: fmt.Errorf("%w: standard input is not available here; name a file instead of -", ErrUnreadable)}
		}
		return io.NopCloser(stdin), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, Unreadable(path, err)
	}
	return f, nil
}

// Inputs is what ExpandInputs found.
type Inputs struct {
	// Files are the inputs to read, sorted and without duplicates: regular
	// files, streams named on the command line (a named pipe, /dev/fd/N of
	// a process substitution) and Stdin.
	Files []string
	// Problems are the entries that could not be examined, one *FileError
	// each (a symlink loop, an unreadable directory); they are not in Files,
	// and the other inputs are still listed.
	Problems []error
	// Skipped are the entries of directories and globs left out because
	// they are not regular files: reading a named pipe nobody writes to
	// would wait forever, and a device or socket is no trajectory.
	Skipped []Warning
}

// ExpandInputs resolves paths to the trajectory inputs they name. A path
// may be Stdin, a file (taken whatever its extension, and read as a stream
// when it is a named pipe or a device), a directory (every regular *.jsonl
// file below it, following symlinks to files but not to directories) or a
// glob pattern (its matches, directories left out). A directory or pattern
// that names nothing to read is an error wrapping ErrNoRuns; a path that
// does not exist is an error wrapping fs.ErrNotExist. Everything else wrong
// with one entry is in Inputs.Problems, so that one bad entry does not hide
// the others.
func ExpandInputs(paths ...string) (Inputs, error) {
	var in Inputs
	seen := map[string]bool{}
	add := func(p string) {
		key := p
		if p != Stdin {
			key = filepath.Clean(p)
		}
		if !seen[key] {
			seen[key] = true
			in.Files = append(in.Files, p)
		}
	}
	for _, p := range paths {
		if p == Stdin {
			add(p)
			continue
		}
		info, err := os.Stat(p)
		switch {
		case err == nil && info.IsDir():
			if err := walkRuns(p, &in, add); err != nil {
				return Inputs{}, err
			}
		case err == nil:
			add(p)
		case isGlob(p):
			if err := globRuns(p, &in, add); err != nil {
				return Inputs{}, err
			}
		case errors.Is(err, fs.ErrNotExist):
			return Inputs{}, missingPath(p)
		default:
			in.Problems = append(in.Problems, Unreadable(p, err))
		}
	}
	sort.Strings(in.Files)
	return in, nil
}

// Expand is ExpandInputs for callers that take every problem as fatal: it
// returns the files, or the problems joined as one error. Skipped entries
// are left out silently.
func Expand(paths ...string) ([]string, error) {
	in, err := ExpandInputs(paths...)
	if err != nil {
		return nil, err
	}
	if len(in.Problems) > 0 {
		return nil, errors.Join(in.Problems...)
	}
	return in.Files, nil
}

func isGlob(p string) bool { return strings.ContainsAny(p, "*?[") }

// walkRuns adds the trajectory files below dir.
func walkRuns(dir string, in *Inputs, add func(string)) error {
	found, skipped := 0, 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			// An unreadable directory below dir: report it, check the rest.
			in.Problems = append(in.Problems, Unreadable(p, err))
			found++
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), Ext) {
			return nil
		}
		mode := d.Type()
		if mode&fs.ModeSymlink != 0 {
			info, err := os.Stat(p)
			if err != nil {
				in.Problems = append(in.Problems, Unreadable(p, err))
				found++
				return nil
			}
			mode = info.Mode().Type()
		}
		if mode.IsRegular() {
			add(p)
			found++
			return nil
		}
		in.Skipped = append(in.Skipped, notRegular(p, mode))
		skipped++
		return nil
	})
	if found == 0 {
		why := ""
		if skipped > 0 {
			why = fmt.Sprintf(" (%d skipped as not regular files)", skipped)
		}
		return fmt.Errorf("%s: %w: the directory holds no %s files%s (retrace run writes them to .retrace/runs)", dir, ErrNoRuns, Ext, why)
	}
	return nil
}

// globRuns adds the files a glob pattern matches.
func globRuns(pattern string, in *Inputs, add func(string)) error {
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return fmt.Errorf("%s: bad glob pattern: %w", pattern, err)
	}
	found, skipped := 0, 0
	for _, m := range matches {
		info, err := os.Stat(m)
		switch {
		case err != nil:
			in.Problems = append(in.Problems, Unreadable(m, err))
			found++
		case info.IsDir():
		case info.Mode().IsRegular():
			add(m)
			found++
		default:
			in.Skipped = append(in.Skipped, notRegular(m, info.Mode().Type()))
			skipped++
		}
	}
	if found == 0 {
		why := ""
		if skipped > 0 {
			why = fmt.Sprintf(" (%d skipped as not regular files)", skipped)
		}
		return fmt.Errorf("%s: %w: the pattern matched no files%s", pattern, ErrNoRuns, why)
	}
	return nil
}

// notRegular is the warning for an entry left out because of its type.
func notRegular(p string, mode fs.FileMode) Warning {
	kind := "not a regular file"
	switch {
	case mode&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case mode&fs.ModeSocket != 0:
		kind = "a socket"
	case mode&fs.ModeDevice != 0:
		kind = "a device"
	case mode.IsDir():
		kind = "a link to a directory, not followed"
	}
	return Warning{File: p, Msg: "skipped: " + kind + "; only regular files are read from directories and globs (name a pipe on the command line to read it)"}
}

// missingPath is a path that names nothing; it matches fs.ErrNotExist.
type missingPath string

func (p missingPath) Error() string { return string(p) + ": no such file or directory" }
func (p missingPath) Unwrap() error { return fs.ErrNotExist }
