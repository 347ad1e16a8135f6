package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/retrace-dev/retrace/trajectory"
)

// The output modes of grep.
const (
	grepContent = "content"
	grepFiles   = "files_with_matches"
	grepCount   = "count"
)

// grepMaxLineLen is the most characters of a matching line grep shows.
const grepMaxLineLen = 500

type grepInput struct {
	Pattern         string `json:"pattern" jsonschema:"minLength=1" jsonschema_description:"The regular expression to search for, in Go RE2 syntax (no lookaround or backreferences). It is matched against each line."`
	Path            string `json:"path,omitempty" jsonschema_description:"The file or directory to search (default: the workspace)."`
	Glob            string `json:"glob,omitempty" jsonschema_description:"Only search files whose name matches this glob, e.g. *.go or *.{ts,tsx}; a glob containing / is matched against the path below the search directory, e.g. src/**/*.go."`
	OutputMode      string `json:"output_mode,omitempty" jsonschema:"enum=content,enum=files_with_matches,enum=count" jsonschema_description:"files_with_matches (default) lists the matching files; content shows path:line:text for each matching line; count shows path:count for each matching file."`
	CaseInsensitive bool   `json:"case_insensitive,omitempty" jsonschema_description:"Match letters regardless of case (default false)."`
	Context         int    `json:"context,omitempty" jsonschema:"minimum=0,maximum=50" jsonschema_description:"In content mode, how many lines to show before and after each match."`
}

// GrepTool is the grep built-in: a regular-expression search over files.
type GrepTool struct{}

var grepSpec = sync.OnceValue(func() Spec {
	return Spec{
		Name: "grep",
		Description: "Searches file contents for a regular expression (Go RE2 syntax) under a directory, skipping .git, files ignored by .gitignore, and binary files. " +
			"By default it lists the matching files; output_mode content shows path:line:text, count shows matches per file. Paths are relative to the workspace, sorted. " +
			"Use it instead of grep or rg in bash. To find files by name, use glob.",
		Schema:      SchemaFor[grepInput](),
		ReadOnly:    true,
		Display:     trajectory.DisplayFull,
		ResultLimit: 30000,
		Interrupt:   InterruptCancel,
		EmptyOutput: "(no matches)",
		Source:      trajectory.ToolBuiltin,
	}
})

// Spec returns grep's declarations.
func (GrepTool) Spec() Spec { return grepSpec() }

// ConcurrencySafe reports true: searching changes nothing.
func (GrepTool) ConcurrencySafe(json.RawMessage) bool { return true }

// Paths returns the file or directory the call searches.
func (GrepTool) Paths(input json.RawMessage) []Access {
	in, err := decode[grepInput](input)
	if err != nil {
		return nil
	}
	return []Access{{Path: pathOrWorkspace(in.Path)}}
}

// pathOrWorkspace is the path a search tool reads: the one given, or the
// workspace itself.
func pathOrWorkspace(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// Run searches. It returns ctx's error when cancelled mid-walk.
func (GrepTool) Run(ctx context.Context, env *Env, input json.RawMessage) (Result, error) {
	in, err := decode[grepInput](input)
	if err != nil {
		return invalidInput("grep", err), nil
	}
	mode := in.OutputMode
	switch mode {
	case "":
		mode = grepFiles
	case grepContent, grepFiles, grepCount:
	default:
		return Result{IsError: true, ErrorCode: "invalid_input",
			Output: "output_mode must be content, files_with_matches or count."}, nil
	}
	expr := in.Pattern
	if in.CaseInsensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return Result{IsError: true, ErrorCode: "bad_regexp",
			Output: fmt.Sprintf("The pattern is not a valid regular expression: %v. grep uses Go RE2 syntax (no lookaround, no backreferences); "+
				"to match a special character such as ( ) [ ] { } . * + ? | ^ $ \\ literally, escape it with a backslash.", err)}, nil
	}
	if in.Glob != "" && !doublestar.ValidatePattern(in.Glob) {
		return Result{IsError: true, ErrorCode: "bad_pattern",
			Output: fmt.Sprintf("The glob %q is not valid: check its brackets and braces, e.g. *.go or **/*.{ts,tsx}.", in.Glob)}, nil
	}
	tg, err := env.Resolve(in.Path)
	if err != nil {
		return resolveError(err, in.Path), nil
	}
	root := tg.Path
	if _, err := env.root.Stat(tg); err != nil {
		return targetError(err, tg), nil
	}
	type fileResult struct{ name, text string }
	var results []fileResult
	err = walkFiles(ctx, env.Workspace(), root, func(abs string, _ fs.DirEntry) error {
		if in.Glob != "" && !globMatches(in.Glob, root, abs) {
			return nil
		}
		data, err := env.root.ReadFile(env.root.Walked(abs))
		if err != nil || isBinary(data) {
			return nil // unreadable and binary files are skipped, as grep -rI does
		}
		var b bytes.Buffer
		name := env.rel(abs)
		grepFile(&b, re, name, data, mode, in.Context)
		if b.Len() > 0 {
			results = append(results, fileResult{name, b.String()})
		}
		return nil
	})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Result{}, ctxErr
		}
		return fsError(err, root), nil
	}
	slices.SortStableFunc(results, func(a, b fileResult) int { return strings.Compare(a.name, b.name) })
	var out strings.Builder
	for i, r := range results {
		if i > 0 && mode == grepContent && in.Context > 0 {
			out.WriteString("--\n")
		}
		out.WriteString(r.text)
	}
	return Result{Output: out.String()}, nil
}

