package tools

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/retrace-dev/retrace/trajectory"
)

type lsInput struct {
	Path string `json:"path,omitempty" jsonschema_description:"The directory to list: an absolute path, or a path relative to the workspace (default: the workspace)."`
}

// LsTool is the ls built-in: one directory's entries.
type LsTool struct{}

var lsSpec = sync.OnceValue(func() Spec {
	return Spec{
		Name: "ls",
		Description: "Lists the entries of one directory, one per line, sorted, with a trailing / on subdirectories; .git is left out. It does not recurse. " +
			"Use it instead of ls in bash. To find files in a whole tree, use glob; to see a file's content, use read.",
		Schema:      SchemaFor[lsInput](),
		ReadOnly:    true,
		Display:     trajectory.DisplayFull,
		ResultLimit: 30000,
		Interrupt:   InterruptCancel,
		EmptyOutput: "(empty directory)",
		Source:      trajectory.ToolBuiltin,
	}
})

// Spec returns ls's declarations.
func (LsTool) Spec() Spec { return lsSpec() }

// ConcurrencySafe reports true: listing changes nothing.
func (LsTool) ConcurrencySafe(json.RawMessage) bool { return true }

// Paths returns the directory the call lists.
func (LsTool) Paths(input json.RawMessage) []Access {
	in, err := decode[lsInput](input)
	if err != nil {
		return nil
	}
	return []Access{{Path: pathOrWorkspace(in.Path)}}
}

// Run lists the directory.
func (LsTool) Run(_ context.Context, env *Env, input json.RawMessage) (Result, error) {
	in, err := decode[lsInput](input)
	if err != nil {
		return invalidInput("ls", err), nil
	}
	tg, err := env.Resolve(in.Path)
	if err != nil {
		return resolveError(err, in.Path), nil
	}
	dir := tg.Path
	info, err := env.root.Stat(tg)
	if err != nil {
		return targetError(err, tg), nil
	}
	if !info.IsDir() {
		return Result{IsError: true, ErrorCode: "ENOTDIR",
			Output: dir + " is a file, not a directory. Use read to see its content."}, nil
	}
	f, err := env.root.Open(tg)
	if err != nil {
		return targetError(err, tg), nil
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return targetError(err, tg), nil
	}
	slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var out strings.Builder
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		out.WriteString(e.Name())
		if isDirEntry(dir, e) {
			out.WriteByte('/')
		}
		out.WriteByte('\n')
	}
	return Result{Output: out.String()}, nil
}

// isDirEntry reports whether e is a directory, following a symlink so that
// a linked directory is shown as one.
func isDirEntry(dir string, e os.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&os.ModeSymlink == 0 {
		return false
	}
	info, err := os.Stat(dir + string(os.PathSeparator) + e.Name())
	return err == nil && info.IsDir()
}
