package metrics

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	// The duckdb driver registers itself with database/sql as "duckdb".
	"github.com/duckdb/duckdb-go/v2"

	"github.com/retrace-dev/retrace/scratch"
)

//go:embed sql/*.sql
var metricFiles embed.FS

//go:embed views.sql
var viewsSQL string

// ErrUnknownMetric is returned by Metric for a name Metrics does not list.
var ErrUnknownMetric = errors.New("unknown metric")

// Options configure Open.
type Options struct {
	// Path is a store: a database file kept between calls that answers
	// for exactly the runs each load is given, reading only what changed
	// (see Load), with its derived tables kept; empty means in memory.
	Path string
	// ReadOnly opens the store at Path for reading only, as many
	// processes may at once: a Load that finds nothing changed returns at
	// once, and one that would change anything returns ErrStale and
	// changes nothing. Ignored without Path.
	ReadOnly bool
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
	// Progress, when set, is called as a load goes on, and as an export
	// writes, one call at a time.
	Progress func(Progress)
	// MemoryLimit caps the memory DuckDB holds (its memory_limit, such as
	// "2GB" or "512MiB"); past it DuckDB spills to TempDir, an in-memory
	// database too. Empty caps a store, an export and a load of more
	// than 64 MiB of trajectories into memory at 500MB (boundedMemory),
	// an in-memory database spilling to a temporary directory of its own;
	// a smaller load into memory keeps DuckDB's default (80% of the
	// machine's memory).
	MemoryLimit string
	// Closer, when set, is closed by Close once the database is: the
	// lock a store is read under (see package store).
	Closer io.Closer
	// TempDir is where DuckDB spills (its temp_directory) and where a load
	// stages checked lines; empty means the system's temporary directory.
	TempDir string
}

// ErrStale means a store opened with Options.ReadOnly does not hold the
// runs as they are now (a file was added, changed or removed, or the
// store is new): it must be opened for writing to be brought up to date.
var ErrStale = errors.New("the store needs updating")

// ErrStoreVersion means the file at Options.Path is not a store this
// version of retrace made (another version's, or a database of its own):
// it is left alone.
var ErrStoreVersion = errors.New("not a store of this retrace version")

// ErrStorePath means Options.Path holds a '?': DuckDB reads what follows
// it as options of its own, so no such path can name a store.
var ErrStorePath = errors.New("a store's path cannot hold '?'")

// ErrManyResults means a query holds several SELECT statements, whose
// results cannot all be returned as one table.
var ErrManyResults = errors.New("a query returns one result")

// ErrMemoryLimit means Options.MemoryLimit is not a size DuckDB takes.
var ErrMemoryLimit = errors.New("bad memory limit")

// bigLoadBytes is the input size above which a load into an in-memory
// database without Options.MemoryLimit caps DuckDB at boundedMemory and
// lets it spill to a temporary directory of its own, so that the memory a
// load holds does not grow with the corpus. Smaller loads keep DuckDB's
// default and need no spill directory. Tests make it small.
var bigLoadBytes int64 = 64 << 20

// lowerCapsBytes is the input size above which a load into an in-memory
// database without Options.MemoryLimit, capped at boundedMemory already
// (bigLoadBytes), makes its derived tables at derivedMemory and lets
// WithLessMemory lower its cap, as a store does. Under the lower caps
// DuckDB writes more of the rows to its spill directory and reads them
// back: at 1M events (372 MB of trajectories) a detect --no-cache took
// 9.60 CPU-s against 8.52 and a metrics --no-cache 4.94 against 4.68
// (minimums of three) for peaks it did not need to lower (646-681 MB).
// At 10M events (3.7 GB) they are what keeps detect --no-cache under 1
// GB. Tests make it small.
var lowerCapsBytes int64 = 1 << 30

// boundedMemory is DuckDB's memory_limit for a database without
// Options.MemoryLimit that may hold a big corpus: a store, a big load into
// memory (bigLoadBytes) and an export. The process's peak RSS runs some
// 300 to 600 MB above it (DuckDB's allocations outside its buffer pool,
// the Go heap): at 10M events a cold metrics peaked at 891 MB where the
// old 1GB cap gave 1,365 MB, and a store's first build at 1,080 MB where
// it had no cap (3.5 GB and growing); a load runs lower still
// (loadMemory). At 1M events the cap costs no CPU
// against DuckDB's default (80% of the machine's memory): what does not
// fit spills to disk.
const boundedMemory = "500MB"

