package metrics

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// A Parquet lake (what ExportParquet writes) is read in place: a load
// whose inputs are all Parquet, into a database that holds no rows yet,
// copies nothing. It makes each event type's raw table a temporary view
// of the same name over read_parquet of the files, which shadows the
// empty table (DuckDB looks a name up in the temporary schema first, the
// views of the main schema included), so raw_events, the derived views
// and every named metric read the Parquet as they read the tables. The
// files' zstd column chunks are what DuckDB reads: no JSON to parse, no
// rows to insert, and a query that filters on session or ts skips the row
// groups whose min/max rule them out. Over 1M events, copying the Parquet
// into the tables and then asking every metric took longer than loading
// the JSONL; read in place it takes a fraction of it (doc.go has the
// numbers, BenchmarkLakeMetrics measures them).
//
// The views are the connection's own, never written to a kept database's
// file. A later load that is not in place first copies the lake's rows
// into the tables (settleLake), so the database holds every row it was
// given, as it always did.

// lakeState is what a database reads in place: the Parquet files, sorted,
// and the events they hold; none when files is empty.
type lakeState struct {
	files  []string
	events int64
}

// lakeSource reads files as one Parquet source, Hive partition columns
// (date, label) included. byName reads a mix of older and newer exports'
// columns, at a cost: DuckDB then reads every file's schema to bind each
// view and query, which doubled the time of every metric over a lake of
// one export (that has the same columns in every file).
func lakeSource(files []string, byName bool) string {
	return "read_parquet([" + strings.Join(quoteAll(files), ", ") + "], hive_partitioning = true, union_by_name = " + strconv.FormatBool(byName) + ")"
}

// loadInPlace reads a load's Parquet inputs in place when it can: every
// input is Parquet and the tables hold no rows but those of an earlier
// in-place load (whose files it adds to). ok is false when it cannot; the
// caller then loads as usual.
func (db *DB) loadInPlace(ctx context.Context, src inputs) (rep LoadReport, ok bool, err error) {
	if len(src.parquet) == 0 || len(src.jsonl.Files) > 0 || len(src.jsonl.Problems) > 0 || len(src.jsonl.Skipped) > 0 {
		return rep, false, nil
	}
	if len(db.lake.files) == 0 {
		var held bool
		if err := db.sql.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM raw_events)").Scan(&held); err != nil {
			return rep, false, fmt.Errorf("load: %w", err)
		}
		if held {
			return rep, false, nil
		}
	}
	files := mergeSorted(db.lake.files, src.parquet)
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return rep, true, fmt.Errorf("load: %w", err)
	}
	defer tx.Rollback()
	n, err := attachLake(ctx, tx, files)
	if err != nil {
		return rep, true, err
	}
	if err := parquetCopies(ctx, tx, files, nil); err != nil {
		return rep, true, err
	}
	if err := db.changed(ctx, tx); err != nil {
		return rep, true, fmt.Errorf("load: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return rep, true, fmt.Errorf("load: %w", err)
	}
	// The events this load added: the lake's rows less those it held.
	rep.Events = int(n - db.lake.events)
	db.lake = lakeState{files: files, events: n}
	rep.Parquet, rep.NotRegular = src.parquet, src.skipped
	return rep, true, nil
}

