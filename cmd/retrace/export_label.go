package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/spf13/cobra"
)

const labelExportHelp = `

--partition-label KEY, with --parquet, partitions by the value of the
session_start tag KEY first and by date second
(DIR/label=checkout/date=2026-11-30/tool_call_0.parquet; values are
percent-encoded, and a session without the tag goes under
label=__HIVE_DEFAULT_PARTITION__, read as NULL), so engines that filter on
the label read only its directories. docs/parquet.md describes the layout and the columns.`

// addLabelPartition adds --partition-label to the export command.
func addLabelPartition(cmd *cobra.Command, sys *IO, opts *exportOptions) {
	var key string
	cmd.Flags().StringVar(&key, "partition-label", "", "with --parquet: partition by this session tag's value, then by date")
	cmd.Long += labelExportHelp
	cmd.Example += "\n  retrace export runs/ --parquet lake --partition-label scenario"
	inner := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if key == "" {
			return inner(c, args)
		}
		paths, err := opts.inputs(args)
		if err != nil {
			return err
		}
		opts.paths = paths
		otlpToo := c.Flags().Changed("otlp") || c.Flags().Changed("otlp-file")
		return withJSONErrors(sys, opts.format, runLabelExport(c.Context(), sys, opts, key, otlpToo))
	}
}

func runLabelExport(ctx context.Context, sys *IO, opts *exportOptions, key string, otlpToo bool) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	if opts.parquet == "" || opts.arrow != "" || otlpToo {
		return usage(errors.New("--partition-label partitions a --parquet export; give --parquet DIR and no --arrow, --otlp or --otlp-file"))
	}
	db, err := openAndLoad(ctx, sys, opts.dbPath, opts.loadFlags, opts.paths)
	if err != nil {
		return err
	}
	defer db.Close()
	rep, err := db.ExportParquetByLabel(ctx, opts.parquet, opts.overwrite, key)
	switch {
	case errors.Is(err, metrics.ErrNotEmpty):
		return usage(fmt.Errorf("--parquet: %w (or pass --overwrite)", err))
	case errors.Is(err, metrics.ErrBadLabelKey):
		return usage(fmt.Errorf("--partition-label: %w", err))
	case err != nil:
		return err
	}
	fmt.Fprintf(sys.Err, "wrote %d events to %s (%s, partitioned by label %s and date)\n", rep.Events, opts.parquet, plural(len(rep.Files), "Parquet file"), key)
	if opts.format.value == "json" {
		b, err := json.MarshalIndent(exportSummary{Parquet: &parquetSummary{Dir: opts.parquet, Events: rep.Events, Files: rep.Files}}, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(sys.Out, "%s\n", b)
	}
	return nil
}