// loadMemory is DuckDB's memory_limit while a load reads lines into a
// database capped at boundedMemory (a store, a big load into memory),
// unless Options.MemoryLimit sets one: lower than boundedMemory, because
// a load's process holds much beyond DuckDB's buffer pool (read_json's
// buffers, the rows an insert holds before they reach the table, the
// commit's compression, the Go heap of the check; not measured apart),
// which took it 500 to 750 MB above the cap: at 10M events a store's first build
// peaked at 1,065-1,245 MB at boundedMemory and at 749-826 MB with this
// cap and the check's soft limit on the Go heap (checkMemory), for 77-88
// CPU-s against 79-80 (the machine shared; the collector's part grew by
// about 1.2 CPU-s); a cold metrics without a store, whose peak is in the
// queries after the load, at 980-1,044 MB before and 849-899 MB with both
// and the heap returned after the check (lessGC). At 1M events neither
// costs CPU (cold without a store 4.73 CPU-s against 4.75, a store's
// first build 6.83 against 6.81, minimums of three). Queries after the
// load run at boundedMemory again.
const loadMemory = "300MB"

// DB is an embedded DuckDB database holding loaded trajectories and the
// views over them. Queries may come from several goroutines; they run one at
// a time on one connection.
type DB struct {
	sql  *sql.DB
	opts Options
	// spill is the directory of its own an in-memory database spills to
	// (see limitMemory), removed by Close; capped is set once a big load
	// capped its memory (see capBigLoad).
	spill  *scratch.Dir
	capped bool
	// lowerCaps is set once a load into memory of more than
	// lowerCapsBytes capped its memory (see capBigLoad): its derived
	// tables are made at derivedMemory, and WithLessMemory lowers its cap.
	// A query may read it while a load sets it.
	lowerCaps atomic.Bool
	// limit is the memory_limit DuckDB runs at now when retrace set it
	// (setMemory, boundLoad, WithLessMemory; see memoryLimit), which
	// makeDerived puts back after making the derived tables under
	// derivedMemory.
	limit atomic.Pointer[string]
	// lake is the Parquet a load reads in place (see lake.go).
	lake lakeState

	// mu guards stmts, the named metrics' statements prepared on first use
	// (see Metric).
	mu    sync.Mutex
	stmts map[string]*sql.Stmt

	// materialized is set while the derived views read tables made from
	// the rows as they are (see materialize). dmu is held by every Query,
	// Metric and WriteArrow from its check of materialized to the end of
	// its statement (and of the views' change after a write), so that no
	// statement reads the tables between a write and that change. A load
	// needs no part of it: it changes the views in its own transaction.
	dmu          sync.Mutex
	materialized atomic.Bool
	// fromParquet is set while a store holds rows loaded from Parquet
	// (see refresh), whose files it does not track.
	fromParquet bool
	// heldMode is the mode (see mode) of the rows a store holds.
	heldMode string
	// listed is the runs a read-only store's load found stale was given,
	// listed, for the update's load (see Continue).
	listed *listing
}

// Table is a query result.
type Table struct {
	Columns []string
	Rows    [][]any
}