// attachLake makes every event type's raw table a temporary view over
// the Parquet files and returns how many events they hold. The files must
// carry the columns of this version's export (an export made before the
// line column reads it as NULL), and no event type this retrace does not
// know, as insertParquet requires of what it copies.
func attachLake(ctx context.Context, tx *sql.Tx, files []string) (int64, error) {
	// The footers of the files are read once per load, not once per view
	// and query.
	if _, err := tx.ExecContext(ctx, "SET parquet_metadata_cache = true"); err != nil {
		return 0, fmt.Errorf("load: %w", err)
	}
	fail := func(err error) (int64, error) {
		return 0, fmt.Errorf("load %s: %w", describeFiles(files), err)
	}
	list := "[" + strings.Join(quoteAll(files), ", ") + "]"
	var schemas int
	if err := tx.QueryRowContext(ctx, "SELECT count(DISTINCT cols) FROM (SELECT string_agg(name || ':' || coalesce(type, '') || ':' || coalesce(logical_type::VARCHAR, ''), ',' ORDER BY name) AS cols FROM parquet_schema("+list+") GROUP BY file_name)").Scan(&schemas); err != nil {
		return fail(err)
	}
	byName := schemas > 1
	src := lakeSource(files, byName)
	have, err := parquetColumns(ctx, tx, src)
	if err != nil {
		return fail(err)
	}
	for _, c := range append(Columns(), where()...) {
		if _, ok := have[c.Name]; !ok && c != lineColumn {
			return fail(fmt.Errorf("column %q is missing: this is not a retrace export of this version; export the trajectories again with retrace export", c.Name))
		}
	}
	// The rows come from the files' footers. A file named for its type
	// is read by that type's view only; the others are checked for event
	// types this retrace does not know, at the cost of a scan of their
	// dictionary-encoded type column.
	var n int64
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(sum(num_rows), 0)::BIGINT FROM parquet_file_metadata("+list+")").Scan(&n); err != nil {
		return fail(err)
	}
	byType, mixed := lakeFilesByType(files)
	if len(mixed) > 0 {
		var known []string
		for _, t := range trajectory.EventTypes() {
			known = append(known, string(t))
		}
		var unknown int64
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+lakeSource(mixed, byName)+" WHERE type NOT IN "+sqlList(known)).Scan(&unknown); err != nil {
			return fail(err)
		}
		if unknown > 0 {
			return fail(fmt.Errorf("%d of %d rows have an event type this retrace does not know; load them with the retrace version that exported them", unknown, n))
		}
	}
	for _, t := range trajectory.EventTypes() {
		cols := tableColumns(t)
		sel := make([]string, len(cols))
		for i, c := range cols {
			typ, ok := have[c.Name]
			switch {
			case !ok:
				// An export made before events carried their line.
				sel[i] = "CAST(NULL AS " + c.Type + ") AS " + quoteIdent(c.Name)
			case typ == c.Type:
				sel[i] = quoteIdent(c.Name)
			default:
				sel[i] = "CAST(" + quoteIdent(c.Name) + " AS " + c.Type + ") AS " + quoteIdent(c.Name)
			}
		}
		own := byType[t]
		if len(own) == 0 {
			// No event of t: a view of no rows with t's columns, which
			// reads no file.
			nulls := make([]string, len(cols))
			for i, c := range cols {
				nulls[i] = "CAST(NULL AS " + c.Type + ") AS " + quoteIdent(c.Name)
			}
			q := "CREATE OR REPLACE TEMP VIEW " + typeTable(t) + " AS SELECT " + strings.Join(nulls, ", ") + " WHERE false"
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fail(err)
			}
			continue
		}
		q := "CREATE OR REPLACE TEMP VIEW " + typeTable(t) + " AS SELECT " + strings.Join(sel, ", ") +
			" FROM " + lakeSource(own, byName) + " WHERE type = " + quoteString(string(t))
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fail(err)
		}
	}
	return n, nil
}

// lakeFilesByType returns the files that may hold events of each type. A
// file an export of LakeVersion 2 wrote holds one type, which its name
// says (tool_call_0.parquet), and only that type's view reads it; any
// other file (an export of version 1, a file renamed) may hold every type
// and every view reads it, keeping the rows of its own type; mixed lists
// those.
func lakeFilesByType(files []string) (byType map[trajectory.EventType][]string, mixed []string) {
	byType = map[trajectory.EventType][]string{}
	for _, f := range files {
		if t, ok := lakeFileType(filepath.Base(f)); ok {
			byType[t] = append(byType[t], f)
			continue
		}
		mixed = append(mixed, f)
		for _, t := range trajectory.EventTypes() {
			byType[t] = append(byType[t], f)
		}
	}
	return byType, mixed
}

