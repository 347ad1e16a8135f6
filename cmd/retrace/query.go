package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
)

// tableFormats are the --format values of query and metrics.
var tableFormats = []string{"table", "csv", "json", "markdown"}

// readingInputs is what the help of every loading command says about its
// inputs.
const readingInputs = `A named pipe or a process substitution named in RUNS is read as a
stream, and - reads stdin. In a directory or a glob, what is not a regular
file (a named pipe, a socket, a device) is skipped with a warning.

A malformed line, an event whose seq repeats or goes back, a file that
cannot be read (a symlink loop, no permission) and a file without any event
refuse the load, naming every bad file (file:line for a line); --lenient
skips bad lines, drops repeated seqs (each event counted once), leaves out
the bad files, and reports all of it per file on stderr.`

// lenientUsage is the --lenient flag's usage of every loading command.
const lenientUsage = "skip malformed lines, drop events whose seq repeats and leave out unreadable or empty files instead of failing; each is reported per file"

type queryOptions struct {
	sql     string
	paths   []string
	dbPath  string
	lenient bool
	format  *formatFlag
}

func newQueryCmd(sys *IO) *cobra.Command {
	opts := &queryOptions{}
	cmd := &cobra.Command{
		Use:   "query [SQL] [RUNS...]",
		Short: "Run SQL over trajectories loaded into embedded DuckDB",
		Long: `Query loads the trajectories into an embedded DuckDB database and runs SQL
over the views events, tool_calls, sessions, model_turns, permissions,
defenses and reminders (their columns are documented in the metrics
package).

RUNS may be files, directories (every *.jsonl below them), globs, or
Parquet exported by retrace export; with no
RUNS the runs directory is loaded (RETRACE_DIR or .retrace/runs), unless
--db names a kept database, which is then queried as it is.

` + readingInputs + `

With --format json stdout is always one JSON document: the rows, or
{"error": {"code", "message", "problems"}} when the command failed.

With no SQL and stdin a terminal, query opens an interactive prompt over
the loaded views: statements end with ; and may span lines, results are
followed by their row count and time, and a bad statement shows DuckDB's
message and the prompt goes on. Dot commands: .tables, .schema NAME,
.metrics, .metric NAME, .format FMT, .help, .quit. Ctrl-C cancels the
statement being typed or the query running; Ctrl-D leaves. When stdin is a
terminal and the first argument is an existing file or directory and does
not look like SQL (no blanks, ; or parentheses), every argument is taken
as RUNS and the prompt opens on them.

Exit codes: 0 ok, 2 bad usage, bad input (a bad line, a repeated seq, a
file that cannot be read or holds no event, a missing path) or bad SQL,
1 retrace itself failed.`,
		Example: `  retrace query "select tool, count(*) from tool_calls group by tool" .retrace/runs
  retrace query "select * from sessions" runs/ --format csv
  retrace query runs/        # the interactive prompt over runs/`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !stdinIsTerminal(sys) {
				return usage(errors.New(`query needs the SQL to run as its first argument, e.g. retrace query "select count(*) from tool_calls" (an interactive prompt opens instead when stdin is a terminal)`))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.dbPath, "db", "", "database file to keep between calls (default: in memory)")
	cmd.Flags().BoolVar(&opts.lenient, "lenient", false, lenientUsage)
	opts.format = addFormatFlag(cmd, tableFormats...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if opensPrompt(sys, args) {
			opts.paths = args
			return runQueryPrompt(cmd.Context(), sys, opts)
		}
		opts.sql, opts.paths = args[0], args[1:]
		return withJSONErrors(sys, opts.format, runQuery(cmd.Context(), sys, opts))
	}
	return cmd
}

func runQuery(ctx context.Context, sys *IO, opts *queryOptions) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	db, err := openAndLoad(ctx, sys, opts.dbPath, opts.lenient, opts.paths)
	if err != nil {
		return err
	}
	defer db.Close()
	t, err := db.Query(ctx, opts.sql)
	if err != nil {
		return invalid(err)
	}
	return writeTable(sys.Out, opts.format.value, t)
}
