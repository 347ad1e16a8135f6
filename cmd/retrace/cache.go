package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/report"
	"github.com/retrace-dev/retrace/store"
)

func newCacheCmd(sys *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Show or free the stores reading commands keep in the cache directory",
		Long: `Reading commands (metrics, query, detect, diff, report, export) keep the runs
they load in a store in the cache directory ($XDG_CACHE_HOME/retrace, or
~/.cache/retrace), one per set of RUNS, so that a later call reads only
the files added, grown or changed since; detect, diff and report keep
what the detectors found in it too, per file. The cache is kept under
$RETRACE_CACHE_MAX (default 4G): past it, the least recently used stores
go. Deleting a store only costs the next call a full read.`,
		Args: noArgs,
	}
	cmd.AddCommand(newCacheInfoCmd(sys), newCacheCleanCmd(sys))
	return cmd
}

func newCacheInfoCmd(sys *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "info",
		Short: "List the stores: where, size, corpus, last used",
		Long: `Info lists the stores in the cache directory, the most recently used first:
the store's file, its size, the runs it holds and when a command last read
it, then the directory and the total. With --format json stdout is one
document: {"dir", "bytes", "max_bytes", "stores": [{"path", "size",
"corpus", "last_used"}]}.`,
		Args: noArgs,
	}
	format := addFormatFlag(cmd, "table", "json")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := format.check(); err != nil {
			return err
		}
		dir, ok := cacheDir(sys)
		if !ok {
			return usage(errors.New("no cache directory: set XDG_CACHE_HOME or HOME"))
		}
		entries, err := store.Info(dir)
		if err != nil {
			return err
		}
		var total int64
		for _, e := range entries {
			total += e.Size
		}
		if format.value == "json" {
			if entries == nil {
				entries = []store.Entry{}
			}
			b, err := json.MarshalIndent(map[string]any{"dir": dir, "bytes": total, "max_bytes": cacheMax(sys), "stores": entries}, "", "  ")
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(sys.Out, "%s\n", b)
			return err
		}
		t := metrics.Table{Columns: []string{"store", "size", "corpus", "last used"}}
		for _, e := range entries {
			t.Rows = append(t.Rows, []any{e.Path, sizeText(e.Size), strings.Join(e.Corpus, " "), e.LastUsed.UTC().Format(time.RFC3339)})
		}
		if len(entries) > 0 {
			if err := report.WriteTable(sys.Out, "table", t); err != nil {
				return err
			}
		}
		fmt.Fprintf(sys.Out, "%s in %s, %s of %s\n", plural(len(entries), "store"), dir, sizeText(total), sizeText(cacheMax(sys)))
		return nil
	}
	return cmd
}

func newCacheCleanCmd(sys *IO) *cobra.Command {
	var olderThan time.Duration
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Delete the stores (all, or those unused for --older-than)",
		Long: `Clean deletes every store in the cache directory, or with --older-than
those no command read for that long (such as 168h). A store another
retrace is reading is left, and named on stderr. The next call over a
deleted store's runs reads them all again.`,
		Args: noArgs,
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "delete only the stores not used for this long, such as 72h (default: all)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if olderThan < 0 {
			return usage(fmt.Errorf("--older-than %s: give a positive duration, such as 72h", olderThan))
		}
		dir, ok := cacheDir(sys)
		if !ok {
			return usage(errors.New("no cache directory: set XDG_CACHE_HOME or HOME"))
		}
		var cutoff time.Time
		if olderThan > 0 {
			cutoff = sys.Now().Add(-olderThan)
		}
		removed, busy, err := store.Clean(dir, cutoff)
		if err != nil {
			return err
		}
		var freed int64
		for _, e := range removed {
			freed += e.Size
		}
		for _, e := range busy {
			fmt.Fprintf(sys.Err, "%s: left: another retrace is using it\n", e.Path)
		}
		fmt.Fprintf(sys.Out, "deleted %s, %s freed\n", plural(len(removed), "store"), sizeText(freed))
		return nil
	}
	return cmd
}

// sizeText writes a size in bytes for a person: 512 B, 3.2 MB, 1.5 GB.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