// lakeFileType returns the event type whose events a file named name
// holds, when its name says so: the type, an underscore, a number and
// ParquetExt.
func lakeFileType(name string) (trajectory.EventType, bool) {
	stem, ok := strings.CutSuffix(name, ParquetExt)
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(stem, '_')
	if i < 0 {
		return "", false
	}
	if _, err := strconv.ParseUint(stem[i+1:], 10, 64); err != nil {
		return "", false
	}
	t := trajectory.EventType(stem[:i])
	return t, t.Valid()
}

// parquetColumns returns the columns of the Parquet src and their DuckDB
// types.
func parquetColumns(ctx context.Context, tx *sql.Tx, src string) (map[string]string, error) {
	rows, err := tx.QueryContext(ctx, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+src+")")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, err
		}
		have[name] = typ
	}
	return have, rows.Err()
}

// settleLake copies the rows of the lake read in place into the tables
// and drops the views over it, before a load that is not in place, so the
// database goes on holding every row it was given.
func (db *DB) settleLake(ctx context.Context) error {
	if len(db.lake.files) == 0 {
		return nil
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer tx.Rollback()
	// The tables are named with their database: the temporary catalog has
	// a schema main too, where the views are.
	var name string
	if err := tx.QueryRowContext(ctx, "SELECT current_database()").Scan(&name); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	for _, t := range trajectory.EventTypes() {
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+quoteIdent(name)+".main."+typeTable(t)+" SELECT * FROM temp.main."+typeTable(t)); err != nil {
			return fmt.Errorf("load %s: %w", describeFiles(db.lake.files), err)
		}
		if _, err := tx.ExecContext(ctx, "DROP VIEW temp.main."+typeTable(t)); err != nil {
			return fmt.Errorf("load: %w", err)
		}
	}
	if err := db.changed(ctx, tx); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	db.lake = lakeState{}
	return nil
}

// mergeSorted returns the sorted union of two sorted lists of files.
func mergeSorted(a, b []string) []string {
	seen := make(map[string]bool, len(a)+len(b))
	var out []string
	for _, f := range append(append([]string(nil), a...), b...) {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// LakeVersion is the version of the Parquet lake's layout and schema, as
// lake.json at the top of an export names it. Version 1 was a file per
// date partition with every event type in it (exports made before
// lake.json, which has no such file); version 2 has one or more files per
// event type in each partition, each holding a range of sessions. Both read alike: the columns are the same, and a
// reader selects an event type by its type column. docs/parquet.md is the
// interface and docs/beyond-one-machine.md says how a team shares it.
const LakeVersion = 2

// LakeManifest is the name of the file at the top of an export that says
// which layout and schema the export has.
const LakeManifest = "lake.json"

// Lake is what lake.json holds: enough for a reader that is not retrace
// to know the layout and every column's type before reading a file.
type Lake struct {
	// Format is always "retrace-lake".
	Format string `json:"format"`
	// Version is LakeVersion of the retrace that wrote it.
	Version int `json:"version"`
	// TrajectoryVersion is the newest trajectory version (the v column)
	// the writer knew.
	TrajectoryVersion int `json:"trajectory_version"`
	// PartitionBy lists the Hive partition columns, outermost first.
	PartitionBy []string `json:"partition_by"`
	// Files says how files are laid out inside a partition.
	Files string `json:"files"`
	// SortedBy lists the columns each file's rows are ordered by.
	SortedBy []string `json:"sorted_by"`
	// Columns are the files' columns, in order, and the DuckDB type each
	// is read as.
	Columns []LakeColumn `json:"columns"`
}

// LakeColumn is a column of the lake's files.
type LakeColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// lakeOf returns the manifest of an export partitioned by partitionBy.
func lakeOf(partitionBy string) Lake {
	l := Lake{
		Format: "retrace-lake", Version: LakeVersion, TrajectoryVersion: trajectory.Version,
		Files:    "one or more files per event type in each partition, named <type>_<n>.parquet, the sessions of each after those of the one numbered before it; every file has every column",
		SortedBy: []string{"session", "seq"},
	}
	for _, c := range append(Columns(), where()...) {
		l.Columns = append(l.Columns, LakeColumn(c))
	}
	for _, p := range strings.Split(partitionBy, ",") {
		l.PartitionBy = append(l.PartitionBy, strings.TrimSpace(p))
	}
	return l
}

// writeLakeManifest writes lake.json to the export dir.
func writeLakeManifest(dir, partitionBy string) error {
	b, err := json.MarshalIndent(lakeOf(partitionBy), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, LakeManifest), append(b, '\n'), 0o600)
}

// IsLake reports whether every one of paths is Parquet: files, globs
// ending in .parquet, or directories holding Parquet files and no
// trajectories. Such a load reads the lake in place, so a store, which
// would copy its rows, gains nothing over it: reading commands load a lake
// without one.
func IsLake(paths []string) bool {
	if len(paths) == 0 {
		return false
	}
	for _, p := range paths {
		if strings.HasSuffix(p, ParquetExt) {
			continue
		}
		info, err := os.Stat(p)
		if err != nil || !info.IsDir() {
			return false
		}
		parquet, runs := false, false
		filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			switch {
			case err != nil || d.IsDir():
			case strings.HasSuffix(f, trajectory.Ext):
				runs = true
				return fs.SkipAll
			case strings.HasSuffix(f, ParquetExt):
				parquet = true
			}
			return nil
		})
		if runs || !parquet {
			return false
		}
	}
	return true
}

