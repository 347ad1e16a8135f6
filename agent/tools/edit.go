package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/retrace-dev/retrace/agent/workspace"
	"github.com/retrace-dev/retrace/trajectory"
)

// editContextLines is how many lines around a change edit shows, so the
// model can check the result without reading the file again.
const editContextLines = 3

type editInput struct {
	FilePath   string `json:"file_path" jsonschema:"minLength=1" jsonschema_description:"The file to change: an absolute path, or a path relative to the workspace. It must have been read with read first."`
	OldString  string `json:"old_string" jsonschema:"minLength=1" jsonschema_description:"The exact text to replace, including whitespace and indentation, without the line-number prefix read shows. It must occur exactly once unless replace_all is true."`
	NewString  string `json:"new_string" jsonschema_description:"The text to put in its place; it must differ from old_string."`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema_description:"Replace every occurrence of old_string instead of exactly one (default false), e.g. to rename a variable."`
}

// EditTool is the edit built-in: an exact string replacement in a file.
type EditTool struct{}

var editSpec = sync.OnceValue(func() Spec {
	return Spec{
		Name: "edit",
		Description: "Replaces exact text in an existing file: old_string must match the file character for character (whitespace and indentation included) and occur exactly once, " +
			"unless replace_all is set. You must read the file with read in this session first. " +
			"Use it instead of sed or awk in bash; to create a file or rewrite it completely, use write. " +
			"On success it shows the changed lines with their line numbers.",
		Schema:      SchemaFor[editInput](),
		ReadOnly:    false,
		Display:     trajectory.DisplayFull,
		ResultLimit: 0,
		// An edit stopped halfway would leave a truncated file behind.
		Interrupt:   InterruptBlock,
		EmptyOutput: "(the file was edited)",
		Source:      trajectory.ToolBuiltin,
	}
})

// Spec returns edit's declarations.
func (EditTool) Spec() Spec { return editSpec() }

// ConcurrencySafe reports false: edits change files.
func (EditTool) ConcurrencySafe(json.RawMessage) bool { return false }

// Paths returns the file the call changes.
func (EditTool) Paths(input json.RawMessage) []Access {
	in, err := decode[editInput](input)
	if err != nil {
		return nil
	}
	return []Access{{Path: in.FilePath, Write: true}}
}

// Run replaces the text. The file must have been read in this session, so
// the model edits what is there rather than what it imagines.
func (EditTool) Run(_ context.Context, env *Env, input json.RawMessage) (Result, error) {
	in, err := decode[editInput](input)
	if err != nil {
		return invalidInput("edit", err), nil
	}
	tg, err := env.Resolve(in.FilePath)
	if err != nil {
		return resolveError(err, in.FilePath), nil
	}
	abs := tg.Path
	switch {
	case in.OldString == "":
		return Result{IsError: true, ErrorCode: "empty_old_string",
			Output: "old_string is empty. To create a file use write; to insert text, put the neighbouring lines in old_string and repeat them with the new text in new_string."}, nil
	case in.OldString == in.NewString:
		return Result{IsError: true, ErrorCode: "no_change",
			Output: "old_string and new_string are the same, so the edit would change nothing. Give the new text in new_string."}, nil
	}
	if !tg.Inside {
		// The permission chain denies this in every mode; the tool refuses
		// it too, so no caller can write outside the workspace.
		return targetError(&fs.PathError{Op: "write", Path: abs, Err: workspace.ErrOutside}, tg), nil
	}
	info, err := env.root.Stat(tg)
	if err != nil {
		r := targetError(err, tg)
		if r.ErrorCode == "ENOENT" {
			r.Output += " To create a new file, use write."
		}
		return r, nil
	}
	if info.IsDir() {
		return Result{IsError: true, ErrorCode: "EISDIR",
			Output: abs + " is a directory. Give the path of a file inside it."}, nil
	}
	if workspace.HardLinked(info) {
		return hardLinked(abs, info), nil
	}
	if !env.WasRead(abs) {
		return Result{IsError: true, ErrorCode: "not_read",
			Output: "You have not read " + abs + " in this session. Call read on it first, so the edit is based on its current content, then retry the edit."}, nil
	}
	data, err := env.root.ReadFile(tg)
	if err != nil {
		return targetError(err, tg), nil
	}
	content := string(data)
	n := strings.Count(content, in.OldString)
	switch {
	case n == 0:
		return Result{IsError: true, ErrorCode: "not_found",
			Output: "old_string was not found in " + abs + ". It must match exactly: check whitespace, indentation and line endings, " +
				"and leave out the line-number prefix that read shows. Read the file again to copy the current text."}, nil
	case n > 1 && !in.ReplaceAll:
		return Result{IsError: true, ErrorCode: "ambiguous",
			Output: fmt.Sprintf("old_string occurs %d times in %s. Add surrounding lines to old_string so it matches exactly one place, "+
				"or set replace_all to true to change all %d.", n, abs, n)}, nil
	}
	first := strings.Index(content, in.OldString)
	var updated string
	if in.ReplaceAll {
		updated = strings.ReplaceAll(content, in.OldString, in.NewString)
	} else {
		updated = strings.Replace(content, in.OldString, in.NewString, 1)
	}
	// WriteFile keeps the mode of an existing file.
	if err := env.root.WriteFile(tg, []byte(updated), info.Mode().Perm()); err != nil {
		return targetError(err, tg), nil
	}
	noun := "occurrence"
	if n > 1 {
		noun = "occurrences"
	}
	var out strings.Builder
	fmt.Fprintf(&out, "Edited %s: replaced %d %s.", abs, n, noun)
	if n > 1 {
		out.WriteString(" The first change:")
	}
	out.WriteString("\n")
	out.WriteString(editSnippet(updated, first, len(in.NewString)))
	return Result{Output: out.String()}, nil
}

// editSnippet returns the lines of content from editContextLines before
// the byte range [at, at+n) to editContextLines after it, numbered as read
// numbers them.
func editSnippet(content string, at, n int) string {
	lines := strings.Split(content, "\n")
	if strings.HasSuffix(content, "\n") {
		lines = lines[:len(lines)-1]
	}
	firstLine := strings.Count(content[:at], "\n")
	lastLine := firstLine + strings.Count(content[at:at+n], "\n")
	from := max(firstLine-editContextLines, 0)
	to := min(lastLine+editContextLines, len(lines)-1)
	var b strings.Builder
	for i := from; i <= to; i++ {
		line := lines[i]
		if len([]rune(line)) > readMaxLineLen {
			line = string([]rune(line)[:readMaxLineLen]) + "… [line cut]"
		}
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, line)
	}
	return b.String()
}
