package metrics

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// storeFilesSQL creates the table in which a store (Options.Path)
// remembers the trajectory files it holds, so that a load answers for
// exactly the runs it is given without opening a file that did not
// change: file is the name the file column holds (trajectory.Name); size,
// mtime (Unix nanoseconds) and inode what a stat said of it when it was
// read; stop the offset just past its last complete line (a line ending
// in a newline) and lines the number of lines before stop; head and tail
// hashes of the bytes [0, min(stop, edge)) and [max(0, stop-edge), stop),
// which tell a file that grew (a session still being written: the same
// bytes up to stop, more after) from one rewritten; notes what its read
// had to say (fileNotes as JSON, NULL for nothing), said again on every
// load that does not read it again.
const storeFilesSQL = "CREATE TABLE IF NOT EXISTS store_files (file VARCHAR PRIMARY KEY, size BIGINT, mtime BIGINT, inode BIGINT, head BIGINT, tail BIGINT, stop BIGINT, lines BIGINT, notes VARCHAR);\n"

// fileNotes is what the read of a file had to say, which a store keeps so
// that a load that does not read the file again says it too: the
// decoder's warnings, the lines skipped and events dropped of a lenient
// load, and the sessions left out as copies of a session in a file
// before.
type fileNotes struct {
	Warnings        []trajectory.Warning `json:"warnings,omitempty"`
	Skipped         int                  `json:"skipped,omitempty"`
	FirstSkipped    string               `json:"first_skipped,omitempty"`
	Dropped         int                  `json:"dropped,omitempty"`
	FirstDropped    string               `json:"first_dropped,omitempty"`
	DuplicateEvents int                  `json:"duplicate_events,omitempty"`
	Duplicates      []Duplicate          `json:"duplicates,omitempty"`
}

// notesOf returns the notes of a file's report and the duplicates found
// in it, as JSON, or "" when there is nothing to say.
func notesOf(fr FileReport, dups []Duplicate) string {
	n := fileNotes{Warnings: fr.Warnings, Skipped: fr.Skipped, Dropped: fr.Dropped, DuplicateEvents: fr.Duplicates}
	if fr.FirstSkipped != nil {
		n.FirstSkipped = fr.FirstSkipped.Error()
	}
	if fr.FirstDropped != nil {
		n.FirstDropped = fr.FirstDropped.Error()
	}
	for _, d := range dups {
		if d.File == fr.File {
			n.Duplicates = append(n.Duplicates, d)
		}
	}
	if len(n.Warnings) == 0 && n.Skipped == 0 && n.Dropped == 0 && n.DuplicateEvents == 0 && len(n.Duplicates) == 0 {
		return ""
	}
	b, err := json.Marshal(n)
	if err != nil {
		return ""
	}
	return string(b)
}

// report returns the FileReport and the duplicates notes keep of file.
func (n fileNotes) report(file string) (FileReport, []Duplicate) {
	fr := FileReport{File: file, Warnings: n.Warnings, Skipped: n.Skipped, Dropped: n.Dropped, Duplicates: n.DuplicateEvents}
	if n.FirstSkipped != "" {
		fr.FirstSkipped = errors.New(n.FirstSkipped)
	}
	if n.FirstDropped != "" {
		fr.FirstDropped = errors.New(n.FirstDropped)
	}
	return fr, n.Duplicates
}

// edge is the number of bytes at each end of a file's read part that its
// head and tail hashes cover.
const edge = 4096

// fileStamp is what a stat says of a file: a store takes a file whose
// stamp did not change for unchanged, and does not open it.
type fileStamp struct {
	size, mtime, inode int64
}

// fileMark is what a store remembers of a file it read.
type fileMark struct {
	fileStamp
	head, tail, stop, lines int64
	notes                   string
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
	return fileStamp{size: info.Size(), mtime: info.ModTime().UnixNano(), inode: inode(info)}, true
}

