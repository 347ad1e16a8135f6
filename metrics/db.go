package metrics

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	// The duckdb driver registers itself with database/sql as "duckdb".
	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/retrace-dev/retrace/trajectory"
)

//go:embed sql/*.sql
var metricFiles embed.FS

//go:embed views.sql
var viewsSQL string

// ErrUnknownMetric is returned by Metric for a name Metrics does not list.
var ErrUnknownMetric = errors.New("unknown metric")

// Options configure Open.
type Options struct {
	// Path is a database file to keep between calls; empty means in memory.
	Path string
	// Lenient skips malformed lines (counting them per file) instead of
	// failing the load on the first one.
	Lenient bool
}

// DB is an embedded DuckDB database holding loaded trajectories and the
// views over them. It is safe for concurrent queries.
type DB struct {
	sql  *sql.DB
	opts Options
}

// Table is a query result.
type Table struct {
	Columns []string
	Rows    [][]any
}

// FileReport says what Load did with one file.
type FileReport struct {
	File string
	// Events is the number of events loaded.
	Events int
	// Skipped counts the malformed lines left out (Lenient only).
	Skipped int
	// FirstSkipped is the first skipped line's error, nil when none.
	FirstSkipped error
	// Warnings are the decoder's warnings, such as a torn last line.
	Warnings []trajectory.Warning
}

// LoadReport says what Load did.
type LoadReport struct {
	Files  []FileReport
	Events int
}

// Skipped returns the number of lines left out over all files.
func (r LoadReport) Skipped() int {
	n := 0
	for _, f := range r.Files {
		n += f.Skipped
	}
	return n
}

// Open opens the database (creating the table and views when missing).
func Open(ctx context.Context, opts Options) (*DB, error) {
	db, err := sql.Open("duckdb", opts.Path)
	if err != nil {
		return nil, fmt.Errorf("open metrics database %q: %w", opts.Path, err)
	}
	var cols []string
	for _, c := range Columns() {
		cols = append(cols, quoteIdent(c.Name)+" "+c.Type)
	}
	cols = append(cols, "file VARCHAR")
	stmts := "CREATE TABLE IF NOT EXISTS raw_events (" + strings.Join(cols, ", ") + ");\n" + viewsSQL
	if _, err := db.ExecContext(ctx, stmts); err != nil {
		db.Close()
		return nil, fmt.Errorf("create metrics schema in %q: %w (a database file from another retrace version may need deleting)", opts.Path, err)
	}
	return &DB{sql: db, opts: opts}, nil
}

// Close closes the database.
func (db *DB) Close() error { return db.sql.Close() }

// Load reads the trajectories that paths name (files, directories, globs,
// as trajectory.Expand resolves them). A file loaded before into the same
// database is replaced, so loading twice does not double count. In strict
// mode a malformed line fails the load with a *trajectory.LineError naming
// file:line, before anything of that file is loaded.
func (db *DB) Load(ctx context.Context, paths ...string) (LoadReport, error) {
	var rep LoadReport
	files, err := trajectory.Expand(paths...)
	if err != nil {
		return rep, err
	}
	tmp, err := os.MkdirTemp("", "retrace-metrics-")
	if err != nil {
		return rep, fmt.Errorf("load: %w", err)
	}
	defer os.RemoveAll(tmp)
	// One read_json over every file is much faster than one per file.
	var srcs []string
	renamed := map[string]string{}
	for i, f := range files {
		fr, src, err := db.check(f, filepath.Join(tmp, fmt.Sprintf("%d.jsonl", i)))
		if err != nil {
			return rep, err
		}
		rep.Files = append(rep.Files, fr)
		srcs = append(srcs, src)
		if src != f {
			renamed[src] = f
		}
	}
	counts, err := db.insert(ctx, files, srcs, renamed)
	if err != nil {
		return rep, err
	}
	for i := range rep.Files {
		rep.Files[i].Events = counts[rep.Files[i].File]
		rep.Events += rep.Files[i].Events
	}
	return rep, nil
}

// check validates file with the trajectory Decoder and returns the path
// DuckDB should read: file itself when every line decodes, otherwise a
// copy at clean without the bad lines (lenient) or the torn last line.
func (db *DB) check(file, clean string) (FileReport, string, error) {
	fr := FileReport{File: file}
	fh, err := os.Open(file)
	if err != nil {
		return fr, "", fmt.Errorf("load: %w", err)
	}
	defer fh.Close()
	// The Decoder reads invalid UTF-8 in strings as U+FFFD, as encoding/json
	// does, but DuckDB rejects it; such files are loaded from a copy with
	// the same replacement.
	u := &utf8Check{r: fh}
	dec := trajectory.NewDecoder(u, file)
	bad := map[int]bool{}
	for {
		_, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var le *trajectory.LineError
		if errors.As(err, &le) {
			// The Decoder stops at binary data, so the lines after it were
			// never checked: even a lenient load cannot keep them.
			if errors.Is(err, trajectory.ErrBinary) {
				return fr, "", fmt.Errorf("load: %w; this does not look like a trajectory, leave it out of the paths", err)
			}
			if !db.opts.Lenient {
				return fr, "", fmt.Errorf("load: %w; fix the line or pass --lenient to skip bad lines", err)
			}
			bad[le.Line] = true
			fr.Skipped++
			if fr.FirstSkipped == nil {
				fr.FirstSkipped = err
			}
			continue
		}
		if err != nil {
			return fr, "", fmt.Errorf("load: %w", err)
		}
	}
	fr.Warnings = dec.Warnings()
	for _, w := range fr.Warnings {
		bad[w.Line] = true
	}
	if len(bad) == 0 && !u.invalid {
		return fr, file, nil
	}
	if err := copyWithout(file, clean, bad); err != nil {
		return fr, "", fmt.Errorf("load: %w", err)
	}
	return fr, clean, nil
}

