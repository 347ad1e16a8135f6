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
// an export never mixes with an older one. Each partition holds one or
// more files per event type (tool_call_0.parquet, tool_call_1.parquet,
// ...), each a range of sessions, its rows ordered by session and seq
// (see copyParquet), and a file lake.json names the layout's version
// (LakeVersion).
func (db *DB) ExportParquet(ctx context.Context, dir string, overwrite bool) (ExportReport, error) {
	return db.copyParquet(ctx, dir, overwrite, func(t trajectory.EventType, where string) string {
		return "SELECT " + wideColumns(t, "") + ", CAST(ts AS DATE) AS date FROM " + typeTable(t) + " WHERE " + where
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

// exportPartEvents is about the most events one part of an export sorts
// and writes (a part ends at the first session past it, so a session is
// never split). It bounds the export's memory whatever the corpus's size:
// DuckDB sorts one part's rows of one type at a time, within its cap,
// rather than the whole corpus's rows of a type, which spilled past the
// cap and took the process some 700 MB above it at 10M events. A corpus
// of fewer events is one part, and its lake a file per type in each
// partition; each part adds a file per type to each partition it
// reaches, and a reader of the whole lake pays for their footers. Parts
// of a quarter, half and whole million events peaked at 555, 631 and 700
// MB at 10M events (at exportMemory), for 85, 72 and 97 CPU-s.
// Tests make it small.
var exportPartEvents int64 = 1 << 19

// exportPart is a range of sessions an export writes at once: the
// sessions from first up to the next part's first (the last part has no
// end), and the events they hold.
type exportPart struct {
	first  string
	events int64
}

// copyParquet writes the rows of query(t, where) for every event type t
// to dir as zstd Parquet partitioned by the columns partitionBy, and
// writes lake.json. query puts where, a condition on the session column,
// in its WHERE clause. It refuses a directory with files in it unless
// overwrite is set (then it is emptied first), and reports the events and
// files written. Both Parquet exports go through it, so the layout's rules
// are the same for each.
//
// Files of one type each, in each partition, rows ordered by session and
// seq, are what makes the lake cheap to read: a reader of one event type (each
// raw table of a database reading it in place, lake.go) skips the other
// types' files by the min and max of their type column, and one who asks
// for a session skips the files and row groups whose session range
// leaves it out.
//
// The export streams, part by part (exportParts): each part is a range of
// sessions of about exportPartEvents events, and one COPY per type writes
// its rows, sorted by session and seq, to a directory of its own inside
// dir; its files are then moved into their partitions, numbered after the
// files earlier parts put there (tool_call_0.parquet, tool_call_1.parquet,
// ...), so the files of a type in a partition hold ranges of sessions in
// the order of their numbers. No statement sorts more than a part's rows
// of one type, and the memory does not grow with the corpus (with
// exportMemory): through a store, the process peaked at 470 to 509 MB at
// 1M events and 533 to 631 MB at 10M, where one sort of each type's rows
// of the whole corpus, spilling past boundedMemory, peaked at 693 MB and
// 920 to 1,252 MB, for about the same CPU (10M: 89 to 92 CPU-s against
// 96).
//
// Progress, when the database's Options set it, is called after each part
// with Phase "export" and the events written of the total.
func (db *DB) copyParquet(ctx context.Context, dir string, overwrite bool, query func(t trajectory.EventType, where string) string, partitionBy string) (ExportReport, error) {
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
	parts, total, err := db.exportParts(ctx)
	if err != nil {
		return rep, fmt.Errorf("export to %s: %w", dir, err)
	}
	// A part is written to a directory of its own, whose name no reader
	// of the lake takes for a partition, and its files are then moved.
	staging := filepath.Join(dir, ".part")
	defer os.RemoveAll(staging)
	next := map[string]int{}
	for i := range parts {
		where := partWhere(parts, i)
		for _, t := range trajectory.EventTypes() {
			q := "COPY (" + query(t, where) + " ORDER BY session, seq) TO " + quoteString(staging) +
				" (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (" + partitionBy + "), OVERWRITE_OR_IGNORE," +
				" FILENAME_PATTERN " + quoteString(string(t)+"_{i}") + ", ROW_GROUP_SIZE " + fmt.Sprint(exportRowGroupSize) + ")"
			res, err := db.sql.ExecContext(ctx, q)
			if err != nil {
				return rep, fmt.Errorf("export to %s: %w", dir, err)
			}
			n, _ := res.RowsAffected()
			rep.Events += n
		}
		if err := movePart(staging, dir, next); err != nil {
			return rep, fmt.Errorf("export to %s: %w", dir, err)
		}
		if db.opts.Progress != nil {
			db.opts.Progress(Progress{Phase: "export", Done: rep.Events, Total: total})
		}
	}
	if rep.Events != total {
		return rep, fmt.Errorf("export to %s: wrote %d of the %d events loaded", dir, rep.Events, total)
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

// exportParts cuts the loaded sessions, in order, into the parts an
// export writes one at a time, each of about exportPartEvents events, and
// returns them and the events loaded. A corpus with no events is one part
// of none.
func (db *DB) exportParts(ctx context.Context) ([]exportPart, int64, error) {
	rows, err := db.sql.QueryContext(ctx, "SELECT session, count(*) FROM raw_events GROUP BY session ORDER BY session NULLS LAST")
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	parts := []exportPart{{}}
	var total int64
	for rows.Next() {
		var session sql.NullString
		var n int64
		if err := rows.Scan(&session, &n); err != nil {
			return nil, 0, err
		}
		total += n
		last := &parts[len(parts)-1]
		// A NULL session sorts last and stays in the last part, which
		// has no end and takes them (see partWhere).
		if last.events > 0 && last.events+n > exportPartEvents && session.Valid {
			parts = append(parts, exportPart{first: session.String})
			last = &parts[len(parts)-1]
		}
		last.events += n
	}
	return parts, total, rows.Err()
}

// partWhere returns the condition on the session column that selects the
// rows of parts[i]: from its first session to the next part's first. The
// first part has no start and the last no end, and the last takes any row
// without a session, so the parts hold every row once.
func partWhere(parts []exportPart, i int) string {
	var conds []string
	if i > 0 {
		conds = append(conds, "session >= "+quoteString(parts[i].first))
	}
	if i < len(parts)-1 {
		conds = append(conds, "session < "+quoteString(parts[i+1].first))
	}
	switch {
	case len(conds) == 0:
		return "true"
	case i == len(parts)-1:
		return "(" + conds[0] + " OR session IS NULL)"
	}
	return strings.Join(conds, " AND ")
}

// movePart moves the Parquet files a part wrote below staging into the
// same partitions below dir, each named for its type and numbered after
// the files of that type the partition holds (next counts them, by
// partition and type), and empties staging.
func movePart(staging, dir string, next map[string]int) error {
	var files []string
	err := filepath.WalkDir(staging, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == staging {
			return fs.SkipAll // a part of no rows writes nothing
		}
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ParquetExt) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, f := range files {
		rel, err := filepath.Rel(staging, f)
		if err != nil {
			return err
		}
		t, ok := lakeFileType(filepath.Base(rel))
		if !ok {
			return fmt.Errorf("an export wrote %s, which is not named for its event type", rel)
		}
		part := filepath.Dir(rel)
		key := filepath.Join(part, string(t))
		to := filepath.Join(dir, part, fmt.Sprintf("%s_%d%s", t, next[key], ParquetExt))
		next[key]++
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			return err
		}
		if err := os.Rename(f, to); err != nil {
			return err
		}
	}
	return os.RemoveAll(staging)
}

// exportMemory is DuckDB's memory_limit while an export writes, unless
// Options.MemoryLimit sets one: lower than boundedMemory, because an
// export sorts a part at a time (exportPartEvents) and needs little
// memory to do so, and what DuckDB holds beyond that is blocks of the
// tables it read, kept in case they are read again. At 10M events, in
// parts of half a million, the process peaked at 631 MB with it, and at
// 869 MB at boundedMemory. Without a store (an in-memory database, whose
// tables are spilled past the cap and read back for each part), the
// export after a 10M-event load peaked at about 755 MB with it, against
// 911 MB at boundedMemory, for more CPU: 195 CPU-s for load and export
// against 168 (the load alone peaks at about 950 MB).
const exportMemory = "256MB"

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
	if db.opts.MemoryLimit == "" {
		if err := db.limitMemory(ctx, ""); err != nil {
			return nil, err
		}
		set = append(set, "SET memory_limit = "+quoteString(exportMemory))
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