// exportCopy is a session parquetCopies found twice. It wraps
// ErrDuplicateSession, and LoadError names it as what it is rather than
// blaming --strict-dupes.
type exportCopy struct {
	session, other string
}

// Error implements error.
func (e *exportCopy) Error() string {
	return fmt.Sprintf("%v: session %s is also in %s: an export is a copy of the trajectories it was made from, so loading both would count the session twice or answer from an older copy; give one of them",
		ErrDuplicateSession, e.session, e.other)
}

// Unwrap returns ErrDuplicateSession.
func (e *exportCopy) Unwrap() error { return ErrDuplicateSession }

// parquetCopies refuses a load that would hold a session twice because
// Parquet holds a copy of it: two exports of the same session, or an
// export and the trajectory it was made of. Unlike a trajectory given
// twice, such a copy cannot be loaded once: the export's rows are
// copied or viewed in bulk, its events would add to the trajectory's
// (or, when they name the same file, replace them with an older copy),
// and the answer would look complete. files are the load's Parquet
// files; jsonl names (trajectory.Name) the trajectory files the load
// holds, whose rows the tables already have.
func parquetCopies(ctx context.Context, tx *sql.Tx, files, jsonl []string) error {
	byType, _ := lakeFilesByType(files)
	starts := byType[trajectory.TypeSessionStart]
	if len(starts) == 0 {
		return nil
	}
	src := "(SELECT session, filename FROM read_parquet([" + strings.Join(quoteAll(starts), ", ") +
		"], hive_partitioning = false, union_by_name = true, filename = true) WHERE type = 'session_start')"
	q := "SELECT session, min(filename) AS file, max(filename) AS other FROM " + src + " GROUP BY session HAVING count(*) > 1"
	if len(jsonl) > 0 {
		q += " UNION ALL SELECT p.session, p.filename, j.file FROM " + src + " p JOIN " + typeTable(trajectory.TypeSessionStart) +
			" j USING (session) WHERE j.file IN (SELECT unnest([" + strings.Join(quoteAll(jsonl), ", ") + "]))"
	}
	rows, err := tx.QueryContext(ctx, fmt.Sprintf("SELECT session, file, other FROM (%s) ORDER BY file, session LIMIT %d", q, maxListed+1))
	if err != nil {
		return fmt.Errorf("load %s: %w", describeFiles(files), err)
	}
	defer rows.Close()
	var problems []error
	for rows.Next() {
		var session, file, other string
		if err := rows.Scan(&session, &file, &other); err != nil {
			return fmt.Errorf("load %s: %w", describeFiles(files), err)
		}
		problems = append(problems, &trajectory.FileError{File: file, Err: &exportCopy{session: session, other: other}})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load %s: %w", describeFiles(files), err)
	}
	if len(problems) == 0 {
		return nil
	}
	return &LoadError{Problems: problems}
}