// utf8Check passes reads through and notes whether the bytes are valid
// UTF-8, carrying a sequence cut at a read boundary into the next check.
type utf8Check struct {
	r       io.Reader
	carry   []byte
	invalid bool
}

func (u *utf8Check) Read(b []byte) (int, error) {
	n, err := u.r.Read(b)
	if !u.invalid {
		buf := append(u.carry, b[:n]...)
		u.carry = u.carry[:0]
		// Keep an incomplete trailing sequence for the next read.
		cut := len(buf)
		for i := len(buf) - 1; i >= 0 && i >= len(buf)-3; i-- {
			if utf8.RuneStart(buf[i]) {
				if !utf8.FullRune(buf[i:]) {
					cut = i
				}
				break
			}
		}
		if !utf8.Valid(buf[:cut]) {
			u.invalid = true
		}
		u.carry = append(u.carry, buf[cut:]...)
		if errors.Is(err, io.EOF) && len(u.carry) > 0 {
			u.invalid = true
		}
	}
	return n, err
}

// copyWithout copies src to dst leaving out the lines (from 1) in skip,
// numbering lines as the Decoder does, and replacing invalid UTF-8 with
// U+FFFD as the Decoder reads it.
func copyWithout(src, dst string, skip map[int]bool) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(out, 64<<10)
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 && !skip[line] && len(bytes.TrimSpace(b)) > 0 {
			w.Write(bytes.ToValidUTF8(b, []byte("\uFFFD")))
			if b[len(b)-1] != '\n' {
				w.WriteByte('\n')
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			out.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// insert replaces files' rows with the events read from srcs, in one
// transaction, and returns the number of events loaded per file.
func (db *DB) insert(ctx context.Context, files, srcs []string, renamed map[string]string) (map[string]int, error) {
	fail := func(err error) (map[string]int, error) {
		return nil, fmt.Errorf("load %s: %w", strings.Join(files, ", "), err)
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	fileList := sqlList(files)
	if _, err := tx.ExecContext(ctx, "DELETE FROM raw_events WHERE file IN "+fileList); err != nil {
		return fail(err)
	}
	q := "INSERT INTO raw_events SELECT * FROM read_json([" + strings.Join(quoteAll(srcs), ", ") +
		"], format = 'newline_delimited', filename = true, columns = " + columnsSQL(Columns()) + ")"
	if _, err := tx.ExecContext(ctx, q); err != nil {
		return fail(err)
	}
	for src, f := range renamed {
		if _, err := tx.ExecContext(ctx, "UPDATE raw_events SET file = "+quoteString(f)+" WHERE file = "+quoteString(src)); err != nil {
			return fail(err)
		}
	}
	rows, err := tx.QueryContext(ctx, "SELECT file, count(*) FROM raw_events WHERE file IN "+fileList+" GROUP BY file")
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var f string
		var n int
		if err := rows.Scan(&f, &n); err != nil {
			return fail(err)
		}
		counts[f] = n
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	rows.Close()
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return counts, nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = quoteString(s)
	}
	return out
}

func sqlList(ss []string) string { return "(" + strings.Join(quoteAll(ss), ", ") + ")" }

// Query runs sql and returns its result. A bad statement's error carries
// DuckDB's message, which names the position.
func (db *DB) Query(ctx context.Context, query string) (Table, error) {
	var t Table
	rows, err := db.sql.QueryContext(ctx, query)
	if err != nil {
		return t, fmt.Errorf("query: %w", err)
	}
	defer rows.Close()
	t.Columns, err = rows.Columns()
	if err != nil {
		return t, fmt.Errorf("query: %w", err)
	}
	for rows.Next() {
		row := make([]any, len(t.Columns))
		ptrs := make([]any, len(row))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return t, fmt.Errorf("query: %w", err)
		}
		t.Rows = append(t.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return t, fmt.Errorf("query: %w", err)
	}
	return t, nil
}

// Metrics returns the names of the named metrics, sorted.
func Metrics() []string {
	entries, _ := metricFiles.ReadDir("sql")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".sql"))
	}
	sort.Strings(names)
	return names
}

// MetricSQL returns the SQL of a named metric, header comment included.
func MetricSQL(name string) (string, error) {
	for _, n := range Metrics() {
		if n == name {
			b, err := metricFiles.ReadFile("sql/" + name + ".sql")
			return string(b), err
		}
	}
	return "", fmt.Errorf("%w %q; use one of %s", ErrUnknownMetric, name, strings.Join(Metrics(), ", "))
}

// Metric runs the named metric.
func (db *DB) Metric(ctx context.Context, name string) (Table, error) {
	q, err := MetricSQL(name)
	if err != nil {
		return Table{}, err
	}
	t, err := db.Query(ctx, q)
	if err != nil {
		return t, fmt.Errorf("metric %s: %w", name, err)
	}
	return t, nil
}
