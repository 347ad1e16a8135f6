package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/spf13/cobra"
)

type exportOptions struct {
	paths     []string
	parquet   string
	arrow     string
	query     string
	overwrite bool
	dbPath    string
	loadFlags
	format *formatFlag
}

// defaultArrowQuery is what --arrow writes without --query: every event in
// recording order.
const defaultArrowQuery = "SELECT * FROM events ORDER BY session, seq"

func newExportCmd(sys *IO) *cobra.Command {
	opts := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export [RUNS...] (--parquet DIR | --arrow FILE)",
		Short: "Export trajectories as Parquet (partitioned by date) or an Arrow IPC stream",
		Long: `Export loads the trajectories into embedded DuckDB, as query and metrics do,
and writes them out for other tools.

--parquet DIR writes every event as zstd-compressed Parquet, hive-partitioned
by the event's UTC date, files per event type in each partition
(DIR/date=2026-11-30/tool_call_0.parquet), rows ordered by session and seq,
with the columns of the events view; DIR/lake.json names the layout's
version and the columns. It streams: the sessions are written in order, in
parts of about half a million events, so a partition may hold several files
of a type (tool_call_1.parquet holds sessions after those of
tool_call_0.parquet), and the memory does not grow with the corpus (DuckDB
is capped at 256MB while it writes, unless --memory-limit says otherwise).
On a terminal a bar on stderr follows the load, then a line counts the
events written; in a log a plain line counts them every 10s
(RETRACE_PROGRESS: a period such as 30s, a number of events, or off).
retrace query, metrics, detect and export read such a directory in place,
and give the same numbers as the trajectories. DIR must be empty or new
unless --overwrite, which replaces it. docs/parquet.md is the layout;
docs/beyond-one-machine.md says how a team shares it.

--arrow FILE writes the result of --query (default: every event in recording
order) as an Arrow IPC stream; FILE - is stdout. Arrow needs a retrace built
with -tags duckdb_arrow.

RUNS may be files, directories (every *.jsonl below them), globs, or Parquet
exported before; with no RUNS, --runs DIR, else the runs directory is
loaded (RETRACE_DIR or .retrace/runs). ` + readingInputs + `

` + readingDupes + `

With --format json stdout is always one JSON document: the summary, or
{"error": {"code", "message", "problems"}} when the command failed.

Exit codes: 0 ok, 2 bad usage, bad input (a bad line, a repeated seq, a
file that cannot be read or holds no event, a missing path) or bad SQL,
1 retrace itself failed.`,
		Example: `  retrace export .retrace/runs --parquet warehouse/retrace
  retrace export runs/ --arrow tool_calls.arrow --query "select * from tool_calls"
  retrace query "select count(*) from tool_calls" warehouse/retrace`,
	}
	cmd.Flags().StringVar(&opts.parquet, "parquet", "", "directory to write Parquet files to")
	cmd.Flags().StringVar(&opts.arrow, "arrow", "", "file to write an Arrow IPC stream to (- for stdout)")
	cmd.Flags().StringVar(&opts.query, "query", defaultArrowQuery, "SQL whose result --arrow writes")
	cmd.Flags().BoolVar(&opts.overwrite, "overwrite", false, "replace a --parquet directory that is not empty")
	cmd.Flags().StringVar(&opts.dbPath, "db", "", dbUsage)
	addLoadFlags(cmd, &opts.loadFlags)
	opts.format = addFormatFlag(cmd, "text", "json")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		paths, err := opts.inputs(args)
		if err != nil {
			return withJSONErrors(sys, opts.format, err)
		}
		opts.paths = paths
		return withJSONErrors(sys, opts.format, runExport(cmd.Context(), sys, opts))
	}
	addOTLPExport(cmd, sys, opts)
	return cmd
}

// exportSummary is what export prints with --format json.
type exportSummary struct {
	Parquet *parquetSummary `json:"parquet,omitempty"`
	Arrow   *arrowSummary   `json:"arrow,omitempty"`
}

type parquetSummary struct {
	Dir    string   `json:"dir"`
	Events int64    `json:"events"`
	Files  []string `json:"files"`
}

type arrowSummary struct {
	File string `json:"file"`
	Rows int64  `json:"rows"`
}

func runExport(ctx context.Context, sys *IO, opts *exportOptions) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	switch {
	case opts.parquet == "" && opts.arrow == "":
		return usage(errors.New("export needs --parquet DIR, --arrow FILE or both"))
	case opts.arrow != "" && !metrics.ArrowAvailable:
		return usage(fmt.Errorf("--arrow: %w", metrics.ErrNoArrow))
	case opts.arrow == "-" && opts.format.value == "json":
		return usage(errors.New("--arrow - writes the stream to stdout, so the JSON summary cannot go there too; drop --format json"))
	}
	if opts.parquet != "" {
		// Said before the load, which may take minutes, rather than after.
		if info, err := os.Stat(opts.parquet); err == nil && !info.IsDir() {
			return usage(fmt.Errorf("--parquet %s is a file; give an empty or new directory", opts.parquet))
		}
	}
	db, err := openAndLoad(ctx, sys, opts.dbPath, opts.loadFlags, opts.paths)
	if err != nil {
		return err
	}
	defer db.Close()
	var sum exportSummary
	if opts.parquet != "" {
		rep, err := db.ExportParquet(ctx, opts.parquet, opts.overwrite)
		if errors.Is(err, metrics.ErrNotEmpty) {
			return usage(fmt.Errorf("--parquet: %w (or pass --overwrite)", err))
		}
		if err != nil {
			return err
		}
		sum.Parquet = &parquetSummary{Dir: opts.parquet, Events: rep.Events, Files: rep.Files}
		fmt.Fprintf(sys.Err, "wrote %d events to %s (%s, partitioned by date)\n", rep.Events, opts.parquet, plural(len(rep.Files), "Parquet file"))
	}
	if opts.arrow != "" {
		n, err := writeArrowTo(ctx, sys, db, opts.arrow, opts.query)
		if err != nil {
			return err
		}
		sum.Arrow = &arrowSummary{File: opts.arrow, Rows: n}
		if opts.arrow != "-" {
			fmt.Fprintf(sys.Err, "wrote %d rows to %s (Arrow IPC stream)\n", n, opts.arrow)
		}
	}
	if opts.format.value == "json" {
		b, err := json.MarshalIndent(sum, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(sys.Out, "%s\n", b)
	}
	return nil
}

// writeArrowTo writes query's result to path (- for stdout); a failed
// export leaves no partial file behind.
func writeArrowTo(ctx context.Context, sys *IO, db *metrics.DB, path, query string) (int64, error) {
	var w io.Writer = sys.Out
	var f *os.File
	if path != "-" {
		var err error
		if f, err = createPrivate(path); err != nil {
			return 0, invalid(fmt.Errorf("--arrow: %w", err))
		}
		w = f
	}
	n, err := db.WriteArrow(ctx, w, query)
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}
	if err != nil {
		return n, invalid(err)
	}
	return n, nil
}
