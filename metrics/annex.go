package metrics

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
)

// storeAnnexSQL creates the table of annexes: what a caller derived from
// the events of one file a store holds (the detectors' findings over its
// sessions), kept beside the rows under the file's mark as the store knew
// it then (size, mtime, inode, head and tail hashes, stop; see
// storeFilesSQL). An annex is read back only while store_files holds the
// same mark, so a file that changed, grew or was replaced never matches
// the annex of its old bytes. kind names what the value is, so that more
// than one caller can keep annexes; value is the caller's, opaque here.
//
// It is made by the first KeepAnnexes, not with the store, so a store
// without one is of the same version and reads as holding no annex.
const storeAnnexSQL = "CREATE TABLE IF NOT EXISTS store_annex (kind VARCHAR, file VARCHAR, size BIGINT, mtime BIGINT, inode BIGINT, head BIGINT, tail BIGINT, stop BIGINT, value VARCHAR);\n"

// Mark is what a store knows of a trajectory file it holds, as it was
// when the store last read it: its stat (size, mtime in Unix nanoseconds,
// inode), the offset just past its last complete line (Stop) and hashes
// of the bytes at each end before Stop. Two marks are equal only for the
// same bytes read.
type Mark struct {
	Size, Mtime, Inode, Head, Tail, Stop int64
}

// HeldFile is a file a store holds and how much of it its rows are.
type HeldFile struct {
	Mark Mark
	// Whole says that the rows are every event of the file up to
	// Mark.Stop: no line was skipped, no event dropped and no session left
	// out as a copy of one in another file. Only then is what was derived
	// from the file's events alone a function of its mark.
	Whole bool
}

// HeldFiles returns the files a store holds, by the name the file column
// holds (trajectory.Name), with their marks; nil for a database in
// memory, which keeps nothing between calls.
func (db *DB) HeldFiles(ctx context.Context) (map[string]HeldFile, error) {
	if db.opts.Path == "" {
		return nil, nil
	}
	db.dmu.Lock()
	defer db.dmu.Unlock()
	held, err := db.heldFiles(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]HeldFile, len(held))
	for f, m := range held {
		whole := m.notes == ""
		if !whole {
			var n fileNotes
			whole = json.Unmarshal([]byte(m.notes), &n) == nil &&
				n.Skipped == 0 && n.Dropped == 0 && n.DuplicateEvents == 0 && len(n.Duplicates) == 0
		}
		out[f] = HeldFile{Mark: markOf(m), Whole: whole}
	}
	return out, nil
}

func markOf(m fileMark) Mark {
	return Mark{Size: m.size, Mtime: m.mtime, Inode: m.inode, Head: m.head, Tail: m.tail, Stop: m.stop}
}

// Annex is a value of kind derived from the events of File, as the store
// held them under Mark.
type Annex struct {
	File  string
	Mark  Mark
	Value string
}

// EachAnnex calls fn with each annex of kind whose file the store holds
// now under the mark it was kept with, in no particular order, one at a
// time, so that a corpus of many files is never held whole; none for a
// database in memory or a store that never kept one. fn must not use db:
// the rows hold its one connection. An error of fn stops the walk and is
// returned.
func (db *DB) EachAnnex(ctx context.Context, kind string, fn func(Annex) error) error {
	if db.opts.Path == "" {
		return nil
	}
	db.dmu.Lock()
	defer db.dmu.Unlock()
	var n int
	if err := db.sql.QueryRowContext(ctx, "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND table_name = 'store_annex'").Scan(&n); err != nil {
		return fmt.Errorf("annexes: %w", err)
	}
	if n == 0 {
		return nil
	}
	// DuckDB hands a query's result over once it has made all of it: the
	// annexes of 100k files (some 200 MB at 10M events) were held whole in
	// its memory, past its cap. So they are asked for a page of rows at a
	// time, in one transaction, so that every page sees the same store.
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("annexes: %w", err)
	}
	defer tx.Rollback()
	var last int64
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(rowid), -1) FROM store_annex").Scan(&last); err != nil {
		return fmt.Errorf("annexes: %w", err)
	}
	for from := int64(0); from <= last; from += annexPage {
		if err := eachAnnexIn(ctx, tx, kind, from, from+annexPage, fn); err != nil {
			return err
		}
	}
	return nil
}

// annexPage is how many rows of store_annex EachAnnex asks for at once:
// a few MB of annexes.
var annexPage int64 = 4096