// tracked is what a load of a store decides before it checks anything:
// which files to read (whole, or from where an earlier load stopped),
// which it holds as they are, and which it holds but is not given any
// more.
type tracked struct {
	// read are the files to check and load, unchanged those the store
	// holds as they are now (same path, size, modification time and
	// inode).
	read, unchanged []string
	// resume has, by name, the files among read that only grew since the
	// store read them: they are read from their mark's stop on.
	resume map[string]fileMark
	// stamps are the stamps of the regular files given, by name; held
	// what the store remembered of every file before the load.
	stamps map[string]fileStamp
	held   map[string]fileMark
	// gone are the names of the files the store holds and the load is not
	// given: their rows are dropped.
	gone []string
	// stale is set when a read-only store is found not to hold the files
	// given before anything else was looked at (see planKept).
	stale bool
}

// quiet reports whether the load has nothing to change: no file to read
// and none to drop.
func (t tracked) quiet() bool { return len(t.read) == 0 && len(t.gone) == 0 }

// planKept splits files into those a store must read and those it holds
// unchanged. A database in memory starts empty, and reads all. A file
// that grew is read from where the last load stopped, unless observed
// (an Observer sees whole files) or the load is lenient (dropping a
// repeated seq needs the file's events before it; so the file is read
// whole).
func (db *DB) planKept(ctx context.Context, files []string, observed bool) (tracked, error) {
	t := tracked{stamps: map[string]fileStamp{}, resume: map[string]fileMark{}}
	if db.opts.Path == "" {
		t.read = files
		return t, nil
	}
	if db.opts.ReadOnly {
		// A store that holds more or fewer files than given is stale
		// (a file not remembered is read on every load): a read-only
		// load says so without a stat. It is how a read-only load sees
		// files added or removed, and spares it reading what the store
		// holds and a stat per file (0.035 CPU-s at 10k files, of the
		// load that then writes them).
		var n int
		if err := db.sql.QueryRowContext(ctx, "SELECT count(*) FROM store_files").Scan(&n); err != nil {
			return t, fmt.Errorf("load: %w", err)
		}
		if n != len(files) {
			t.stale = true
			return t, nil
		}
	}
	held, err := db.heldFiles(ctx)
	if err != nil {
		return t, err
	}
	t.held = held
	// Rows loaded in another mode (lenient, strict about duplicates) are
	// not this load's: every file is read again.
	same := db.heldMode == db.mode()
	given := make(map[string]bool, len(files))
	for _, f := range files {
		name := trajectory.Name(f)
		given[name] = true
		s, ok := stamp(f)
		if ok {
			t.stamps[name] = s
		}
		h, was := held[name]
		was = was && same
		switch {
		case ok && was && h.fileStamp == s:
			t.unchanged = append(t.unchanged, f)
			continue
		case ok && was && !observed && !db.opts.Lenient && s.inode == h.inode && s.size > h.size && h.stop > 0 && sameEdges(f, h):
			t.resume[name] = h
		}
		t.read = append(t.read, f)
	}
	for name := range held {
		if !given[name] {
			t.gone = append(t.gone, name)
		}
	}
	return t, nil
}

// heldFiles returns what the store remembers of the files it holds.
func (db *DB) heldFiles(ctx context.Context) (map[string]fileMark, error) {
	held := map[string]fileMark{}
	rows, err := db.sql.QueryContext(ctx, "SELECT file, size, mtime, inode, head, tail, stop, lines, notes FROM store_files")
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var f string
		var m fileMark
		var notes sql.NullString
		if err := rows.Scan(&f, &m.size, &m.mtime, &m.inode, &m.head, &m.tail, &m.stop, &m.lines, &notes); err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		m.notes = notes.String
		held[f] = m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	return held, nil
}

// sameEdges reports whether file still has, at both ends of the part a
// store read of it, the bytes it had then: it only grew.
func sameEdges(file string, m fileMark) bool {
	fh, err := os.Open(file)
	if err != nil {
		return false
	}
	defer fh.Close()
	head, tail, err := edges(fh, m.stop, nil)
	return err == nil && head == m.head && tail == m.tail
}

