package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/report"
)

type metricsOptions struct {
	paths  []string
	metric string
	dbPath string
	loadFlags
	limit  int
	sql    bool
	list   bool
	format *formatFlag
}

func newMetricsCmd(sys *IO) *cobra.Command {
	opts := &metricsOptions{}
	cmd := &cobra.Command{
		Use:   "metrics [RUNS...]",
		Short: "Compute the named metrics (funnel, latency, ...) over trajectories",
		Long: `Metrics loads the trajectories into an embedded DuckDB database and computes
named metrics. Each metric's SQL states what it counts and its denominator:
` + strings.Join(metrics.Metrics(), ", ") + `.

RUNS may be files, directories (every *.jsonl below them), globs, or
Parquet exported by retrace export; with no RUNS, --runs DIR, else the
runs directory is loaded (RETRACE_DIR or .retrace/runs). ` + readingInputs + `

` + readingDupes + `

` + readingStore + ` --db FILE keeps
the store at FILE instead.

With --format json stdout is always one JSON document: the metrics, or
{"error": {"code", "message", "problems"}} when the command failed.

Tables and markdown show the first --limit rows of each metric (totals
come first); csv and json always have every row. --sql prints the metrics'
SQL instead of running it, to read what each counts or to adapt it for
retrace query; --list lists the metrics with what each counts.

Exit codes: 0 ok, 2 bad usage or bad input (a bad line, a repeated seq, a
file that cannot be read or holds no event, a missing path), 1 retrace
itself failed.`,
		Example: `  retrace metrics .retrace/runs
  retrace metrics runs/ --metric latency --format markdown
  retrace metrics --metric funnel --sql
  retrace metrics --list`,
	}
	cmd.Flags().StringVar(&opts.metric, "metric", "all", "metric to compute, or all: "+strings.Join(metrics.Metrics(), ", "))
	cmd.Flags().StringVar(&opts.dbPath, "db", "", dbUsage)
	addLoadFlags(cmd, &opts.loadFlags)
	cmd.Flags().IntVar(&opts.limit, "limit", 20, "rows shown per metric in table and markdown output; 0 shows all (csv and json always have all)")
	cmd.Flags().BoolVar(&opts.sql, "sql", false, "print the metrics' SQL instead of running it")
	cmd.Flags().BoolVar(&opts.list, "list", false, "list the named metrics with what each counts, and exit")
	opts.format = addFormatFlag(cmd, tableFormats...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		paths, err := opts.inputs(args)
		if err != nil {
			return withJSONErrors(sys, opts.format, err)
		}
		opts.paths = paths
		return withJSONErrors(sys, opts.format, runMetrics(cmd.Context(), sys, opts))
	}
	return cmd
}

func runMetrics(ctx context.Context, sys *IO, opts *metricsOptions) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	if opts.limit < 0 {
		return usage(fmt.Errorf("--limit %d: give a number of rows, or 0 for all", opts.limit))
	}
	if opts.list {
		return report.WriteTable(sys.Out, opts.format.value, metricList())
	}
	names := metrics.Metrics()
	if opts.metric != "all" {
		if _, err := metrics.MetricSQL(opts.metric); err != nil {
			return usage(fmt.Errorf("--metric: %w", err))
		}
		names = []string{opts.metric}
	}
	if opts.sql {
		for _, name := range names {
			q, err := metrics.MetricSQL(name)
			if err != nil {
				return err
			}
			fmt.Fprintln(sys.Out, strings.TrimRight(q, "\n"))
		}
		return nil
	}
	db, err := openAndLoad(ctx, sys, opts.dbPath, opts.loadFlags, opts.paths)
	if err != nil {
		return err
	}
	defer db.Close()
	if opts.format.value == "json" {
		// One object keyed by metric name, so the output stays one document;
		// built whole first, so that a failing metric leaves no half of it.
		var b strings.Builder
		b.WriteString("{")
		for i, name := range names {
			t, err := db.Metric(ctx, name)
			if err != nil {
				return err
			}
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "\n  %q: ", name)
			if err := writeTableJSONInline(&b, t); err != nil {
				return err
			}
		}
		b.WriteString("\n}\n")
		_, err := io.WriteString(sys.Out, b.String())
		return err
	}
	for i, name := range names {
		t, err := db.Metric(ctx, name)
		if err != nil {
			if errors.Is(err, metrics.ErrUnknownMetric) {
				return usage(err)
			}
			return err
		}
		if len(names) > 1 {
			if i > 0 {
				fmt.Fprintln(sys.Out)
			}
			heading := "== " + name + " =="
			if opts.format.value == "markdown" {
				heading = "## " + name + "\n"
			}
			fmt.Fprintln(sys.Out, heading)
		}
		cut := 0
		if opts.limit > 0 && len(t.Rows) > opts.limit && opts.format.value != "csv" {
			cut = len(t.Rows) - opts.limit
			t.Rows = t.Rows[:opts.limit]
		}
		if err := report.WriteTable(sys.Out, opts.format.value, t); err != nil {
			return err
		}
		if cut > 0 {
			fmt.Fprintf(sys.Out, "(%s not shown; --limit 0 shows all, csv and json always do)\n", plural(cut, "row"))
		}
	}
	return nil
}

func writeTableJSONInline(w io.Writer, t metrics.Table) error {
	var b strings.Builder
	if err := report.WriteTableJSON(&b, t, "  "); err != nil {
		return err
	}
	_, err := fmt.Fprint(w, strings.TrimSuffix(b.String(), "\n"))
	return err
}
