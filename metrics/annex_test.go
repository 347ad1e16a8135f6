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