// globMatches applies grep's file filter: a glob without a slash matches
// the file name, one with a slash the path below root.
func globMatches(glob, root, abs string) bool {
	if !strings.Contains(glob, "/") {
		return doublestar.MatchUnvalidated(glob, filepath.Base(abs))
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return false
	}
	return doublestar.MatchUnvalidated(glob, filepath.ToSlash(rel))
}

// grepFile appends one file's results in the given mode.
func grepFile(out *bytes.Buffer, re *regexp.Regexp, name string, data []byte, mode string, context int) {
	// Every match contains the pattern's literal prefix, so a file or line
	// without it cannot match; checking that first is far cheaper than
	// running the regexp on every line.
	prefix, _ := re.LiteralPrefix()
	lit := []byte(prefix)
	if len(lit) > 0 && !bytes.Contains(data, lit) {
		return
	}
	lines := splitLines(data)
	var matches []int
	for i, line := range lines {
		if len(lit) > 0 && !bytes.Contains(line, lit) {
			continue
		}
		if re.Match(line) {
			matches = append(matches, i)
			if mode == grepFiles {
				break
			}
		}
	}
	if len(matches) == 0 {
		return
	}
	switch mode {
	case grepFiles:
		fmt.Fprintf(out, "%s\n", name)
	case grepCount:
		fmt.Fprintf(out, "%s:%d\n", name, len(matches))
	case grepContent:
		writeContent(out, name, lines, matches, context)
	}
}

// writeContent prints matching lines as path:line:text and context lines
// as path-line-text, with "--" between groups that are not adjacent, as
// grep does.
func writeContent(out *bytes.Buffer, name string, lines [][]byte, matches []int, context int) {
	isMatch := make(map[int]bool, len(matches))
	for _, m := range matches {
		isMatch[m] = true
	}
	next := 0 // first line not printed yet
	for _, m := range matches {
		from := max(m-context, next)
		to := min(m+context, len(lines)-1)
		if context > 0 && next > 0 && from > next {
			out.WriteString("--\n")
		}
		for i := from; i <= to; i++ {
			sep := '-'
			if isMatch[i] {
				sep = ':'
			}
			fmt.Fprintf(out, "%s%c%d%c%s\n", name, sep, i+1, sep, cutLine(lines[i], grepMaxLineLen))
		}
		next = max(next, to+1)
	}
}

// splitLines splits data into lines without their newlines; a final
// newline does not start another line.
func splitLines(data []byte) [][]byte {
	if len(data) == 0 {
		return nil
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	return bytes.Split(data, []byte("\n"))
}

// cutLine returns line as valid text of at most n characters, marking a cut.
func cutLine(line []byte, n int) string {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if utf8.RuneCount(line) <= n {
		return strings.ToValidUTF8(string(line), "\uFFFD")
	}
	kept := prefixRunes(line, n)
	return strings.ToValidUTF8(string(kept), "\uFFFD") + fmt.Sprintf("… [line cut: %d more characters]", utf8.RuneCount(line[len(kept):]))
}
