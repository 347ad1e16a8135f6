package trajectory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Ext is the file extension of trajectory files.
const Ext = ".jsonl"

// Expand resolves paths to the trajectory files they name, sorted and
// without duplicates. A path may be a file (taken whatever its extension),
// a directory (every *.jsonl file below it) or a glob pattern. A directory
// or pattern that names no trajectory file is an error wrapping ErrNoRuns; a
// path that does not exist is an error wrapping fs.ErrNotExist.
func Expand(paths ...string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		switch {
		case err == nil && info.IsDir():
			files, err := dirRuns(p)
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				add(f)
			}
		case err == nil:
			add(p)
		case isGlob(p):
			matches, gerr := filepath.Glob(p)
			if gerr != nil {
				return nil, fmt.Errorf("%s: bad glob pattern: %w", p, gerr)
			}
			n := 0
			for _, m := range matches {
				if mi, err := os.Stat(m); err == nil && !mi.IsDir() {
					add(m)
					n++
				}
			}
			if n == 0 {
				return nil, fmt.Errorf("%s: %w: the pattern matched no files", p, ErrNoRuns)
			}
		case errors.Is(err, fs.ErrNotExist):
			return nil, missingPath(p)
		default:
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

func isGlob(p string) bool { return strings.ContainsAny(p, "*?[") }

func dirRuns(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), Ext) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: %w: the directory holds no %s files (retrace run writes them to .retrace/runs)", dir, ErrNoRuns, Ext)
	}
	return files, nil
}

// missingPath is a path that names nothing; it matches fs.ErrNotExist.
type missingPath string

func (p missingPath) Error() string { return string(p) + ": no such file or directory" }
func (p missingPath) Unwrap() error { return fs.ErrNotExist }
