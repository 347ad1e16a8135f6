package metrics

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// EachAnnex walks the annexes a page of rows at a time: every annex kept
// under its file's mark now comes back once, across pages, and none of a
// file that changed since.
func TestEachAnnexGivesEveryCurrentAnnexOnceAcrossPages(t *testing.T) {
	old := annexPage
	annexPage = 2
	defer func() { annexPage = old }()
	ctx := context.Background()
	lines := basicLines(t)
	dir := t.TempDir()
	var files []string
	for i := range 7 {
		files = append(files, writeLines(t, dir, fmt.Sprintf("f%d.jsonl", i), withSession(lines, fmt.Sprintf("20261130-090000.000-%08x", i))...))
	}
	db, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "store.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Load(ctx, dir); err != nil {
		t.Fatal(err)
	}
	held, err := db.HeldFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var annexes []Annex
	want := map[string]string{}
	for _, f := range files {
		name := trajectory.Name(f)
		annexes = append(annexes, Annex{File: name, Mark: held[name].Mark, Value: "v " + name})
		want[name] = "v " + name
	}
	if err := db.KeepAnnexes(ctx, "k", slices.Values(annexes)); err != nil {
		t.Fatal(err)
	}
	each := func() map[string]string {
		t.Helper()
		got := map[string]string{}
		err := db.EachAnnex(ctx, "k", func(a Annex) error {
			if _, twice := got[a.File]; twice {
				t.Errorf("%s given twice", a.File)
			}
			got[a.File] = a.Value
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := each(); !maps.Equal(got, want) {
		t.Fatalf("annexes %v, want %v", got, want)
	}
	// A file rewritten: its annex is of bytes the store no longer holds.
	time.Sleep(10 * time.Millisecond)
	writeLines(t, dir, "f3.jsonl", withSession(lines, "20261130-090000.000-0000ffff")...)
	if _, err := db.Load(ctx, dir); err != nil {
		t.Fatal(err)
	}
	delete(want, trajectory.Name(files[3]))
	if got := each(); !maps.Equal(got, want) {
		t.Fatalf("after a rewrite, annexes %v, want %v", got, want)
	}
}

// WithLessMemory lowers the cap DuckDB runs at by itself while fn runs,
// and puts it back; a cap the user chose is left alone.
func TestWithLessMemoryLowersTheDefaultCapAndPutsItBack(t *testing.T) {
	ctx := context.Background()
	limit := func(db *DB) string {
		t.Helper()
		tb, err := db.Query(ctx, "SELECT current_setting('memory_limit')")
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(tb.Rows[0][0])
	}
	for _, tc := range []struct {
		name  string
		opts  Options
		lower bool
	}{
		{"a store at its own cap", Options{Path: filepath.Join(t.TempDir(), "s.duckdb")}, true},
		{"a store at the user's cap", Options{Path: filepath.Join(t.TempDir(), "u.duckdb"), MemoryLimit: "1GB"}, false},
		{"a small database in memory", Options{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := Open(ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			before := limit(db)
			var during string
			if err := db.WithLessMemory(ctx, "100MB", func() error { during = limit(db); return nil }); err != nil {
				t.Fatal(err)
			}
			if after := limit(db); after != before {
				t.Errorf("cap after = %s, want it put back to %s", after, before)
			}
			if lowered := during != before; lowered != tc.lower {
				t.Errorf("cap %s while fn ran, %s before: lowered %v, want %v", during, before, lowered, tc.lower)
			}
		})
	}
}

// What runs out of memory under the lower cap runs again under the
// store's own, and succeeds.
func TestWithLessMemoryRunsAgainWhatDoesNotFit(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "s.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs := 0
	var firstErr error
	err = db.WithLessMemory(ctx, "1MB", func() error {
		runs++
		_, err := db.Query(ctx, "SELECT count(*) FROM (SELECT DISTINCT i::VARCHAR || 'x' FROM range(3000000) t(i))")
		if runs == 1 {
			firstErr = err
		}
		return err
	})
	if firstErr == nil {
		t.Skip("the query fit in 1MB: nothing to run again")
	}
	if err != nil || runs != 2 {
		t.Fatalf("err = %v after %d runs (the first: %v), want the second run under the store's cap to succeed", err, runs, firstErr)
	}
}

// An in-memory database capped for a load of more than lowerCapsBytes
// runs fn under the lower cap too (a smaller big load keeps its cap); the
// derived tables a query in fn makes are made under
// derivedMemory, and the cap goes back to fn's after them. They hold the
// rows a database at DuckDB's default cap makes, also when derivedMemory
// is too small (at 1MB DuckDB cannot free enough to lower its cap so far)
// and they are made at the cap fn runs at.
func TestABigLoadInMemoryRunsWithLessMemory(t *testing.T) {
	ctx := context.Background()
	small := open(t, Options{}, validDir)
	if small.capped {
		t.Fatal("a load of the test corpus capped DuckDB: it is not small")
	}
	defer func(n, l int64, m string) { bigLoadBytes, lowerCapsBytes, derivedMemory = n, l, m }(bigLoadBytes, lowerCapsBytes, derivedMemory)
	bigLoadBytes = 1 << 10
	limit := func(db *DB) string { return rows(t, db, "SELECT current_setting('memory_limit')")[0] }
	t.Run("a big load under lowerCapsBytes", func(t *testing.T) {
		big := open(t, Options{}, validDir)
		before := limit(big)
		var during string
		if err := big.WithLessMemory(ctx, "100MB", func() error { during = limit(big); return nil }); err != nil {
			t.Fatal(err)
		}
		if !big.capped || during != before {
			t.Errorf("capped %v; cap %s in fn, %s before: want it capped, and its cap kept", big.capped, during, before)
		}
	})
	lowerCapsBytes = 1 << 10
	for _, mem := range []string{loadMemory, "1MB"} {
		t.Run("derived at "+mem, func(t *testing.T) {
			derivedMemory = mem
			big := open(t, Options{}, validDir)
			if !big.capped {
				t.Fatal("the load did not cap DuckDB")
			}
			before := limit(big)
			var during, afterDerived string
			err := big.WithLessMemory(ctx, "100MB", func() error {
				during = limit(big)
				for _, v := range derivedViews {
					q := "SELECT * FROM " + v + " ORDER BY ALL"
					if got, want := rows(t, big, q), rows(t, small, q); !slices.Equal(got, want) {
						t.Errorf("%s under the lower cap: %d rows, want the %d of an uncapped load, the same", v, len(got), len(want))
					}
				}
				afterDerived = limit(big)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !big.materialized.Load() {
				t.Error("the derived tables were not made")
			}
			if during == before || afterDerived != during {
				t.Errorf("cap %s before, %s in fn, %s after the derived tables were made: want it lowered, and lowered still", before, during, afterDerived)
			}
			if after := limit(big); after != before {
				t.Errorf("cap after = %s, want it put back to %s", after, before)
			}
		})
	}
}