// edges returns the hashes of the first and last edge bytes before stop,
// read into buf (nil: a buffer of its own).
func edges(r io.ReaderAt, stop int64, buf []byte) (head, tail int64, err error) {
	if len(buf) < edge {
		buf = make([]byte, edge)
	}
	sum := func(off, n int64) (int64, error) {
		buf := buf[:n]
		if _, err := r.ReadAt(buf, off); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
			return 0, err
		}
		h := fnv.New64a()
		h.Write(buf)
		return int64(h.Sum64()), nil
	}
	if head, err = sum(0, min(stop, edge)); err != nil {
		return 0, 0, err
	}
	tail, err = sum(max(0, stop-edge), min(stop, edge))
	return head, tail, err
}

// mark returns what a store remembers of file, read up to s.size, with
// lines the number of newlines before s.size: where its last complete
// line ends, and the hashes of the bytes before. buf is a buffer to use,
// returned grown for the next call: a store's first load marks every
// file.
func mark(file string, s fileStamp, lines int64, buf []byte) (fileMark, []byte, error) {
	m := fileMark{fileStamp: s, lines: lines}
	fh, err := os.Open(file)
	if err != nil {
		return m, buf, err
	}
	defer fh.Close()
	if len(buf) < edge {
		buf = make([]byte, edge)
	}
	// The last newline before size, read backwards a block at a time: a
	// file of whole lines ends with one.
	for end := s.size; end > 0; {
		start := max(0, end-int64(len(buf)))
		n, err := fh.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return m, buf, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			m.stop = start + int64(i) + 1
			break
		}
		end = start
	}
	m.head, m.tail, err = edges(fh, m.stop, buf)
	return m, buf, err
}

// storeSessionsSQL creates the table in which a store keeps the
// sessions of every file it holds rows of, with the highest seq of each
// there: what SELECT file, session, max(seq) FROM raw_events GROUP BY
// file, session says, kept so by every load (indexSessions). A load of a
// few files asks the rows held which sessions the files it replaces hold
// (for the derived rows to make again) and which of the sessions it reads
// come from other files (for the seq and duplicate checks): over the
// events, each question scans the file and session of every row held
// (0.5 CPU-s at 1M events, most of adding 1% new files), over this table
// a few thousand rows.
const storeSessionsSQL = "CREATE TABLE IF NOT EXISTS store_sessions (file VARCHAR, session VARCHAR, max_seq BIGINT);\n"

// indexSessions brings store_sessions up to date within a load's
// transaction, once its rows are in: made again from every row (full: a
// new store, or rows from Parquet, whose files it does not track), or
// else the entries of the files read and of those gone replaced by what
// the rows of the files read now say.
func indexSessions(ctx context.Context, tx *sql.Tx, read, gone []string, full bool) error {
	q := "DELETE FROM store_sessions;\nINSERT INTO store_sessions SELECT file, session, max(seq) FROM raw_events GROUP BY file, session"
	if !full {
		forgotten := append(slices.Clone(read), gone...)
		if len(forgotten) == 0 {
			return nil
		}
		in, err := fileSet(ctx, tx, "retrace_forgotten", forgotten)
		if err != nil {
			return err
		}
		q = "DELETE FROM store_sessions WHERE file " + in
		if len(read) > 0 {
			if in, err = fileSet(ctx, tx, "retrace_files", read); err != nil {
				return err
			}
			q += ";\nINSERT INTO store_sessions SELECT file, session, max(seq) FROM raw_events WHERE file " + in + " GROUP BY file, session"
		}
	}
	if _, err := tx.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("load: index the sessions: %w", err)
	}
	return nil
}

// heldSessions returns the sessions the rows a store holds of the files
// named belong to, as store_sessions says.
func heldSessions(ctx context.Context, tx *sql.Tx, files []string) ([]string, error) {
	if len(files) == 0 {
		return nil, nil
	}
	in, err := fileSet(ctx, tx, "retrace_held", files)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, "SELECT DISTINCT session FROM store_sessions WHERE file "+in)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		out = append(out, s.String)
	}
	return out, rows.Err()
}

