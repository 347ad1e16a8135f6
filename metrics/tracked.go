package metrics

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// loadedFilesSQL creates the table in which a kept database (Options.Path)
// remembers the trajectory files it holds, so that a load answers for
// exactly the runs it is given: file is the name the file column holds
// (trajectory.Name), size and mtime (Unix nanoseconds) what the file was
// when it was read.
const loadedFilesSQL = "CREATE TABLE IF NOT EXISTS loaded_files (file VARCHAR PRIMARY KEY, size BIGINT, mtime BIGINT);\n"

// fileStamp is what a kept database remembers of a file it read.
type fileStamp struct {
	size, mtime int64
}

// stamp returns a regular file's stamp, and false for anything else (a
// stream, a file that cannot be examined), which is read every time.
func stamp(path string) (fileStamp, bool) {
	if path == trajectory.Stdin {
		return fileStamp{}, false
	}
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() {
		return fileStamp{}, false
	}
	return fileStamp{size: info.Size(), mtime: info.ModTime().UnixNano()}, true
}

// tracked is what a load of a kept database decides before it checks
// anything: which files to read, and which it holds as they are.
type tracked struct {
	// read are the files to check and load, unchanged those the database
	// holds as they are now (same path, size and modification time).
	read, unchanged []string
	stamps          map[string]fileStamp
}

// planKept splits files into those a kept database must read and those it
// holds unchanged. A database in memory starts empty, and reads all.
func (db *DB) planKept(ctx context.Context, files []string) (tracked, error) {
	t := tracked{stamps: map[string]fileStamp{}}
	if db.opts.Path == "" {
		t.read = files
		return t, nil
	}
	held := map[string]fileStamp{}
	rows, err := db.sql.QueryContext(ctx, "SELECT file, size, mtime FROM loaded_files")
	if err != nil {
		return t, fmt.Errorf("load: %w", err)
	}
	for rows.Next() {
		var f string
		var s fileStamp
		if err := rows.Scan(&f, &s.size, &s.mtime); err != nil {
			rows.Close()
			return t, fmt.Errorf("load: %w", err)
		}
		held[f] = s
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return t, fmt.Errorf("load: %w", err)
	}
	for _, f := range files {
		s, ok := stamp(f)
		if ok {
			t.stamps[trajectory.Name(f)] = s
		}
		if h, was := held[trajectory.Name(f)]; ok && was && h == s {
			t.unchanged = append(t.unchanged, f)
			continue
		}
		t.read = append(t.read, f)
	}
	return t, nil
}

// priorSessions returns the sessions the unchanged files hold, with their
// highest seq, for the duplicate check of the files read now.
func (db *DB) priorSessions(ctx context.Context, unchanged []string) (map[string]priorSession, error) {
	prior := map[string]priorSession{}
	if len(unchanged) == 0 {
		return prior, nil
	}
	rows, err := db.sql.QueryContext(ctx, "SELECT session, max(seq), min(file) FROM raw_events WHERE file IN "+sqlList(names(unchanged))+" GROUP BY session")
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		var p priorSession
		if err := rows.Scan(&s, &p.max, &p.file); err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		prior[s] = p
	}
	return prior, rows.Err()
}

// forget deletes, in a kept database, the rows of every file that is not
// among keep (the names of this load's trajectory files): a kept database
// answers for the runs given, so a file not given any more is dropped.
// Rows loaded from Parquet carry the names of the files exported, and are
// read again with the Parquet files.
func (db *DB) forget(ctx context.Context, tx *sql.Tx, keep []string) error {
	if db.opts.Path == "" {
		return nil
	}
	// The files to drop are found first and deleted by name: a DELETE
	// with NOT IN over thousands of names is slow in DuckDB, and most
	// loads of a kept database drop nothing.
	kept := make(map[string]bool, len(keep))
	for _, f := range keep {
		kept[f] = true
	}
	rows, err := tx.QueryContext(ctx, "SELECT DISTINCT file FROM raw_events")
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	var gone []string
	for rows.Next() {
		var f sql.NullString
		if err := rows.Scan(&f); err != nil {
			rows.Close()
			return fmt.Errorf("load: %w", err)
		}
		if !kept[f.String] {
			gone = append(gone, f.String)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if len(gone) == 0 {
		return nil
	}
	for _, t := range trajectory.EventTypes() {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+typeTable(t)+" WHERE file IN "+sqlList(gone)+" OR file IS NULL"); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	return nil
}

// remember records, in a kept database, the stamps of the files it now
// holds; a file left out (a lenient load's unreadable or empty file) is not
// remembered, so the next load tries it again.
func (db *DB) remember(ctx context.Context, tx *sql.Tx, t tracked, left map[string]bool) error {
	if db.opts.Path == "" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM loaded_files"); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	var vals []string
	for f, s := range t.stamps {
		if !left[f] {
			vals = append(vals, fmt.Sprintf("(%s, %d, %d)", quoteString(f), s.size, s.mtime))
		}
	}
	if len(vals) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO loaded_files VALUES "+strings.Join(vals, ", ")); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

// names returns the files as the file column names them.
func names(files []string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = trajectory.Name(f)
	}
	return out
}