// eachAnnexIn calls fn with each annex of kind among the rows from (with)
// to (without) of store_annex whose file the store holds under the mark
// it was kept with.
func eachAnnexIn(ctx context.Context, tx *sql.Tx, kind string, from, to int64, fn func(Annex) error) error {
	rows, err := tx.QueryContext(ctx, `SELECT a.file, a.size, a.mtime, a.inode, a.head, a.tail, a.stop, a.value
		FROM store_annex a JOIN store_files f ON a.file = f.file AND a.size = f.size AND a.mtime = f.mtime
		AND a.inode = f.inode AND a.head = f.head AND a.tail = f.tail AND a.stop = f.stop
		WHERE a.kind = ? AND a.rowid >= ? AND a.rowid < ?`, kind, from, to)
	if err != nil {
		return fmt.Errorf("annexes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var a Annex
		m := &a.Mark
		if err := rows.Scan(&a.File, &m.Size, &m.Mtime, &m.Inode, &m.Head, &m.Tail, &m.Stop, &a.Value); err != nil {
			return fmt.Errorf("annexes: %w", err)
		}
		if err := fn(a); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("annexes: %w", err)
	}
	return nil
}

// KeepsAnnexes reports whether KeepAnnexes keeps them: the database is
// a store opened for writing.
func (db *DB) KeepsAnnexes() bool { return db.opts.Path != "" && !db.opts.ReadOnly }

// annexBatch is how many annexes one INSERT statement writes.
const annexBatch = 256

// KeepAnnexes keeps annexes of kind in the store, in one transaction,
// replacing those of kind of the same files, and drops the annexes of
// files the store no longer holds. The annexes are taken one at a time,
// in batches, so that a caller can stream many from a file. With no
// annex it does nothing. An annex of File "" is of the whole corpus (see
// RowsMark and CorpusAnnex). A store opened read-only returns ErrStale
// and keeps nothing; a database in memory keeps nothing.
//
// An annex whose mark is not the store's mark of its file now is kept
// and never read back (see EachAnnex): the caller derived it from bytes
// the store no longer holds.
func (db *DB) KeepAnnexes(ctx context.Context, kind string, annexes iter.Seq[Annex]) error {
	if db.opts.Path == "" {
		return nil
	}
	next, stop := iter.Pull(annexes)
	defer stop()
	first, ok := next()
	if !ok {
		return nil
	}
	if db.opts.ReadOnly {
		return fmt.Errorf("keep annexes: %w", ErrStale)
	}
	db.dmu.Lock()
	defer db.dmu.Unlock()
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("keep annexes: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, storeAnnexSQL+"DELETE FROM store_annex WHERE file <> '' AND file NOT IN (SELECT file FROM store_files);"); err != nil {
		return fmt.Errorf("keep annexes: %w", err)
	}
	// The new annexes go to a table of their own first, and replace the
	// old ones in one statement: a DELETE per batch scanned every annex
	// kept, once per batch (at 100k files, minutes).
	const fresh = "retrace_annex_fresh"
	if _, err := tx.ExecContext(ctx, "CREATE OR REPLACE TEMP TABLE "+fresh+" AS SELECT * FROM store_annex LIMIT 0"); err != nil {
		return fmt.Errorf("keep annexes: %w", err)
	}
	batch := []Annex{first}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		args := make([]any, 0, len(batch)*9)
		vals := make([]string, len(batch))
		for i, a := range batch {
			m := a.Mark
			args = append(args, kind, a.File, m.Size, m.Mtime, m.Inode, m.Head, m.Tail, m.Stop, a.Value)
			vals[i] = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
		}
		batch = batch[:0]
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+fresh+" VALUES "+strings.Join(vals, ", "), args...); err != nil {
			return fmt.Errorf("keep annexes: %w", err)
		}
		return nil
	}
	for a, ok := next(); ok; a, ok = next() {
		if batch = append(batch, a); len(batch) == annexBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM store_annex WHERE kind = "+quoteString(kind)+" AND file IN (SELECT file FROM "+fresh+");\n"+
		"INSERT INTO store_annex SELECT * FROM "+fresh+";\nDROP TABLE "+fresh); err != nil {
		return fmt.Errorf("keep annexes: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("keep annexes: %w", err)
	}
	return nil
}

// RowsMark returns a mark of every row a store holds: a hash of what it
// knows of every file (store_files: name, mark, lines and notes) and of
// the mode it loaded them in, which the rows are a function of. It is
// false for a database in memory and for a store holding rows loaded from
// Parquet, whose files it does not track.
func (db *DB) RowsMark(ctx context.Context) (string, bool, error) {
	if db.opts.Path == "" || db.fromParquet {
		return "", false, nil
	}
	db.dmu.Lock()
	defer db.dmu.Unlock()
	held, err := db.heldFiles(ctx)
	if err != nil {
		return "", false, err
	}
	names := make([]string, 0, len(held))
	for f := range held {
		names = append(names, f)
	}
	slices.Sort(names)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", storeVersion(), db.heldMode)
	for _, f := range names {
		m := held[f]
		fmt.Fprintf(h, "%s\x00%d %d %d %d %d %d %d\x00%s\x00", f, m.size, m.mtime, m.inode, m.head, m.tail, m.stop, m.lines, m.notes)
	}
	return hex.EncodeToString(h.Sum(nil)), true, nil
}

// CorpusAnnex returns the value of the annex of kind kept for the whole
// corpus (File ""), or "" for none. It says nothing of whether the rows
// changed since: a caller keeps RowsMark in the value and compares.
func (db *DB) CorpusAnnex(ctx context.Context, kind string) (string, error) {
	if db.opts.Path == "" {
		return "", nil
	}
	db.dmu.Lock()
	defer db.dmu.Unlock()
	var n int
	if err := db.sql.QueryRowContext(ctx, "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND table_name = 'store_annex'").Scan(&n); err != nil {
		return "", fmt.Errorf("annexes: %w", err)
	}
	if n == 0 {
		return "", nil
	}
	var v sql.NullString
	err := db.sql.QueryRowContext(ctx, "SELECT value FROM store_annex WHERE kind = ? AND file = ''", kind).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("annexes: %w", err)
	}
	return v.String, nil
}

