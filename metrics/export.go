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
// an export never mixes with an older one. Each partition holds a file per
// event type (tool_call_0.parquet, ...), its rows ordered by session and
// seq (see copyParquet), and a file lake.json names the layout's version
// (LakeVersion).
func (db *DB) ExportParquet(ctx context.Context, dir string, overwrite bool) (ExportReport, error) {
	return db.copyParquet(ctx, dir, overwrite, func(t trajectory.EventType) string {
		return "SELECT " + wideColumns(t, "") + ", CAST(ts AS DATE) AS date FROM " + typeTable(t)
	}, "date")
}

// wideColumns returns the select list of every column of the events view,
// in its order, over the table of type t (its columns named with prefix):
// t's own columns, and a typed NULL for each column t does not carry. An
// export reads each type's table so, not raw_events filtered by type,
// whose union of every table cost it more CPU (at 100k events, 4.2 CPU-s
// against 3.6), and more still under the export's memory cap.
func wideColumns(t trajectory.EventType, prefix string) string {
	own := map[string]bool{}
	for _, c := range tableColumns(t) {
		own[c.Name] = true
	}
	all := append(Columns(), where()...)
	sel := make([]string, len(all))
	for i, c := range all {
		if own[c.Name] {
			sel[i] = prefix + quoteIdent(c.Name)
		} else {
			sel[i] = "CAST(NULL AS " + c.Type + ") AS " + quoteIdent(c.Name)
		}
	}
	return strings.Join(sel, ", ")
}

// exportRowGroupSize is the rows of a Parquet row group an export writes at
// most. Smaller groups let a reader skip more of a file by the min and max
// of session and ts; each group costs a footer entry per column (about 130
// of them). A group of 16,384 rows holds the events of a few hundred
// sessions of one type.
// Tests make it small.
var exportRowGroupSize = 16384

// copyParquet writes the rows of query(t) for every event type t to dir
// as zstd Parquet partitioned by the columns partitionBy, one COPY per
// type, and writes lake.json. It refuses a directory with files in it
// unless overwrite is set (then it is emptied first), and reports the
// events and files written. Both Parquet exports go through it, so the
// layout's rules are the same for each.
//
// One file per type in each partition, rows ordered by session and seq,
// is what makes the lake cheap to read: a reader of one event type (each
// raw table of a database reading it in place, lake.go) skips the other
// types' files by the min and max of their type column, and one who asks
// for a session skips the row groups whose session range leaves it out,
// in each type's file. The memory is bounded: each COPY sorts one type's
// rows, and DuckDB spills that sort to disk past boundedMemory; its
// insertion order need not be kept (the ORDER BY is). Over 1M events
// (BenchmarkExportParquet) the process peaked at 643 MB, the load
// included, where one COPY of every event sorted at once peaked at 4.0
// GB; the price is CPU, 26.9 CPU-s against 15.5 (measured while export
// still read raw_events filtered by type; see wideColumns). Over 100k
// events, reading each type's table: 2.9 CPU-s against 2.0, 197 MB
// against 520 MB.
func (db *DB) copyParquet(ctx context.Context, dir string, overwrite bool, query func(trajectory.EventType) string, partitionBy string) (ExportReport, error) {
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
	restore, err := db.boundExport(ctx)
	if err != nil {
		return rep, fmt.Errorf("export to %s: %w", dir, err)
	}
	defer restore()
	for _, t := range trajectory.EventTypes() {
		q := "COPY (" + query(t) + " ORDER BY session, seq) TO " + quoteString(dir) +
			" (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (" + partitionBy + "), OVERWRITE_OR_IGNORE," +
			" FILENAME_PATTERN " + quoteString(string(t)+"_{i}") + ", ROW_GROUP_SIZE " + fmt.Sprint(exportRowGroupSize) + ")"
		res, err := db.sql.ExecContext(ctx, q)
		if err != nil {
			return rep, fmt.Errorf("export to %s: %w", dir, err)
		}
		n, _ := res.RowsAffected()
		rep.Events += n
	}
	if err := writeLakeManifest(dir, partitionBy); err != nil {
		return rep, fmt.Errorf("export to %s: %w", dir, err)
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o700)
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasSuffix(rel, ParquetExt) {
			rep.Files = append(rep.Files, rel)
		}
		return os.Chmod(p, 0o600)
	})
	if err != nil {
		return rep, fmt.Errorf("export to %s: %w", dir, err)
	}
	return rep, nil
}

// boundExport sets what keeps an export's memory bounded, unless the
// database's options set a limit of their own, and returns what puts the
// settings back.
func (db *DB) boundExport(ctx context.Context) (func(), error) {
	var order, limit string
	if err := db.sql.QueryRowContext(ctx, "SELECT current_setting('preserve_insertion_order')::VARCHAR, current_setting('memory_limit')::VARCHAR").Scan(&order, &limit); err != nil {
		return nil, err
	}
	set := []string{"SET preserve_insertion_order = false"}
	undo := []string{"SET preserve_insertion_order = " + order}
	if db.opts.MemoryLimit == "" && !db.capped {
		if err := db.limitMemory(ctx, ""); err != nil {
			return nil, err
		}
		set = append(set, "SET memory_limit = "+quoteString(boundedMemory))
		undo = append(undo, "SET memory_limit = "+quoteString(limit))
	}
	for _, q := range set {
		if _, err := db.sql.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	return func() {
		for _, q := range undo {
			db.sql.ExecContext(context.Background(), q)
		}
	}, nil
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
