package scaffold

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// template holds the scaffold's files as they are written, below
// template/; "all:" keeps .github, which embed would leave out.
//
//go:embed all:template
var template embed.FS

// ErrExists is wrapped by ExistsError: the scaffold would overwrite files.
var ErrExists = errors.New("the scaffold would overwrite existing files")

// ExistsError names the files Write refused to overwrite.
type ExistsError struct {
	// Paths are the existing files, as Write would have written them
	// (joined to its directory), in name order.
	Paths []string
}

// Error names every existing file and what to do about them.
func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s: %s; move them away, or pass --force to overwrite them", ErrExists, strings.Join(e.Paths, ", "))
}

// Unwrap returns ErrExists.
func (e *ExistsError) Unwrap() error { return ErrExists }

// Files returns the paths of the scaffold's files, relative to the
// directory Write writes them in, slash-separated and in name order.
func Files() []string {
	var out []string
	err := fs.WalkDir(template, "template", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out = append(out, strings.TrimPrefix(p, "template/"))
		}
		return nil
	})
	if err != nil {
		// The templates are compiled in; a walk over them cannot fail.
		panic(fmt.Sprintf("scaffold: the embedded templates: %v", err))
	}
	slices.Sort(out)
	return out
}

// Content returns the content of the scaffold's file at rel, a path
// Files returns.
func Content(rel string) ([]byte, error) {
	b, err := template.ReadFile("template/" + rel)
	if err != nil {
		return nil, fmt.Errorf("scaffold: no file %s in the scaffold", rel)
	}
	return b, nil
}

// Write writes the scaffold into dir, creating dir and the directories
// below it, and returns the paths it wrote (joined to dir). Unless force
// is set it writes nothing when any of its files exists, and returns an
// *ExistsError naming them all; a directory where a file would go is
// refused even with force.
func Write(dir string, force bool) ([]string, error) {
	files := Files()
	var exists []string
	for _, rel := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, fmt.Errorf("scaffold: %w", err)
		case fi.IsDir():
			return nil, fmt.Errorf("scaffold: %s is a directory, where the scaffold writes a file", p)
		}
		exists = append(exists, p)
	}
	if len(exists) > 0 && !force {
		return nil, &ExistsError{Paths: exists}
	}
	var wrote []string
	for _, rel := range files {
		b, err := Content(rel)
		if err != nil {
			return wrote, err
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return wrote, fmt.Errorf("scaffold: %w", err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return wrote, fmt.Errorf("scaffold: %w", err)
		}
		wrote = append(wrote, p)
	}
	return wrote, nil
}