// SessionsOf returns, of each of files (as the file column names them),
// the sessions db holds rows of: a file held but not whole (HeldFile)
// may hold a copy of a session loaded from another file, whose events
// the load left out of it, and a caller that reads the file again must
// leave the copy out too.
func (db *DB) SessionsOf(ctx context.Context, files []string) (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	if len(files) == 0 {
		return out, nil
	}
	db.dmu.Lock()
	defer db.dmu.Unlock()
	rows, err := db.sql.QueryContext(ctx, "SELECT DISTINCT file, session FROM raw_events WHERE file IN "+sqlList(files))
	if err != nil {
		return nil, fmt.Errorf("sessions of files: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var f, s string
		if err := rows.Scan(&f, &s); err != nil {
			return nil, fmt.Errorf("sessions of files: %w", err)
		}
		if out[f] == nil {
			out[f] = map[string]bool{}
		}
		out[f][s] = true
	}
	return out, rows.Err()
}

// EventFiles returns the trajectory files db holds events of, sorted. A
// store answers from store_sessions, a row per file and session, rather
// than from the file of every event: at 10M events that DISTINCT took
// DuckDB a few hundred MB, which it kept past the query.
func (db *DB) EventFiles(ctx context.Context) ([]string, error) {
	q := "SELECT DISTINCT file FROM raw_events WHERE file IS NOT NULL ORDER BY file"
	if db.opts.Path != "" {
		q = "SELECT DISTINCT file FROM store_sessions WHERE file IS NOT NULL ORDER BY file"
	}
	db.dmu.Lock()
	defer db.dmu.Unlock()
	rows, err := db.sql.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("files of events: %w", err)
	}
	defer rows.Close()
	var files []string
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			return nil, fmt.Errorf("files of events: %w", err)
		}
		files = append(files, f)
	}
	return files, rows.Err()
}

// Counts returns how many sessions and events db holds. A store counts
// the sessions in store_sessions, for the reason EventFiles says.
func (db *DB) Counts(ctx context.Context) (sessions, events int, err error) {
	q := "SELECT count(DISTINCT session), count(*) FROM raw_events"
	if db.opts.Path != "" {
		q = "SELECT (SELECT count(DISTINCT session) FROM store_sessions), (SELECT count(*) FROM raw_events)"
	}
	db.dmu.Lock()
	defer db.dmu.Unlock()
	if err := db.sql.QueryRowContext(ctx, q).Scan(&sessions, &events); err != nil {
		return 0, 0, fmt.Errorf("count the events: %w", err)
	}
	return sessions, events, nil
}

// WithLessMemory runs fn with DuckDB's memory_limit lowered to limit
// while the database runs at the cap Open or a big load set by itself
// (boundedMemory: a store, or an in-memory database holding a load of
// more than lowerCapsBytes, without Options.MemoryLimit), and puts that
// cap back. Some queries hold as much again outside DuckDB's cap as under
// it: at 10M events the detectors' definition_drift took 0.87 GB of RSS
// at the 500MB cap and 0.62 GB at 250MB. A store's rows are on disk, so
// what the lower cap drops is read again at most; an in-memory database
// capped for a big load spills its rows to its temporary directory past
// the cap already (1.6 GB of them at 10M events), so a lower cap writes
// more of them there. The derived tables are made at derivedMemory even
// so (makeDerived): under 250MB they ran out of memory. A smaller load
// in memory keeps its cap, which costs less CPU (see lowerCapsBytes),
// and a cap the user chose is left as it is. fn runs again under the cap
// it had when DuckDB runs out of memory under the lower one, so it must
// be able to start over.
func (db *DB) WithLessMemory(ctx context.Context, limit string, fn func() error) error {
	if db.opts.MemoryLimit != "" || db.opts.Path == "" && !db.lowerCaps.Load() {
		return fn()
	}
	db.dmu.Lock()
	_, err := db.sql.ExecContext(ctx, "SET memory_limit = "+quoteString(limit))
	if err == nil {
		db.setLimit(limit)
	}
	db.dmu.Unlock()
	if err != nil {
		return fmt.Errorf("memory limit: %w", err)
	}
	ferr := fn()
	db.dmu.Lock()
	_, err = db.sql.ExecContext(context.WithoutCancel(ctx), "SET memory_limit = "+quoteString(boundedMemory))
	if err == nil {
		db.setLimit(boundedMemory)
	}
	db.dmu.Unlock()
	if err != nil {
		return errors.Join(ferr, fmt.Errorf("memory limit: %w", err))
	}
	if outOfMemory(ferr) {
		// What does not fit under the lower cap runs again under the
		// cap it had: fn must start over.
		return fn()
	}
	return ferr
}
