package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/retrace-dev/retrace/trajectory"
)

type globInput struct {
	Pattern string `json:"pattern" jsonschema:"minLength=1" jsonschema_description:"The glob to match against file paths below the search directory: * matches within one directory, ** across directories, {a,b} either; e.g. **/*.go or src/**/*.{ts,tsx}."`
	Path    string `json:"path,omitempty" jsonschema_description:"The directory to search in (default: the workspace)."`
}

// GlobTool is the glob built-in: finds files by path pattern.
type GlobTool struct{}

var globSpec = sync.OnceValue(func() Spec {
	return Spec{
		Name: "glob",
		Description: "Finds files whose path matches a glob pattern such as **/*.go or src/**/*.{ts,tsx}, skipping .git and files ignored by .gitignore. " +
			"It lists matching files (not directories), relative to the workspace, most recently modified first. " +
			"Use it instead of find or ls -R in bash. To search file contents, use grep.",
		Schema:      SchemaFor[globInput](),
		ReadOnly:    true,
		Display:     trajectory.DisplayFull,
		ResultLimit: 30000,
		Interrupt:   InterruptCancel,
		EmptyOutput: "(no files matched)",
		Source:      trajectory.ToolBuiltin,
	}
})

// Spec returns glob's declarations.
func (GlobTool) Spec() Spec { return globSpec() }

// ConcurrencySafe reports true: listing changes nothing.
func (GlobTool) ConcurrencySafe(json.RawMessage) bool { return true }

// Paths returns the directory the call searches: the fixed leading part of
// an absolute pattern, the path given, or the workspace (a
// directory written into the pattern is still a path the call reads).
func (GlobTool) Paths(input json.RawMessage) []Access {
	in, err := decode[globInput](input)
	if err != nil {
		return nil
	}
	root, _ := globRoot(in)
	return []Access{{Path: root}}
}

// globRoot splits the call into the directory to walk and the pattern to
// match below it. An absolute pattern carries its own directory.
func globRoot(in globInput) (root, pattern string) {
	if filepath.IsAbs(in.Pattern) {
		base, rest := doublestar.SplitPattern(filepath.ToSlash(in.Pattern))
		return filepath.FromSlash(base), rest
	}
	return pathOrWorkspace(in.Path), strings.TrimPrefix(in.Pattern, "./")
}

// Run lists the matching files, newest first.
func (GlobTool) Run(ctx context.Context, env *Env, input json.RawMessage) (Result, error) {
	in, err := decode[globInput](input)
	if err != nil {
		return invalidInput("glob", err), nil
	}
	dir, pattern := globRoot(in)
	if !doublestar.ValidatePattern(pattern) {
		return Result{IsError: true, ErrorCode: "bad_pattern",
			Output: fmt.Sprintf("The pattern %q is not a valid glob: check its brackets and braces, e.g. **/*.go or src/**/*.{ts,tsx}.", in.Pattern)}, nil
	}
	tg, err := env.Resolve(dir)
	if err != nil {
		return resolveError(err, dir), nil
	}
	root := tg.Path
	info, err := env.root.Stat(tg)
	if err != nil {
		return targetError(err, tg), nil
	}
	if !info.IsDir() {
		return Result{IsError: true, ErrorCode: "ENOTDIR",
			Output: root + " is a file, not a directory. Give a directory as path, or read the file."}, nil
	}
	type match struct {
		name string
		mod  time.Time
	}
	var matches []match
	err = walkFiles(ctx, env.Workspace(), root, func(abs string, d fs.DirEntry) error {
		rel, err := filepath.Rel(root, abs)
		if err != nil || !doublestar.MatchUnvalidated(pattern, filepath.ToSlash(rel)) {
			return nil
		}
		var mod time.Time
		if info, err := d.Info(); err == nil {
			mod = info.ModTime()
		}
		matches = append(matches, match{env.rel(abs), mod})
		return nil
	})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Result{}, ctxErr
		}
		return fsError(err, root), nil
	}
	slices.SortFunc(matches, func(a, b match) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	var out strings.Builder
	for _, m := range matches {
		out.WriteString(m.name)
		out.WriteByte('\n')
	}
	return Result{Output: out.String()}, nil
}
