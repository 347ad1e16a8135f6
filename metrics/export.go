package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// ErrNotEmpty is returned by ExportParquet for a directory that already
// holds files, unless told to overwrite.
var ErrNotEmpty = errors.New("directory is not empty")

// ErrNoArrow is returned by WriteArrow in a build without Arrow support.
var ErrNoArrow = errors.New("this retrace was built without Arrow support; build it with -tags duckdb_arrow")

// ExportReport says what an export wrote.
type ExportReport struct {
	// Events is the number of events written.
	Events int64
	// Files are the files written, relative to the export directory.
	Files []string
}

// ExportParquet writes every loaded event to dir as zstd-compressed Parquet,
// hive-partitioned by the event's UTC date (dir/date=2026-11-30/...), with
// the events view's columns, file included: loading dir into an empty
// database gives the same views and metrics as the trajectories did. A dir
// with files in it is refused with ErrNotEmpty unless overwrite is set, so
// an export never mixes with an older one.
func (db *DB) ExportParquet(ctx context.Context, dir string, overwrite bool) (ExportReport, error) {
	return db.copyParquet(ctx, dir, overwrite,
		"SELECT *, CAST(ts AS DATE) AS date FROM raw_events ORDER BY session, seq", "date")
}

// copyParquet writes the rows of query to dir as zstd Parquet partitioned
// by the columns partitionBy, refusing a directory with files in it unless
// overwrite is set (then it is emptied first), and reports the events and
// files written. Both Parquet exports go through it, so the layout's rules
// are the same for each.
func (db *DB) copyParquet(ctx context.Context, dir string, overwrite bool, query, partitionBy string) (ExportReport, error) {
	var rep ExportReport
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
	// The export holds what models and tools wrote: private to the user,
	// like the trajectories it came from. DuckDB creates the partitions
	// and files with the umask's modes; inside a 0700 directory nobody
	// else can reach them meanwhile, and they are narrowed once written.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return rep, fmt.Errorf("export to %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return rep, fmt.Errorf("export to %s: %w", dir, err)
	}
	q := "COPY (" + query + ") TO " + quoteString(dir) +
		" (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (" + partitionBy + "), OVERWRITE_OR_IGNORE)"
	res, err := db.sql.ExecContext(ctx, q)
	if err != nil {
		return rep, fmt.Errorf("export to %s: %w", dir, err)
	}
	rep.Events, _ = res.RowsAffected()
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o700)
		}
		rel, _ := filepath.Rel(dir, p)
		rep.Files = append(rep.Files, rel)
		return os.Chmod(p, 0o600)
	})
	if err != nil {
		return rep, fmt.Errorf("export to %s: %w", dir, err)
	}
	return rep, nil
}

// insertParquet adds the events of Parquet files written by ExportParquet,
// replacing the rows of the trajectory files they came from, and returns
// how many it added. A Parquet file without the schema's columns is
// refused, naming the column.
func insertParquet(ctx context.Context, tx *sql.Tx, files []string) (int, error) {
	if len(files) == 0 {
		return 0, nil
	}
	src := "read_parquet([" + strings.Join(quoteAll(files), ", ") + "], hive_partitioning = false, union_by_name = true)"
	fail := func(err error) (int, error) {
		return 0, fmt.Errorf("load %s: %w", describeFiles(files), err)
	}
	rows, err := tx.QueryContext(ctx, "SELECT column_name FROM (DESCRIBE SELECT * FROM "+src+")")
	if err != nil {
		return fail(err)
	}
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fail(err)
		}
		have[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	cols := append(Columns(), where()...)
	sel := make([]string, len(cols))
	for i, c := range cols {
		if c == lineColumn && !have[c.Name] {
			// An export made before events carried their line.
			sel[i] = "CAST(NULL AS " + c.Type + ") AS " + quoteIdent(c.Name)
			continue
		}
		if !have[c.Name] {
			return fail(fmt.Errorf("column %q is missing: this is not a retrace export of this version; export the trajectories again with retrace export", c.Name))
		}
		sel[i] = "CAST(" + quoteIdent(c.Name) + " AS " + c.Type + ") AS " + quoteIdent(c.Name)
	}
	// The Parquet is read once into a temporary table and then split by
	// type into the tables the views read.
	if _, err := tx.ExecContext(ctx, "CREATE OR REPLACE TEMP TABLE parquet_load AS SELECT "+strings.Join(sel, ", ")+" FROM "+src); err != nil {
		return fail(err)
	}
	defer tx.ExecContext(ctx, "DROP TABLE IF EXISTS parquet_load")
	var n int64
	for _, t := range trajectory.EventTypes() {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+typeTable(t)+" WHERE file IN (SELECT DISTINCT file FROM parquet_load)"); err != nil {
			return fail(err)
		}
		var own []string
		for _, c := range append(typeColumns(t), where()...) {
			own = append(own, quoteIdent(c.Name))
		}
		res, err := tx.ExecContext(ctx, "INSERT INTO "+typeTable(t)+" SELECT "+strings.Join(own, ", ")+
			" FROM parquet_load WHERE type = "+quoteString(string(t)))
		if err != nil {
			return fail(err)
		}
		added, _ := res.RowsAffected()
		n += added
	}
	var read int64
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM parquet_load").Scan(&read); err != nil {
		return fail(err)
	}
	if read != n {
		return fail(fmt.Errorf("%d of %d rows have an event type this retrace does not know; load them with the retrace version that exported them", read-n, read))
	}
	return int(n), nil
}