// Open opens the database: in memory, creating the tables and views; or
// the store at Options.Path, creating it when the file is new.
func Open(ctx context.Context, opts Options) (*DB, error) {
	dsn := opts.Path
	if strings.Contains(opts.Path, "?") {
		return nil, fmt.Errorf("open store %q: %w (DuckDB would read what follows it as its options); choose a path without '?'", opts.Path, ErrStorePath)
	}
	if opts.Path == "" {
		opts.ReadOnly = false
	} else if opts.ReadOnly {
		if _, err := os.Stat(opts.Path); err != nil {
			return nil, fmt.Errorf("open store %q: %w (%w)", opts.Path, ErrStale, err)
		}
		dsn += "?access_mode=read_only"
	} else {
		dsn += "?storage_compatibility_version=" + storageVersion
	}
	db, err := sql.Open("duckdb", dsn)
	if err != nil {
		return nil, fmt.Errorf("open metrics database %q: %w", opts.Path, err)
	}
	// One connection: DuckDB parallelises inside a statement anyway, and
	// settings and temporary tables a user makes at the query prompt live on
	// a connection, so every statement must run on the same one.
	db.SetMaxOpenConns(1)
	d := &DB{sql: db, opts: opts}
	if opts.Path == "" {
		if _, err := db.ExecContext(ctx, openSQL()); err != nil {
			db.Close()
			return nil, fmt.Errorf("create metrics schema: %w", err)
		}
	} else if err := d.openStore(ctx); err != nil {
		db.Close()
		return nil, err
	}
	limit := opts.MemoryLimit
	if limit == "" && opts.Path != "" {
		// A store spills next to its file, as DuckDB does by default.
		limit = boundedMemory
	}
	if limit != "" || opts.TempDir != "" {
		if err := d.limitMemory(ctx, limit); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// storageVersion is the DuckDB storage format a new store's file is
// written in. DuckDB's default is the format of v0.10.2, which any later
// DuckDB reads; the format of v1.5 checkpoints an update of a few rows
// per table for about half the CPU (adding 1% new files to a store of
// 1M events: 0.044 CPU-s against 0.087, the whole add 0.41 against
// 0.46), and makes its file 23% smaller (165 MB against 214 at 1M
// events) for the same CPU at its first build (7.6-7.7 CPU-s against
// 7.4-8.0, the two binaries taking turns). A store made before keeps the
// format it was made in, and answers the same.
const storageVersion = "v1.5.0"

// storeMetaSQL creates the table of a store's facts about itself: its
// version (storeVersion) and whether it holds rows from Parquet.
const storeMetaSQL = "CREATE TABLE IF NOT EXISTS store_meta (key VARCHAR PRIMARY KEY, value VARCHAR);\n"

// storeVersion names the layout of a store: a hash of the statements that
// make it, so that a retrace whose tables, views or derived queries
// differ does not read a store another made.
var storeVersion = sync.OnceValue(func() string {
	h := fnv.New64a()
	io.WriteString(h, storeSQL())
	return fmt.Sprintf("%016x", h.Sum64())
})

// storeSQL makes a new store: the tables of events, the files it holds,
// its facts, the derived tables (empty) and every view.
var storeSQL = sync.OnceValue(func() string {
	return schemaSQL() + storeFilesSQL + storeSessionsSQL + storeMetaSQL + materializeSQL() + viewsSQL
})

// openStore checks that the file at Options.Path is a store of this
// version, making one in a new file; it writes nothing to a store that
// is.
func (db *DB) openStore(ctx context.Context) error {
	if !db.opts.ReadOnly {
		// DuckDB compresses what it writes, choosing per column among the
		// methods it tries on each segment. FSST, for the long strings
		// (arguments, results, messages), cost the most to try and to
		// write: without it, at 1M events, a store's first build committed
		// in 0.6 CPU-s less and the checkpoint after adding 1% new files
		// took half the time, for a file 19% larger.
		if _, err := db.sql.ExecContext(ctx, "SET disabled_compression_methods = 'fsst'"); err != nil {
			return fmt.Errorf("open store %q: %w", db.opts.Path, err)
		}
	}
	// A store has store_meta, asked first: one statement, where listing
	// the catalog first (duckdb_tables()) made every open of a store cost
	// two, and 3 ms more CPU. A file without store_meta is new, and made
	// a store, unless it holds tables of its own.
	var version, parquet, mode sql.NullString
	err := db.sql.QueryRowContext(ctx, "SELECT (SELECT value FROM store_meta WHERE key = 'version'), (SELECT value FROM store_meta WHERE key = 'parquet'), (SELECT value FROM store_meta WHERE key = 'mode')").Scan(&version, &parquet, &mode)
	if err == nil {
		if version.String != storeVersion() {
			return fmt.Errorf("open store %q: %w; delete it, or give another file", db.opts.Path, ErrStoreVersion)
		}
		db.heldMode = mode.String
		db.fromParquet = parquet.String == "true"
		db.materialized.Store(true)
		return nil
	}
	var tables int
	if err := db.sql.QueryRowContext(ctx, "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()").Scan(&tables); err != nil {
		return fmt.Errorf("open store %q: %w", db.opts.Path, err)
	}
	if tables > 0 {
		return fmt.Errorf("open store %q: %w; delete it, or give another file", db.opts.Path, ErrStoreVersion)
	}
	if db.opts.ReadOnly {
		return fmt.Errorf("open store %q: %w (it is empty)", db.opts.Path, ErrStale)
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("make store %q: %w", db.opts.Path, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, storeSQL()+"INSERT INTO store_meta VALUES ('version', "+quoteString(storeVersion())+");"); err != nil {
		return fmt.Errorf("make store %q: %w", db.opts.Path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("make store %q: %w", db.opts.Path, err)
	}
	db.materialized.Store(true)
	return nil
}

// limitMemory sets DuckDB's memory_limit to limit (when not empty) and
// its temp_directory, where it spills past the limit, to Options.TempDir;
// without one, an in-memory database spills to a directory of its own,
// removed by Close (DuckDB's default would be .tmp in the working
// directory), and a kept one next to its file, as DuckDB does.
func (db *DB) limitMemory(ctx context.Context, limit string) error {
	dir := db.opts.TempDir
	if dir == "" && db.opts.Path == "" && db.spill == nil {
		spill, err := scratch.Make("", "retrace-spill-")
		if err != nil {
			return fmt.Errorf("metrics database: %w", err)
		}
		db.spill, dir = spill, spill.Path
	}
	return db.setMemory(ctx, limit, dir)
}

// setMemory sets DuckDB's memory_limit to limit and its temp_directory to
// dir, each when not empty.
func (db *DB) setMemory(ctx context.Context, limit, dir string) error {
	if limit != "" {
		if _, err := db.sql.ExecContext(ctx, "SET memory_limit = "+quoteString(limit)); err != nil {
			return fmt.Errorf("%w %q: %v (give a size such as 2GB or 512MiB)", ErrMemoryLimit, limit, err)
		}
		db.setLimit(limit)
	}
	if dir != "" {
		if _, err := db.sql.ExecContext(ctx, "SET temp_directory = "+quoteString(dir)); err != nil {
			return fmt.Errorf("metrics database: temporary directory %q: %w", dir, err)
		}
	}
	return nil
}

// capBigLoad caps an in-memory database's memory for a load of size input
// bytes, as bigLoadBytes says, once, and marks it for lower caps as
// lowerCapsBytes says.
func (db *DB) capBigLoad(ctx context.Context, size int64) error {
	if db.opts.Path != "" || db.opts.MemoryLimit != "" || size <= bigLoadBytes {
		return nil
	}
	if size > lowerCapsBytes {
		db.lowerCaps.Store(true)
	}
	if db.capped {
		return nil
	}
	db.capped = true
	return db.limitMemory(ctx, boundedMemory)
}

// boundLoad lowers DuckDB's memory_limit to loadMemory for a load into
// a database capped at boundedMemory, and returns what sets boundedMemory
// again (DuckDB shows the limit rounded, so the limit it had cannot be
// read back exactly). It runs on the one connection, so it and what it
// returns must run outside the load's transaction.
func (db *DB) boundLoad(ctx context.Context) (func(), error) {
	if db.opts.MemoryLimit != "" || db.opts.Path == "" && !db.capped {
		return func() {}, nil
	}
	if _, err := db.sql.ExecContext(ctx, "SET memory_limit = "+quoteString(loadMemory)); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	db.setLimit(loadMemory)
	return func() {
		// A canceled load still puts the limit back. An error here is
		// not the load's: the cap would stay at loadMemory, lower than
		// boundedMemory, which costs speed, never memory.
		if _, err := db.sql.ExecContext(context.WithoutCancel(ctx), "SET memory_limit = "+quoteString(boundedMemory)); err == nil {
			db.setLimit(boundedMemory)
		}
	}, nil
}

// derivedMemory is DuckDB's memory_limit while the derived tables are
// made (materialize) in an in-memory database whose cap is ours, after a
// load of more than lowerCapsBytes: their statements join and aggregate
// every event, and hold as much again outside the cap as under it. At
// 10M events a detect --no-cache peaked at 961-995 MB while they ran at
// boundedMemory, and at 849-893 MB with this cap and the SQL detectors
// after them at theirs (WithLessMemory); at 250MB they ran out of
// memory. A store makes its derived tables in the load, at loadMemory
// too. Tests make it small.
var derivedMemory = loadMemory

// makeDerived makes the derived tables (materializeSQL) through ex. In
// an in-memory database whose cap is ours, after a load of more than
// lowerCapsBytes, it sets the cap to derivedMemory while they are made
// (lowering boundedMemory, raising WithLessMemory's lower cap) and puts
// back the cap it had; if DuckDB runs out of memory at derivedMemory, or
// cannot free enough to lower its cap so far, they are made at the cap
// it had.
func (db *DB) makeDerived(ctx context.Context, ex execer) error {
	had := db.memoryLimit()
	if !db.lowerCaps.Load() || db.opts.MemoryLimit != "" || had == "" || had == derivedMemory {
		_, err := ex.ExecContext(ctx, materializeSQL())
		return err
	}
	_, err := ex.ExecContext(ctx, "SET memory_limit = "+quoteString(derivedMemory))
	if err == nil {
		_, err = ex.ExecContext(ctx, materializeSQL())
	}
	if _, rerr := ex.ExecContext(context.WithoutCancel(ctx), "SET memory_limit = "+quoteString(had)); rerr != nil {
		// The caller hears of it: materialize leaves the views plain,
		// and the next query tries again.
		return errors.Join(err, fmt.Errorf("memory limit: %w", rerr))
	}
	if outOfMemory(err) {
		_, err = ex.ExecContext(ctx, materializeSQL())
	}
	return err
}

// openSQL is the batch Open runs, built once per process: the schema is
// derived from the Go types by reflection and never changes while it runs.
// The derived views start plain; their tables are made when a query first
// asks (see materialize). A store makes storeSQL instead.
var openSQL = sync.OnceValue(func() string {
	return schemaSQL() + plainDerivedSQL() + viewsSQL
})

// Close closes the database and the statements Metric prepared.
func (db *DB) Close() error {
	db.dropPrepared()
	err := db.sql.Close()
	db.spill.Remove()
	if db.opts.Closer != nil {
		if cerr := db.opts.Closer.Close(); err == nil {
			err = cerr
		}
		db.opts.Closer = nil
	}
	return err
}

// setLimit notes limit as the memory_limit DuckDB runs at (see DB.limit).
func (db *DB) setLimit(limit string) { db.limit.Store(&limit) }

// memoryLimit returns the memory_limit retrace last set, or "" for
// DuckDB's default.
func (db *DB) memoryLimit() string {
	if p := db.limit.Load(); p != nil {
		return *p
	}
	return ""
}

// outOfMemory reports whether err is DuckDB running out of memory under
// its cap.
func outOfMemory(err error) bool {
	var de *duckdb.Error
	return errors.As(err, &de) && de.Type == duckdb.ErrorTypeOutOfMemory
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
//
// A statement naming a derived view (tool_calls, model_turns, sessions,
// defenses) first has their tables made, when the rows changed since; a
// statement that may write (anything but plainly read-only, see readOnly)
// makes them plain views again afterwards (see derived.go).
func (db *DB) Query(ctx context.Context, query string) (Table, error) {
	db.dmu.Lock()
	defer db.dmu.Unlock()
	return db.query(ctx, query)
}

// query is Query, with db.dmu held.
func (db *DB) query(ctx context.Context, query string) (Table, error) {
	ro := readOnly(query)
	if !ro {
		// DuckDB runs every statement and returns the last one's rows:
		// of SELECTs one after the other, all but the last would be lost
		// without a word.
		n := db.selects(ctx, query)
		if n > 1 {
			return Table{}, fmt.Errorf("query: %w: it holds %d SELECT statements; run them one at a time, or put their rows together with UNION ALL", ErrManyResults, n)
		}
		ro = n == 1
	}
	if !ro {
		// It may change rows or settings the prepared metrics were planned
		// with; drop them before and after, so none outlives the change.
		db.dropPrepared()
		defer db.dropPrepared()
	}
	db.materialize(ctx, db.sql, query)
	rows, err := db.sql.QueryContext(ctx, query)
	if err != nil {
		if !ro {
			db.changed(ctx, db.sql)
		}
		return Table{}, fmt.Errorf("query: %w", err)
	}
	t, err := scan(rows)
	if ro || db.opts.ReadOnly {
		// A read-only store's rows cannot change (a temporary table can).
		return t, err
	}
	if cerr := db.changed(ctx, db.sql); err == nil && cerr != nil {
		return t, fmt.Errorf("query: the statement ran, but %w", cerr)
	}
	return t, err
}

// scan reads every row of rows into a Table and closes rows.
func scan(rows *sql.Rows) (Table, error) {
	var t Table
	var err error
	defer rows.Close()
	t.Columns, err = rows.Columns()
	if err != nil {
		return t, fmt.Errorf("query: %w", err)
	}
	types, err := rows.ColumnTypes()
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
		for i, ct := range types {
			// The driver gives a UUID as its 16 bytes, which every
			// format would print as binary: it is its text.
			if b, ok := row[i].([]byte); ok && len(b) == 16 && ct.DatabaseTypeName() == "UUID" {
				row[i] = fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
			}
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

// Metric runs the named metric. Its statement is prepared on the first
// call and kept while the database is unchanged, so that a program asking
// one database for the same metrics many times (a REPL, a dashboard) plans
// each only once. DuckDB plans with the statistics of the rows present (a
// plan made on an empty table refuses the rows loaded later), so every
// Load, and every Query that is not plainly read-only, drops the prepared
// statements.
func (db *DB) Metric(ctx context.Context, name string) (Table, error) {
	q, err := MetricSQL(name)
	if err != nil {
		return Table{}, err
	}
	db.dmu.Lock()
	defer db.dmu.Unlock()
	db.materialize(ctx, db.sql, q)
	st := db.prepared(ctx, name, q)
	var t Table
	if st == nil {
		t, err = db.query(ctx, q)
	} else {
		var rows *sql.Rows
		if rows, err = st.QueryContext(ctx); err == nil {
			t, err = scan(rows)
		}
		if err != nil {
			err = fmt.Errorf("query: %w", err)
		}
	}
	if err != nil {
		return t, fmt.Errorf("metric %s: %w", name, err)
	}
	return t, nil
}

// prepared returns the named metric's statement, preparing q on first use,
// or nil when q cannot be prepared (the caller then runs it as a plain
// query, whose error names the position, as it always did).
func (db *DB) prepared(ctx context.Context, name, q string) *sql.Stmt {
	db.mu.Lock()
	defer db.mu.Unlock()
	if st, ok := db.stmts[name]; ok {
		return st
	}
	st, err := db.sql.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	if db.stmts == nil {
		db.stmts = map[string]*sql.Stmt{}
	}
	db.stmts[name] = st
	return st
}

// dropPrepared closes the statements Metric prepared, so that the next
// Metric plans afresh over the rows and settings as they are now.
func (db *DB) dropPrepared() {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, st := range db.stmts {
		st.Close()
	}
	db.stmts = nil
}

// readOnlyWords are the first keywords of the statements that change
// neither rows nor settings. WITH is not among them: a CTE may lead into
// an INSERT. PRAGMA and SET change what a plan may assume.
var readOnlyWords = map[string]bool{"SELECT": true, "FROM": true, "DESCRIBE": true, "SHOW": true, "SUMMARIZE": true}

// readOnly reports whether q is one statement that surely writes nothing:
// after leading blanks and -- comments it starts with a read-only keyword,
// and no semicolon but a last one follows. A false answer only costs the
// prepared metrics, so it errs that way (a semicolon in a string counts).
func readOnly(q string) bool {
	for {
		q = strings.TrimSpace(q)
		rest, ok := strings.CutPrefix(q, "--")
		if !ok {
			break
		}
		_, q, _ = strings.Cut(rest, "\n")
	}
	if i := strings.IndexByte(q, ';'); i >= 0 && strings.TrimSpace(q[i+1:]) != "" {
		return false
	}
	word, _, _ := strings.Cut(q, " ")
	word, _, _ = strings.Cut(word, "\n")
	word, _, _ = strings.Cut(word, "\t")
	return readOnlyWords[strings.ToUpper(word)]
}
