package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/retrace-dev/retrace/agent/workspace"
	"github.com/retrace-dev/retrace/trajectory"
)

type writeInput struct {
	FilePath string `json:"file_path" jsonschema:"minLength=1" jsonschema_description:"The file to write: an absolute path, or a path relative to the workspace. Missing parent directories are created."`
	Content  string `json:"content" jsonschema_description:"The complete new content of the file."`
}

// WriteTool is the write built-in: creates or replaces a whole file.
type WriteTool struct{}

var writeSpec = sync.OnceValue(func() Spec {
	return Spec{
		Name: "write",
		Description: "Writes a file with the given content, creating it and any missing parent directories, or replacing it completely if it exists. " +
			"Use it to create new files or to rewrite a file entirely; to change part of an existing file, use edit instead, which is safer and shorter. " +
			"Use it instead of echo or heredocs in bash.",
		Schema:      SchemaFor[writeInput](),
		ReadOnly:    false,
		Display:     trajectory.DisplayFull,
		ResultLimit: 0,
		// A write stopped halfway would leave a truncated file behind.
		Interrupt:   InterruptBlock,
		EmptyOutput: "(the file was written)",
		Source:      trajectory.ToolBuiltin,
	}
})

// Spec returns write's declarations.
func (WriteTool) Spec() Spec { return writeSpec() }

// ConcurrencySafe reports false: two writes, or a write and a read, of the
// same file must not race.
func (WriteTool) ConcurrencySafe(json.RawMessage) bool { return false }

// Paths returns the file the call writes.
func (WriteTool) Paths(input json.RawMessage) []Access {
	in, err := decode[writeInput](input)
	if err != nil {
		return nil
	}
	return []Access{{Path: in.FilePath, Write: true}}
}

// Run writes the file. Its Modify marks the file as read, because the model
// now knows its content and may edit it.
func (WriteTool) Run(_ context.Context, env *Env, input json.RawMessage) (Result, error) {
	in, err := decode[writeInput](input)
	if err != nil {
		return invalidInput("write", err), nil
	}
	tg, err := env.Resolve(in.FilePath)
	if err != nil {
		return resolveError(err, in.FilePath), nil
	}
	abs := tg.Path
	if !tg.Inside {
		// The permission chain denies this in every mode; the tool refuses
		// it too, so no caller can write outside the workspace.
		return targetError(&fs.PathError{Op: "write", Path: abs, Err: workspace.ErrOutside}, tg), nil
	}
	existed := false
	info, err := env.root.Stat(tg)
	switch {
	case err == nil && info.IsDir():
		return Result{IsError: true, ErrorCode: "EISDIR",
			Output: abs + " is a directory. Give the path of a file inside it instead."}, nil
	case err == nil && workspace.HardLinked(info):
		return hardLinked(abs, info), nil
	case err == nil:
		existed = true
	case !errors.Is(err, fs.ErrNotExist):
		return targetError(err, tg), nil
	}
	if err := env.root.WriteFile(tg, []byte(in.Content), 0o644); err != nil {
		return targetError(err, tg), nil
	}
	verb := "Created"
	if existed {
		verb = "Overwrote"
	}
	return Result{
		Output: fmt.Sprintf("%s %s: wrote %d bytes.", verb, abs, len(in.Content)),
		Modify: func(e *Env) { e.MarkRead(abs) },
	}, nil
}
