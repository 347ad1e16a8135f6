package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/retrace-dev/retrace/importer"
	"github.com/retrace-dev/retrace/otlp"
	"github.com/retrace-dev/retrace/terminal"
	"github.com/spf13/cobra"
)

type importOptions struct {
	format importer.Format
	paths  []string
	runs   string
	strict bool
	output *formatFlag
}

func newImportCmd(sys *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import (claude-code | codex | opencode | otlp) [PATH...]",
		Short: "Import Claude Code, Codex or opencode sessions, or OTLP traces, as trajectories",
		Long: `Import reads the transcripts a third-party agent writes about its own sessions
and writes each session as a trajectory into the runs directory, so that
validate, metrics, detect and report work on it like on one of retrace's own.

  retrace import claude-code [PATH...]   default: ~/.claude/projects ($CLAUDE_CONFIG_DIR/projects)
  retrace import codex [PATH...]         default: ~/.codex/sessions ($CODEX_HOME/sessions)
  retrace import opencode FILE...        the JSON of opencode export <sessionID>, or the
                                         JSON lines of opencode run --format json (opencode
                                         keeps its sessions in a SQLite database: no default)
  retrace import otlp FILE...            OTLP/JSON traces of any agent that follows the
                                         OTel GenAI conventions (no default)

PATH is a transcript file or a directory walked for them. A Claude Code
subagent becomes its own session, linked to its parent by session_start's
parent_session and parent_tool_use_id. Events the transcript states carry
observed: transcript, events derived from it observed: inferred; a tool
call's duration is taken only from the client's own measurement and is
otherwise marked duration_unknown, never made up. The importer package's
documentation lists the mapping field by field and what each format cannot
tell. Every event keeps the transcript line it came from (origin_line, with
session_start's origin_file), which retrace detect shows with its evidence.
A call's outcome is read by the same per-client classifier retrace mock
serve --record uses; a result it cannot classify is a tool_failure of kind
unknown, never a success.

Importing is idempotent: a session's id comes from the transcript, so
importing it again reports it unchanged (or updated, when the transcript
grew) and never makes a duplicate; a shorter copy of it (a backup taken
earlier) is reported kept and never replaces the longer import.

A malformed line is reported as file:line and skipped, and the rest of the
file is imported; --strict refuses such a file instead. Record types the
importer does not know are counted and reported, never fatal.

retrace import otlp reads OTLP/JSON (one TracesData object per file or
per line, as retrace export --otlp-file and the Collector's file exporter
write it; a directory is walked for *.json and *.jsonl). Each trace with
chat or execute_tool spans becomes one session: chat spans are the model
turns, execute_tool spans the tool calls, each with its span's length as
the tool's duration (or duration_unknown where the span says so). Spans of
other operations are counted and reported, never fatal. A file that is
not OTLP/JSON is refused with its file:line and JSON path. docs/otlp.md
has the mapping.

Exit codes: 0 every file was imported (malformed lines are warnings), 2 a
file could not be imported (not a transcript, refused with --strict, not
readable) or bad usage, 1 retrace itself failed.`,
		Example: `  retrace import claude-code
  retrace import codex ~/.codex/sessions/2026/12 --runs ./runs
  retrace import claude-code ~/.claude/projects/-home-me-repo/4f1c.jsonl --strict
  retrace import otlp traces.jsonl --runs ./runs`,
	}
	for _, f := range []importer.Format{importer.ClaudeCode, importer.Codex, importer.OpenCode} {
		cmd.AddCommand(newImportFormatCmd(sys, f))
	}
	cmd.AddCommand(newImportOTLPCmd(sys))
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usage(fmt.Errorf("unknown transcript format %q: use claude-code, codex, opencode or otlp", args[0]))
		}
		return usage(errors.New("name the transcript format: retrace import claude-code, retrace import codex, retrace import opencode or retrace import otlp"))
	}
	return cmd
}

// formatOTLP is import's name for OTLP/JSON traces, which the otlp package
// reads (the importer package reads the transcript formats).
const formatOTLP importer.Format = "otlp"

func newImportOTLPCmd(sys *IO) *cobra.Command {
	opts := &importOptions{format: formatOTLP}
	cmd := &cobra.Command{
		Use:   "otlp FILE...",
		Short: "Import OTLP/JSON traces of GenAI agents (chat and execute_tool spans)",
		Example: `  retrace export --otlp-file traces.jsonl runs/ && retrace import otlp traces.jsonl --runs back/
  retrace import otlp collector-export/ --format json`,
		Args: cobra.ArbitraryArgs,
	}
	cmd.Flags().StringVar(&opts.runs, "runs", "", "directory to write the trajectories into (default $RETRACE_DIR or .retrace/runs)")
	opts.output = addFormatFlag(cmd, "text", "json")
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usage(errors.New("name the OTLP/JSON files or directories to import: retrace import otlp traces.json"))
		}
		opts.paths = args
		if opts.runs == "" {
			opts.runs = runsDir(sys)
		}
		return runImport(sys, c, opts)
	}
	return cmd
}

