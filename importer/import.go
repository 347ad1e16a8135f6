package importer

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
	"sort"
	"strings"
)

// Format names a third-party transcript format.
type Format string

// The formats Import reads.
const (
	// ClaudeCode is Claude Code's session transcripts:
	// ~/.claude/projects/<project>/<session>.jsonl, with subagents in
	// <session>/subagents/agent-<id>.jsonl.
	ClaudeCode Format = "claude-code"
	// Codex is the Codex CLI's rollout files:
	// ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl.
	Codex Format = "codex"
	// OpenCode is opencode's sessions as `opencode export <sessionID>`
	// prints them (one JSON document), or the JSON lines of `opencode run
	// --format json`; opencode keeps its own in a SQLite database.
	OpenCode Format = "opencode"
)

// ErrMalformedLine is wrapped by the *LineError of a transcript line that
// is not a JSON object.
var ErrMalformedLine = errors.New("malformed transcript line")

// ErrNotTranscript is returned for a file that holds no record of the
// format asked for.
var ErrNotTranscript = errors.New("not a transcript")

// ErrUnknownFormat is returned for a Format Import does not know.
var ErrUnknownFormat = errors.New("unknown transcript format")

// LineError names the file and line of a problem with a transcript.
type LineError struct {
	File string
	Line int
	Err  error
	// Detail says what is wrong, for the reader.
	Detail string
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s:%d: %v: %s", e.File, e.Line, e.Err, e.Detail)
}

func (e *LineError) Unwrap() error { return e.Err }

// Options configures Import.
type Options struct {
	// Format is the transcript format of every path.
	Format Format
	// Paths are transcript files or directories walked for them.
	Paths []string
	// RunsDir is where the trajectories are written.
	RunsDir string
	// Strict refuses a file with a malformed line instead of importing the
	// rest of it.
	Strict bool
	// Progress, when set, is called after each transcript file with the
	// number of files done and in all.
	Progress func(done, total int)
}

// SessionReport says what became of one imported session.
type SessionReport struct {
	// Source is the transcript file the session was read from.
	Source string `json:"source"`
	// ID and Path are the trajectory's session id and file.
	ID      string  `json:"id"`
	Path    string  `json:"path"`
	Outcome Outcome `json:"outcome"`
	// ToolCalls counts the session's tool calls.
	ToolCalls int `json:"tool_calls"`
	// Parent is the session id of the session that started this subagent.
	Parent string `json:"parent,omitempty"`
}

// Report is what Import did.
type Report struct {
	// Files counts the transcript files read.
	Files    int
	Sessions []SessionReport
	// Unknown counts the records of types this importer does not know, by
	// type; they are skipped, never fatal.
	Unknown map[string]int
	// Problems are the malformed lines (each a *LineError naming
	// file:line) and the files that could not be imported.
	Problems []error
}

// Import reads the transcripts at opts.Paths and writes one trajectory per
// session into opts.RunsDir. A malformed line is reported and skipped (the
// rest of its file is imported) unless opts.Strict; a file that cannot be
// read or holds no transcript is reported and the others are imported. The
// error is for what stops the whole import (a bad format, a runs directory
// that cannot be written, a path that does not exist, ctx).
func Import(ctx context.Context, opts Options) (Report, error) {
	rep := Report{Unknown: map[string]int{}}
	var parse func(*fileReader) ([]*session, error)
	switch opts.Format {
	case ClaudeCode:
		parse = parseClaudeCode
	case Codex:
		parse = parseCodex
	case OpenCode:
		parse = parseOpenCode
	default:
		return rep, fmt.Errorf("%w %q: want %s, %s or %s", ErrUnknownFormat, opts.Format, ClaudeCode, Codex, OpenCode)
	}
	files, err := transcripts(opts.Format, opts.Paths)
	if err != nil {
		return rep, err
	}
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Files++
		fr := &fileReader{path: f, strict: opts.Strict, unknown: rep.Unknown}
		sessions, err := fr.run(parse)
		rep.Problems = append(rep.Problems, fr.problems...)
		if err != nil {
			rep.Problems = append(rep.Problems, err)
		}
		for _, s := range sessions {
			path, outcome, err := s.write(opts.RunsDir)
			if err != nil {
				return rep, fmt.Errorf("import %s: %w", f, err)
			}
			sr := SessionReport{Source: f, ID: s.sessionID(), Path: path, Outcome: outcome}
			for _, t := range s.turns {
				sr.ToolCalls += len(t.calls)
			}
			if s.parentSource != "" {
				sr.Parent = (&session{client: s.client, sourceID: s.parentSource, start: s.parentStart}).sessionID()
			}
			rep.Sessions = append(rep.Sessions, sr)
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(files))
		}
	}
	return rep, nil
}

