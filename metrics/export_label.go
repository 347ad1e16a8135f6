package metrics

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/retrace-dev/retrace/trajectory"
)

// LabelColumn is the Hive partition column ExportParquetByLabel adds in
// front of date: the value of the session's tag.
const LabelColumn = "label"

// ErrBadLabelKey is wrapped by ExportParquetByLabel's error for a tag key
// that is no label.
var ErrBadLabelKey = errors.New("not a tag key")

// ExportParquetByLabel writes what ExportParquet writes, partitioned first
// by the value of the session_start tag key and then by UTC date
// (dir/label=checkout/date=2026-11-30/...), so an engine that filters on a
// label reads only its directories. Every event of a session goes under its
// session's value, percent-encoded in the directory name as Hive does
// (label=a%2Fb for a/b); a session without the tag goes under
// label=__HIVE_DEFAULT_PARTITION__, Hive's name for a missing value, which
// Hive-partitioned readers read as NULL. The files hold the same columns as
// ExportParquet's, so retrace and every reader load them alike.
func (db *DB) ExportParquetByLabel(ctx context.Context, dir string, overwrite bool, key string) (ExportReport, error) {
	var rep ExportReport
	if !trajectory.IsLabel(key) {
		return rep, fmt.Errorf("export to %s: %w %q: want a session_start tag key such as scenario", dir, ErrBadLabelKey, key)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 && !overwrite {
		return rep, fmt.Errorf("export to %s: %w; choose an empty or new directory, or overwrite it", dir, ErrNotEmpty)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rep, fmt.Errorf("export to %s: %w", dir, err)
	}
	if overwrite {
		if err := os.RemoveAll(dir); err != nil {
			return rep, fmt.Errorf("export to %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rep, fmt.Errorf("export to %s: %w", dir, err)
	}
	path := quoteString(`$."` + key + `"`)
	q := "COPY (SELECT e.*, s." + LabelColumn + ", CAST(e.ts AS DATE) AS date FROM raw_events e" +
		" LEFT JOIN (SELECT session, json_extract_string(tags, " + path + ") AS " + LabelColumn +
		" FROM raw_events WHERE type = 'session_start') s USING (session) ORDER BY e.session, e.seq) TO " + quoteString(dir) +
		" (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (" + LabelColumn + ", date), OVERWRITE_OR_IGNORE)"
	res, err := db.sql.ExecContext(ctx, q)
	if err != nil {
		return rep, fmt.Errorf("export to %s: %w", dir, err)
	}
	rep.Events, _ = res.RowsAffected()
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			rep.Files = append(rep.Files, rel)
		}
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("export to %s: %w", dir, err)
	}
	return rep, nil
}
