package metrics

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sameAsDerivedSelect fails t unless every derived view shows the rows its
// query makes of the raw tables now, and some.
func sameAsDerivedSelect(t *testing.T, db *DB) {
	t.Helper()
	for _, name := range derivedViews {
		q := derivedSelect(name)
		for _, diff := range []string{
			"SELECT count(*) FROM (SELECT * FROM " + name + " EXCEPT ALL (" + q + "))",
			"SELECT count(*) FROM ((" + q + ") EXCEPT ALL SELECT * FROM " + name + ")",
		} {
			if got := rows(t, db, diff); got[0] != "0" {
				t.Errorf("%s: %s rows differ from its query's", name, got[0])
			}
		}
		if got := rows(t, db, "SELECT count(*) FROM "+name); got[0] == "0" {
			t.Errorf("%s is empty", name)
		}
	}
}

// The derived views show the rows their queries make of the raw tables
// after every change: a load, a second load of a changed file, a write
// through Query, a refused load (which changes nothing), and in a kept
// database opened again. In memory every change makes them plain views,
// and a query naming one puts them over their tables again; a store keeps
// them over their tables always.
func TestDerivedViewsFollowEveryChange(t *testing.T) {
	for _, where := range []string{"memory", "kept"} {
		t.Run(where, func(t *testing.T) {
			var kept string
			if where == "kept" {
				kept = filepath.Join(t.TempDir(), "kept.duckdb")
			}
			derivedFollow(t, kept)
		})
	}
}

func derivedFollow(t *testing.T, kept string) {
	ctx := context.Background()
	dir := t.TempDir()
	// Calls, responses and defense triggers: every derived view has rows.
	var src []byte
	for _, f := range []string{"parallel_batch.jsonl", "defenses.jsonl"} {
		b, err := os.ReadFile(filepath.Join(validDir, f))
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	file := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	db := open(t, Options{Path: kept}, file)
	store := kept != ""
	overTables(t, db, store)
	sameAsDerivedSelect(t, db)
	overTables(t, db, true)
	calls := rows(t, db, "SELECT count(*) FROM tool_calls")[0]

	// A write through Query: a call's end deleted shows as a call without
	// a duration.
	if _, err := db.Query(ctx, "DELETE FROM raw_tool_end WHERE tool_use_id = (SELECT min(tool_use_id) FROM raw_tool_end)"); err != nil {
		t.Fatal(err)
	}
	overTables(t, db, store)
	sameAsDerivedSelect(t, db)
	if got := rows(t, db, "SELECT count(*) FROM tool_calls WHERE duration_ms IS NULL AND output_bytes IS NULL")[0]; got != "1" {
		t.Errorf("%s calls without an end after deleting one end, want 1", got)
	}

	// A refused load changes nothing.
	bad := filepath.Join(dir, "b.jsonl")
	if err := os.WriteFile(bad, []byte(`{"v":1,"nonsense":true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Load(ctx, dir); err == nil {
		t.Fatal("a load with a bad file was accepted")
	}
	sameAsDerivedSelect(t, db)
	os.Remove(bad)

	// The file changed: loaded again, it replaces its rows, the deleted end
	// back among them. (A new file: one that only grew, a store reads from
	// where it stopped.)
	if err := os.WriteFile(file+".new", append(src, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".new", file); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Load(ctx, file); err != nil {
		t.Fatal(err)
	}
	sameAsDerivedSelect(t, db)
	if got := rows(t, db, "SELECT count(*) FROM tool_calls")[0]; got != calls {
		t.Errorf("%s tool calls after loading the file again, want %s", got, calls)
	}
	if got := rows(t, db, "SELECT count(*) FROM tool_calls WHERE duration_ms IS NULL AND output_bytes IS NULL")[0]; got != "0" {
		t.Errorf("%s calls without an end after loading the file again, want 0", got)
	}
	if kept == "" {
		return
	}
	db.Close()
	again := open(t, Options{Path: kept})
	sameAsDerivedSelect(t, again)
	if got := rows(t, again, "SELECT count(*) FROM tool_calls")[0]; got != calls {
		t.Errorf("%s tool calls in the kept database opened again, want %s", got, calls)
	}
}

// overTables fails t unless the derived views read their tables (over)
// or are plain views (!over), asking the catalog in words that name none
// of them, which would make the tables.
func overTables(t *testing.T, db *DB, over bool) {
	t.Helper()
	defs := rows(t, db, "SELECT view_name, sql FROM duckdb_views() WHERE view_name IN ('tool_'||'calls', 'model_'||'turns', 'sess'||'ions', 'def'||'enses') ORDER BY view_name")
	if len(defs) != len(derivedViews) {
		t.Fatalf("derived views in the catalog: %q", defs)
	}
	for _, d := range defs {
		name, sql, _ := strings.Cut(d, "|")
		if got := strings.Contains(sql, "derived_"+name); got != over {
			t.Errorf("view %s over its table: %v, want %v (%.80s)", name, got, over, sql)
		}
	}
	if db.materialized.Load() != over {
		t.Errorf("materialized = %v, want %v", db.materialized.Load(), over)
	}
}

// A named metric that reads a derived view has the tables made, and its
// rows are those of the plain views.
func TestAMetricReadsTheDerivedTables(t *testing.T) {
	db := open(t, Options{}, validDir+"/parallel_batch.jsonl", validDir+"/defenses.jsonl")
	overTables(t, db, false)
	// Past Query, which would make the tables.
	r, err := db.sql.QueryContext(context.Background(), mustSQL(t, "funnel"))
	if err != nil {
		t.Fatal(err)
	}
	tb, err := scan(r)
	if err != nil {
		t.Fatal(err)
	}
	plain := renderRows(tb)
	overTables(t, db, false)
	if got := preparedRows(t, db, "funnel"); !slices.Equal(got, plain) || len(plain) == 0 {
		t.Errorf("funnel over the tables = %q, over the plain views %q", got, plain)
	}
	overTables(t, db, true) // the funnel names tool_calls
	if _, err := db.Query(context.Background(), "SET threads = 2"); err != nil {
		t.Fatal(err)
	}
	overTables(t, db, false)
	if _, err := db.Metric(context.Background(), "funnel"); err != nil {
		t.Fatal(err)
	}
	overTables(t, db, true)
}
