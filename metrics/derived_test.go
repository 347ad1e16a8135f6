package metrics

import (
	"context"
	"os"
	"path/filepath"
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
// database opened again. After a load they read their tables, in memory
// too, where Open made them plain views.
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
	sameAsDerivedSelect(t, db)
	for _, name := range derivedViews {
		def := rows(t, db, "SELECT sql FROM duckdb_views() WHERE view_name = "+quoteString(name))
		if len(def) != 1 || !strings.Contains(def[0], "derived_"+name) {
			t.Errorf("after a load the view %s is %q, want it over its table", name, def)
		}
	}
	calls := rows(t, db, "SELECT count(*) FROM tool_calls")[0]

	// A write through Query: a call's end deleted shows as a call without
	// a duration.
	if _, err := db.Query(ctx, "DELETE FROM raw_tool_end WHERE tool_use_id = (SELECT min(tool_use_id) FROM raw_tool_end)"); err != nil {
		t.Fatal(err)
	}
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
	// back among them.
	if err := os.WriteFile(file, append(src, '\n'), 0o644); err != nil {
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