func newImportFormatCmd(sys *IO, format importer.Format) *cobra.Command {
	opts := &importOptions{format: format}
	cmd := &cobra.Command{
		Use:   string(format) + " [PATH...]",
		Short: "Import " + string(format) + " transcripts (default: " + defaultTranscriptDir(sys, format) + ")",
		Args:  cobra.ArbitraryArgs,
	}
	if format == importer.OpenCode {
		cmd.Use, cmd.Short = "opencode FILE...", "Import opencode sessions: opencode export <sessionID> JSON, or opencode run --format json output"
	}
	cmd.Flags().StringVar(&opts.runs, "runs", "", "directory to write the trajectories into (default $RETRACE_DIR or .retrace/runs)")
	cmd.Flags().BoolVar(&opts.strict, "strict", false, "refuse a transcript with a malformed line instead of importing the rest of it")
	opts.output = addFormatFlag(cmd, "text", "json")
	cmd.RunE = func(c *cobra.Command, args []string) error {
		opts.paths = args
		if len(args) == 0 && format == importer.OpenCode {
			return usage(errors.New("name the files to import: opencode keeps its sessions in a database, so export one first (opencode export <sessionID> > session.json; retrace import opencode session.json)"))
		}
		if len(args) == 0 {
			opts.paths = []string{defaultTranscriptDir(sys, format)}
		}
		if opts.runs == "" {
			opts.runs = runsDir(sys)
		}
		return runImport(sys, c, opts)
	}
	return cmd
}

// defaultTranscriptDir is where each client keeps its transcripts.
func defaultTranscriptDir(sys *IO, format importer.Format) string {
	home := sys.Getenv("HOME")
	switch format {
	case importer.ClaudeCode:
		if d := sys.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
			return filepath.Join(d, "projects")
		}
		return filepath.Join(home, ".claude", "projects")
	default:
		if d := sys.Getenv("CODEX_HOME"); d != "" {
			return filepath.Join(d, "sessions")
		}
		return filepath.Join(home, ".codex", "sessions")
	}
}

// importJSON is the --format json document.
type importJSON struct {
	Files    int                      `json:"files"`
	Sessions []importer.SessionReport `json:"sessions"`
	Unknown  map[string]int           `json:"unknown_record_types"`
	Problems []string                 `json:"problems"`
}

func runImport(sys *IO, cmd *cobra.Command, opts *importOptions) error {
	if err := opts.output.check(); err != nil {
		return err
	}
	bar := newCountProgress(sys, "importing transcripts", 50)
	var rep importer.Report
	var err error
	if opts.format == formatOTLP {
		rep, err = otlp.Import(cmd.Context(), otlp.ImportOptions{Paths: opts.paths, RunsDir: opts.runs, Progress: bar.update})
	} else {
		rep, err = importer.Import(cmd.Context(), importer.Options{
			Format: opts.format, Paths: opts.paths, RunsDir: opts.runs, Strict: opts.strict, Progress: bar.update,
		})
	}
	bar.finish()
	if err != nil {
		if rep.Files == 0 {
			return invalid(err)
		}
		return err
	}
	fileProblems := 0
	var problems []string
	for _, p := range rep.Problems {
		var le *importer.LineError
		if !errors.As(p, &le) {
			fileProblems++
		}
		problems = append(problems, p.Error())
	}
	if opts.output.value == "json" {
		doc := importJSON{Files: rep.Files, Sessions: rep.Sessions, Unknown: rep.Unknown, Problems: problems}
		if doc.Sessions == nil {
			doc.Sessions = []importer.SessionReport{}
		}
		if doc.Problems == nil {
			doc.Problems = []string{}
		}
		b, _ := json.MarshalIndent(doc, "", "  ")
		fmt.Fprintf(sys.Out, "%s\n", b)
	} else {
		printImport(sys, rep, problems)
	}
	if fileProblems > 0 {
		return &exitError{code: ExitInvalid, err: errReported}
	}
	return nil
}

func printImport(sys *IO, rep importer.Report, problems []string) {
	counts := map[importer.Outcome]int{}
	for _, s := range rep.Sessions {
		counts[s.Outcome]++
		line := fmt.Sprintf("%-9s %s  %s  %s", s.Outcome, s.ID, plural(s.ToolCalls, "tool call"), s.Source)
		if s.Parent != "" {
			line += "  (subagent of " + s.Parent + ")"
		}
		fmt.Fprintln(sys.Out, terminal.Line(line))
	}
	kept := ""
	if n := counts[importer.Kept]; n > 0 {
		// A shorter copy of a session already imported is no new session.
		kept = fmt.Sprintf(", %d kept (a longer import of the same session is in the runs directory already)", n)
	}
	fmt.Fprintf(sys.Out, "%s from %s: %d imported, %d updated, %d unchanged%s\n", plural(len(rep.Sessions), "session"),
		plural(rep.Files, "file"), counts[importer.Imported], counts[importer.Updated], counts[importer.Unchanged], kept)
	if len(rep.Unknown) > 0 {
		var kinds []string
		for k, n := range rep.Unknown {
			kinds = append(kinds, fmt.Sprintf("%s (%d)", k, n))
		}
		sort.Strings(kinds)
		fmt.Fprintf(sys.Out, "skipped record types this importer does not know: %s\n", terminal.Line(strings.Join(kinds, ", ")))
	}
	// A problem quotes the transcript's bytes (a binary file, a line of
	// escape sequences): shown escaped, they cannot drive the terminal.
	for _, p := range problems {
		fmt.Fprintln(sys.Err, terminal.Line(p))
	}
}
