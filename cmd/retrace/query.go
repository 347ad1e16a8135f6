package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/report"
	"github.com/retrace-dev/retrace/trajectory"
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
	sqlFile string
	paths   []string
	dbPath  string
	loadFlags
	format *formatFlag
}

func newQueryCmd(sys *IO) *cobra.Command {
	opts := &queryOptions{}
	cmd := &cobra.Command{
		Use:   "query [SQL | -f FILE | -] [RUNS...]",
		Short: "Run SQL over trajectories loaded into embedded DuckDB",
		Long: `Query loads the trajectories into an embedded DuckDB database and runs SQL
over the views events, tool_calls, sessions, model_turns, permissions,
defenses and reminders (their columns are documented in the metrics
package).

The SQL is the first argument, or the contents of -f FILE (every
argument is then RUNS), or stdin when the first argument is - (which
stdin then cannot also hold runs for). A first argument that is an
existing file or directory and does not look like SQL is refused when
stdin is not a terminal, rather than sent to DuckDB as SQL.

RUNS may be files, directories (every *.jsonl below them), globs, or
Parquet exported by retrace export; with no RUNS, --runs DIR, else the
runs directory is loaded (RETRACE_DIR or .retrace/runs), unless --db names
a kept database, which is then queried as it is.

` + readingStore + ` --db FILE keeps
the store at FILE instead (with no RUNS it is queried as it is). A store
is read read-only: temporary tables are yours, other writes are refused.

` + readingInputs + `

` + readingDupes + `

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
  retrace query -f slow_calls.sql runs/
  echo "select count(*) from sessions" | retrace query - runs/
  retrace query "select tags->>'prompt' AS prompt, count(*) from sessions group by 1" --runs eval-out/runs
  retrace query runs/        # the interactive prompt over runs/`,
	}
	cmd.Flags().StringVar(&opts.dbPath, "db", "", dbUsage)
	cmd.Flags().StringVarP(&opts.sqlFile, "file", "f", "", "read the SQL from this file (- for stdin); every argument is then RUNS")
	addLoadFlags(cmd, &opts.loadFlags)
	opts.format = addFormatFlag(cmd, tableFormats...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if opts.sqlFile == "" && opensPrompt(sys, args) {
			paths, err := opts.inputs(args)
			if err != nil {
				return err
			}
			opts.paths = paths
			return runQueryPrompt(cmd.Context(), sys, opts)
		}
		err := querySQL(sys, opts, args)
		if err == nil {
			opts.paths, err = opts.inputs(opts.paths)
		}
		if err != nil {
			return withJSONErrors(sys, opts.format, err)
		}
		return withJSONErrors(sys, opts.format, runQuery(cmd.Context(), sys, opts))
	}
	return cmd
}

// querySQL sets opts.sql and opts.paths from -f, from stdin (a first
// argument -) or from the first argument.
func querySQL(sys *IO, opts *queryOptions, args []string) error {
	var from string
	var read func() ([]byte, error)
	switch {
	case opts.sqlFile == trajectory.Stdin || opts.sqlFile == "" && len(args) > 0 && args[0] == trajectory.Stdin:
		if opts.sqlFile == "" {
			args = args[1:]
		}
		from, read = "stdin", func() ([]byte, error) { return io.ReadAll(sys.In) }
	case opts.sqlFile != "":
		from, read = opts.sqlFile, func() ([]byte, error) { return os.ReadFile(opts.sqlFile) }
	case len(args) == 0:
		return usage(errors.New(`query needs the SQL to run: as its first argument (retrace query "select count(*) from tool_calls"), with -f FILE, or - to read it from stdin (an interactive prompt opens instead when stdin is a terminal)`))
	case looksLikePath(args[0]):
		// Stdin is not a terminal (else the prompt would have opened), so
		// a path here is a mistake: sent to DuckDB it fails as bad SQL.
		return usage(fmt.Errorf("%s is a file or directory of runs, not SQL: give the SQL first (retrace query \"select ...\" %s), with -f FILE, or - to read it from stdin", args[0], args[0]))
	default:
		opts.sql, opts.paths = args[0], args[1:]
		return nil
	}
	if slices.Contains(args, trajectory.Stdin) {
		return usage(errors.New("stdin holds the SQL, so it cannot hold runs too; save the runs to a file"))
	}
	b, err := read()
	if err != nil {
		return invalid(fmt.Errorf("read the SQL from %s: %w", from, err))
	}
	if strings.TrimSpace(string(b)) == "" {
		return usage(fmt.Errorf("the SQL from %s is empty", from))
	}
	opts.sql, opts.paths = string(b), args
	return nil
}

// looksLikePath reports whether a first argument is an existing file or
// directory rather than SQL: it exists and has no blank, ; or parenthesis.
func looksLikePath(arg string) bool {
	if strings.ContainsAny(arg, " \t\r\n;()") {
		return false
	}
	_, err := os.Stat(arg)
	return err == nil
}

func runQuery(ctx context.Context, sys *IO, opts *queryOptions) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	db, err := openAndLoad(ctx, sys, opts.dbPath, opts.loadFlags, opts.paths)
	if err != nil {
		return err
	}
	defer db.Close()
	t, err := db.Query(ctx, opts.sql)
	if err != nil {
		return invalid(err)
	}
	return report.WriteTable(sys.Out, opts.format.value, t)
}
