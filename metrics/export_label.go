package metrics

import (
	"context"
	"errors"
	"fmt"

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
	if !trajectory.IsLabel(key) {
		return ExportReport{}, fmt.Errorf("export to %s: %w %q: want a session_start tag key such as scenario", dir, ErrBadLabelKey, key)
	}
	path := quoteString(`$."` + key + `"`)
	return db.copyParquet(ctx, dir, overwrite, func(t trajectory.EventType, where string) string {
		return "SELECT " + wideColumns(t, "e.") + ", s." + LabelColumn + ", CAST(e.ts AS DATE) AS date" +
			" FROM (SELECT * FROM " + typeTable(t) + " WHERE " + where + ") e" +
			" LEFT JOIN (SELECT session, json_extract_string(tags, " + path + ") AS " + LabelColumn +
			" FROM raw_session_start WHERE " + where + ") s ON s.session = e.session"
	}, LabelColumn+", date")
}