// otherFiles returns the condition ("IN ...", see fileSet) that a file
// column meets when the file is one a store keeps through a load
// unchanged: not read whole now (whose rows the load inserts), not gone
// (whose rows it deleted), and, but for rows from Parquet (scan), not
// grown (in resume: priorSessions asks for its rows up to the lines the
// store kept). It is made once a load: the files read can be every file
// of the corpus, and a list of them spelled out in each part's query
// cost more than the check.
func otherFiles(ctx context.Context, tx *sql.Tx, whole, gone []string, resume map[string]fileMark, scan bool) (string, error) {
	skip := append(slices.Clone(whole), gone...)
	if !scan {
		for name := range resume {
			skip = append(skip, name)
		}
	}
	cond, err := fileSet(ctx, tx, "retrace_others", skip)
	if err != nil {
		return "", err
	}
	return "NOT " + cond, nil
}

// priorSessions returns, of the sessions named, those a store holds rows
// of from the files others selects (see otherFiles), with their highest
// seq and file, for the duplicate and seq checks of the lines read now.
// The files held unchanged are asked of store_sessions; a grown file (in
// resume), of its rows up to the lines the store kept of it, the lines it
// adds being this load's.
//
// Rows from Parquet (scan) are not in store_sessions while a load runs:
// the rows are asked instead.
func priorSessions(ctx context.Context, tx *sql.Tx, sessions []string, others string, resume map[string]fileMark, scan bool) (map[string]priorSession, error) {
	if len(sessions) == 0 {
		return map[string]priorSession{}, nil
	}
	var q string
	if scan {
		q = "SELECT session, max(seq), min(file) FROM raw_events WHERE session IN " + sqlList(sessions) + " AND file " + others
		for name, m := range resume {
			q += fmt.Sprintf(" AND NOT (file = %s AND line > %d)", quoteString(name), m.lines)
		}
		q += " GROUP BY session"
	} else {
		q = "SELECT session, max_seq AS seq, file FROM store_sessions WHERE session IN " + sqlList(sessions) + " AND file " + others
		for name, m := range resume {
			q += fmt.Sprintf("\nUNION ALL SELECT session, seq, file FROM raw_events WHERE file = %s AND line <= %d AND session IN %s", quoteString(name), m.lines, sqlList(sessions))
		}
		q = "SELECT session, max(seq), min(file) FROM (" + q + ") GROUP BY session"
	}
	return queryPriorSessions(ctx, tx, q)
}

