package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/trajectory"
	"github.com/spf13/cobra"
)

// tableFormats are the --format values of query and metrics.
var tableFormats = []string{"table", "csv", "json", "markdown"}

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
		Use:   "query SQL [RUNS...]",
		Short: "Run SQL over trajectories loaded into embedded DuckDB",
		Long: `Query loads the trajectories into an embedded DuckDB database and runs SQL
over the views events, tool_calls, sessions, model_turns, permissions and
defenses (their columns are documented in the metrics package).

RUNS may be files, directories (every *.jsonl below them) or globs; with no
RUNS the runs directory is loaded (RETRACE_DIR or .retrace/runs), unless
--db names a kept database, which is then queried as it is.

A malformed line stops the load naming file:line; --lenient skips bad lines
and reports how many per file on stderr.

Exit codes: 0 ok, 2 bad usage, a bad line, a missing path or bad SQL,
1 retrace itself failed.`,
		Example: `  retrace query "select tool, count(*) from tool_calls group by tool" .retrace/runs
  retrace query "select * from sessions" runs/ --format csv`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usage(errors.New(`query needs the SQL to run as its first argument, e.g. retrace query "select count(*) from tool_calls"`))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.dbPath, "db", "", "database file to keep between calls (default: in memory)")
	cmd.Flags().BoolVar(&opts.lenient, "lenient", false, "skip malformed lines instead of failing, and count them per file")
	opts.format = addFormatFlag(cmd, tableFormats...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts.sql, opts.paths = args[0], args[1:]
		return runQuery(cmd.Context(), sys, opts)
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

// openAndLoad opens the metrics database and loads paths into it (the runs
// directory when there are none and no kept database is named).
func openAndLoad(ctx context.Context, sys *IO, dbPath string, lenient bool, paths []string) (*metrics.DB, error) {
	if len(paths) == 0 && dbPath == "" {
		paths = []string{runsDir(sys)}
	}
	db, err := metrics.Open(ctx, metrics.Options{Path: dbPath, Lenient: lenient})
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return db, nil
	}
	rep, err := db.Load(ctx, paths...)
	if err != nil {
		db.Close()
		var le *trajectory.LineError
		if errors.As(err, &le) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, trajectory.ErrNoRuns) {
			return nil, invalid(err)
		}
		return nil, err
	}
	for _, f := range rep.Files {
		for _, w := range f.Warnings {
			fmt.Fprintln(sys.Err, w)
		}
		if f.Skipped > 0 {
			fmt.Fprintf(sys.Err, "%s: skipped %s (first: %v)\n", f.File, plural(f.Skipped, "malformed line"), f.FirstSkipped)
		}
	}
	return db, nil
}

// writeTable writes t in format: table, csv, json (an array of objects)
// or markdown.
func writeTable(w io.Writer, format string, t metrics.Table) error {
	switch format {
	case "json":
		return writeTableJSON(w, t, "")
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(t.Columns)
		for _, r := range t.Rows {
			cw.Write(cells(r))
		}
		cw.Flush()
		return cw.Error()
	case "markdown":
		esc := func(ss []string) string {
			for i, s := range ss {
				ss[i] = strings.ReplaceAll(s, "|", `\|`)
			}
			return "| " + strings.Join(ss, " | ") + " |\n"
		}
		sep := make([]string, len(t.Columns))
		for i := range sep {
			sep[i] = "---"
		}
		b := esc(append([]string(nil), t.Columns...)) + esc(sep)
		for _, r := range t.Rows {
			b += esc(cells(r))
		}
		_, err := io.WriteString(w, b)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.Columns, "\t"))
	for _, r := range t.Rows {
		fmt.Fprintln(tw, strings.Join(cells(r), "\t"))
	}
	return tw.Flush()
}

func writeTableJSON(w io.Writer, t metrics.Table, indent string) error {
	objs := make([]map[string]any, 0, len(t.Rows))
	for _, r := range t.Rows {
		o := make(map[string]any, len(r))
		for i, v := range r {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			o[t.Columns[i]] = v
		}
		objs = append(objs, o)
	}
	b, err := json.MarshalIndent(objs, indent, "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// cells renders a row for text output; NULL is empty.
func cells(r []any) []string {
	out := make([]string, len(r))
	for i, v := range r {
		switch v := v.(type) {
		case nil:
		case float64:
			out[i] = strconv.FormatFloat(v, 'f', -1, 64)
		case time.Time:
			out[i] = v.UTC().Format(time.RFC3339Nano)
		case []byte:
			out[i] = string(v)
		default:
			out[i] = fmt.Sprint(v)
		}
	}
	return out
}