// transcripts expands paths into the transcript files to read, in order.
// For Claude Code a subagent file given alone is read through its parent
// session, which links it; a directory is walked for top-level session
// files (subagent files are found from their parent).
func transcripts(format Format, paths []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(f string) {
		if format == ClaudeCode {
			f = claudeParentFile(f)
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w (give a transcript file or a directory of them)", p, err)
		}
		if !info.IsDir() {
			add(p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir():
				if format == ClaudeCode && d.Name() == "subagents" {
					return filepath.SkipDir
				}
			case !d.Type().IsRegular():
			case format == OpenCode && (strings.HasSuffix(f, ".json") || strings.HasSuffix(f, ".jsonl")):
				found = append(found, f)
			case !strings.HasSuffix(f, ".jsonl"):
			case format == Codex && !strings.HasPrefix(d.Name(), "rollout-"):
			default:
				found = append(found, f)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("walk %s: %w", p, err)
		}
		sort.Strings(found)
		for _, f := range found {
			add(f)
		}
	}
	return out, nil
}

// maxLine bounds one transcript line; Claude Code writes whole system
// prompts and tool catalogs on one line.
const maxLine = 64 << 20

// fileReader reads one transcript file line by line for a parser, counting
// unknown records and collecting malformed lines.
type fileReader struct {
	path     string
	strict   bool
	unknown  map[string]int
	problems []error
	records  int // lines of a known record type of the format
	// malformedLines counts the malformed lines of the file.
	malformedLines int
}

// run opens the file and gives it to parse.
func (fr *fileReader) run(parse func(*fileReader) ([]*session, error)) ([]*session, error) {
	ss, err := parse(fr)
	if err != nil {
		return nil, err
	}
	if fr.strict && fr.malformedLines > 0 {
		return nil, fmt.Errorf("%s: refused with --strict: %d malformed lines (the first: %v); import without --strict to skip them", fr.path, fr.malformedLines, fr.problems[0])
	}
	if fr.records == 0 {
		return nil, fmt.Errorf("%s: %w: no line is a record of this format (is it the right --format, or a transcript at all?)", fr.path, ErrNotTranscript)
	}
	return ss, nil
}

// lines calls fn with each line of path (and its number) that is a JSON
// object; other lines become problems naming file:line.
func (fr *fileReader) lines(path string, fn func(line int, b []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	return fr.scan(path, f, fn)
}

func (fr *fileReader) scan(path string, r io.Reader, fn func(line int, b []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if err := fn(n, b); err != nil {
			fr.malformed(path, n, err.Error())
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", path, n+1, err)
	}
	return nil
}

// maxUnknownTypes bounds the distinct unknown record types counted by
// name; the rest are counted together, so a stream of odd files cannot
// grow the report without end.
const maxUnknownTypes = 100

// countUnknown counts one record of a type the importer does not know.
func (fr *fileReader) countUnknown(t string) {
	name := typeLabel(t)
	if _, ok := fr.unknown[name]; !ok && len(fr.unknown) >= maxUnknownTypes {
		name = "(other)"
	}
	fr.unknown[name]++
}

// maxLineErrors bounds the malformed lines reported one by one per file;
// the rest are counted in one more problem, so memory stays bounded.
const maxLineErrors = 100

func (fr *fileReader) malformed(path string, line int, detail string) {
	fr.malformedLines++
	switch {
	case fr.malformedLines <= maxLineErrors:
		fr.problems = append(fr.problems, &LineError{File: path, Line: line, Err: ErrMalformedLine, Detail: detail})
	case fr.malformedLines == maxLineErrors+1:
		fr.problems = append(fr.problems, &LineError{File: path, Line: line, Err: ErrMalformedLine,
			Detail: fmt.Sprintf("and more malformed lines from here on, not listed one by one (only the first %d are)", maxLineErrors)})
	}
}