// queryPriorSessions runs q, a query of (session, highest seq, file)
// rows, and returns them by session.
func queryPriorSessions(ctx context.Context, tx *sql.Tx, q string) (map[string]priorSession, error) {
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	defer rows.Close()
	prior := map[string]priorSession{}
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

// forget deletes, in a store, the rows of every file it holds that the
// load is not given: a store answers for the runs given. Rows loaded from
// Parquet carry the names of the files exported, which the store does not
// remember; while it holds any (scan), every file not among keep (the
// names of this load's trajectory files) is looked for in the rows.
func (db *DB) forget(ctx context.Context, tx *sql.Tx, gone, keep []string, scan bool) error {
	if db.opts.Path == "" {
		return nil
	}
	if scan {
		var err error
		if gone, err = filesNotKept(ctx, tx, keep); err != nil {
			return err
		}
	}
	if len(gone) == 0 {
		return nil
	}
	in, err := fileSet(ctx, tx, "retrace_gone", gone)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, t := range trajectory.EventTypes() {
		fmt.Fprintf(&b, "DELETE FROM %s WHERE file %s OR file IS NULL;\n", typeTable(t), in)
	}
	if _, err := tx.ExecContext(ctx, b.String()); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

// filesNotKept returns the files the rows come from that are not among
// keep. They are found first and deleted by name: a DELETE with NOT IN
// over thousands of names is slow in DuckDB.
func filesNotKept(ctx context.Context, tx *sql.Tx, keep []string) ([]string, error) {
	kept := make(map[string]bool, len(keep))
	for _, f := range keep {
		kept[f] = true
	}
	rows, err := tx.QueryContext(ctx, "SELECT DISTINCT file FROM raw_events")
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	defer rows.Close()
	var gone []string
	for rows.Next() {
		var f sql.NullString
		if err := rows.Scan(&f); err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		if !kept[f.String] {
			gone = append(gone, f.String)
		}
	}
	return gone, rows.Err()
}

// remember records, in a store, what it now holds of the files read
// (reports, by name) and forgets the files dropped; a file left out (a
// lenient load's unreadable or empty file) or a stream is not remembered,
// so the next load reads it again.
func (db *DB) remember(ctx context.Context, tx *sql.Tx, t tracked, files []string, reports []FileReport, dups []Duplicate) error {
	if db.opts.Path == "" {
		return nil
	}
	if db.heldMode != db.mode() {
		if _, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO store_meta VALUES ('mode', "+quoteString(db.mode())+")"); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	// A file the store did not hold has no entry to delete.
	forgotten := slices.Clone(t.gone)
	for _, f := range files {
		if _, ok := t.held[trajectory.Name(f)]; ok {
			forgotten = append(forgotten, trajectory.Name(f))
		}
	}
	if len(forgotten) > 0 {
		in, err := fileSet(ctx, tx, "retrace_forgotten", forgotten)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM store_files WHERE file "+in); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	byName := make(map[string]FileReport, len(reports))
	for _, fr := range reports {
		byName[fr.File] = fr
	}
	dupsOf := map[string][]Duplicate{}
	for _, d := range dups {
		dupsOf[d.File] = append(dupsOf[d.File], d)
	}
	// The entries go in as one statement of columns bound as lists: a
	// statement of VALUES is parsed row by row (10k files took 0.3 CPU-s).
	var col struct {
		file, notes                                []string
		size, mtime, inode, head, tail, stop, line []int64
	}
	var buf []byte
	for _, f := range files {
		name := trajectory.Name(f)
		s, ok := t.stamps[name]
		fr, read := byName[name]
		if !ok || !read || fr.Err != nil {
			continue
		}
		lines := int64(fr.lines)
		if h, ok := t.resume[name]; ok {
			lines += h.lines
		}
		var m fileMark
		var err error
		if m, buf, err = mark(f, s, lines, buf); err != nil {
			// Not remembered: read again next time.
			continue
		}
		col.file = append(col.file, name)
		col.notes = append(col.notes, notesOf(fr, dupsOf[name]))
		col.size = append(col.size, m.size)
		col.mtime = append(col.mtime, m.mtime)
		col.inode = append(col.inode, m.inode)
		col.head = append(col.head, m.head)
		col.tail = append(col.tail, m.tail)
		col.stop = append(col.stop, m.stop)
		col.line = append(col.line, m.lines)
	}
	if len(col.file) == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO store_files SELECT unnest(?::VARCHAR[]), unnest(?::BIGINT[]), unnest(?::BIGINT[]),
		unnest(?::BIGINT[]), unnest(?::BIGINT[]), unnest(?::BIGINT[]), unnest(?::BIGINT[]), unnest(?::BIGINT[]), nullif(unnest(?::VARCHAR[]), '')`,
		col.file, col.size, col.mtime, col.inode, col.head, col.tail, col.stop, col.line, col.notes)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

// mode names the options that change which rows a load keeps: a store
// holds the rows of one mode.
func (db *DB) mode() string {
	return fmt.Sprintf("lenient=%t strict_dupes=%t", db.opts.Lenient, db.opts.StrictDupes)
}

// said returns the reports and duplicates the notes of the unchanged
// files keep, for a load to say again.
func (t tracked) said() ([]FileReport, []Duplicate) {
	var reports []FileReport
	var dups []Duplicate
	for _, f := range t.unchanged {
		m := t.held[trajectory.Name(f)]
		if m.notes == "" {
			continue
		}
		var n fileNotes
		if json.Unmarshal([]byte(m.notes), &n) != nil {
			continue
		}
		fr, d := n.report(trajectory.Name(f))
		reports = append(reports, fr)
		dups = append(dups, d...)
	}
	return reports, dups
}

// names returns the files as the file column names them.
func names(files []string) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = trajectory.Name(f)
	}
	return out
}
