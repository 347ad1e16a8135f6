package metrics

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	// The duckdb driver registers itself with database/sql as "duckdb".
	_ "github.com/duckdb/duckdb-go/v2"
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
	// Lenient skips malformed lines and drops events whose seq repeats or
	// goes back (counting both per file), and leaves out unreadable and
	// empty files, instead of refusing the load.
	Lenient bool
	// StrictDupes refuses a load in which a session is in two files (a
	// *LoadError wrapping ErrDuplicateSession) instead of loading it once,
	// from the first file, and listing it in LoadReport.Duplicates.
	StrictDupes bool
	// Stdin is what the path "-" (trajectory.Stdin) reads; nil refuses it.
	Stdin io.Reader
	// Progress, when set, is called as a load goes on, one call at a time.
	Progress func(Progress)
}

// DB is an embedded DuckDB database holding loaded trajectories and the
// views over them. Queries may come from several goroutines; they run one at
// a time on one connection.
type DB struct {
	sql  *sql.DB
	opts Options
}

// Table is a query result.
type Table struct {
	Columns []string
	Rows    [][]any
}

// Open opens the database (creating the table and views when missing).
func Open(ctx context.Context, opts Options) (*DB, error) {
	db, err := sql.Open("duckdb", opts.Path)
	if err != nil {
		return nil, fmt.Errorf("open metrics database %q: %w", opts.Path, err)
	}
	stmts := schemaSQL() + loadedFilesSQL + viewsSQL
	if _, err := db.ExecContext(ctx, stmts); err != nil {
		db.Close()
		return nil, fmt.Errorf("create metrics schema in %q: %w (a database file from another retrace version may need deleting)", opts.Path, err)
	}
	// One connection: DuckDB parallelises inside a statement anyway, and
	// settings and temporary tables a user makes at the query prompt live on
	// a connection, so every statement must run on the same one.
	db.SetMaxOpenConns(1)
	return &DB{sql: db, opts: opts}, nil
}

// Close closes the database.
func (db *DB) Close() error { return db.sql.Close() }

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
