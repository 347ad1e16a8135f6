package metrics

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/synth"
	"github.com/retrace-dev/retrace/trajectory"
)

// allViews are the views a store must answer exactly as a cold load does.
var allViews = []string{"events", "tool_calls", "sessions", "model_turns", "permissions", "defenses", "reminders"}

// sameAsCold fails t unless every view and every named metric of the
// store shows, row by row, what a cold load of paths into memory shows.
func sameAsCold(t *testing.T, step string, store *DB, paths ...string) {
	t.Helper()
	cold := open(t, Options{}, paths...)
	defer cold.Close()
	var empty []string
	for _, v := range allViews {
		q := "SELECT * FROM " + v + " ORDER BY ALL"
		got, want := rows(t, store, q), rows(t, cold, q)
		if len(want) == 0 {
			empty = append(empty, v)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: view %s: the store has %d rows, a cold load %d; first difference: %s", step, v, len(got), len(want), firstDiff(got, want))
		}
	}
	if len(empty) > 0 && !slices.Equal(empty, []string{"reminders"}) {
		t.Fatalf("%s: views without rows %v: the corpus tests too little", step, empty)
	}
	// The store's index of sessions by file says what its rows say.
	index := rows(t, store, "SELECT file, session, max_seq FROM store_sessions ORDER BY ALL")
	if want := rows(t, store, "SELECT file, session, max(seq) FROM raw_events GROUP BY file, session ORDER BY ALL"); !slices.Equal(index, want) {
		t.Errorf("%s: store_sessions has %d rows, the rows say %d; first difference: %s", step, len(index), len(want), firstDiff(index, want))
	}
	for _, m := range Metrics() {
		got, want := namedRows(t, store, m), namedRows(t, cold, m)
		if !slices.Equal(got, want) {
			t.Errorf("%s: metric %s differs: store %q, cold %q", step, m, got, want)
		}
	}
}

// namedRows runs the named metric through Metric, as retrace metrics does.
func namedRows(t *testing.T, db *DB, name string) []string {
	t.Helper()
	tb, err := db.Metric(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return renderRows(tb)
}

func firstDiff(got, want []string) string {
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return "store " + trimmed(g) + " | cold " + trimmed(w)
		}
	}
	return "none"
}

func trimmed(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// storeLoad opens the store at path, loads paths into it, and returns it
// with the load's report; it fails t on any error.
func storeLoad(t *testing.T, path string, paths ...string) (*DB, LoadReport) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rep, err := db.Load(ctx, paths...)
	if err != nil {
		t.Fatal(err)
	}
	return db, rep
}

// fileReport returns the report of the file named base in rep.
func fileReport(t *testing.T, rep LoadReport, base string) FileReport {
	t.Helper()
	for _, f := range rep.Files {
		if filepath.Base(f.File) == base {
			return f
		}
	}
	t.Fatalf("%s was not read: %+v", base, rep)
	return FileReport{}
}

func appendTo(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// A store answers with exactly the rows a cold load gives, through every
// way a corpus changes between two loads: nothing changed (no file read,
// the store's file unchanged), files added, a file that grew (a session
// still being written), a torn last line later completed, a last line
// without its newline later followed by more, a file rewritten, a file
// removed.
func TestStoreAnswersAsAColdLoadThroughEveryChange(t *testing.T) {
	dir := t.TempDir()
	if _, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 12, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) != 12 {
		t.Fatalf("corpus: %v, %v", files, err)
	}
	// Three files start cut short, to grow later: one at a line's end,
	// one in the middle of a line (torn), one at a line's end without its
	// newline.
	full := map[string][]byte{}
	cut := func(f string, at func(b []byte) int) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		full[f] = b
		if err := os.WriteFile(f, b[:at(b)], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	nthLineEnd := func(b []byte, n int) int {
		at := 0
		for range n {
			at += bytes.IndexByte(b[at:], '\n') + 1
		}
		return at
	}
	grown, torn, open := files[0], files[1], files[2]
	cut(grown, func(b []byte) int { return nthLineEnd(b, 5) })
	cut(torn, func(b []byte) int { return nthLineEnd(b, 4) + 30 })
	cut(open, func(b []byte) int { return nthLineEnd(b, 6) - 1 })

	path := filepath.Join(t.TempDir(), "store.duckdb")
	db, rep := storeLoad(t, path, dir)
	if len(rep.Files) != 12 {
		t.Fatalf("first load read %d files, want 12", len(rep.Files))
	}
	sameAsCold(t, "new store", db, dir)
	db.Close()

	// Nothing changed: no file read, and the store's file is as it was.
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db, rep = storeLoad(t, path, dir)
	if len(rep.Files) != 0 || len(rep.Unchanged) != 12 {
		t.Fatalf("unchanged corpus: read %d files, %d unchanged; want 0 and 12", len(rep.Files), len(rep.Unchanged))
	}
	sameAsCold(t, "unchanged", db, dir)
	db.Close()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the store's file changed (%d bytes, then %d) though no run did", len(before), len(after))
	}

	// Files added.
	more := t.TempDir()
	if _, err := synth.Write(context.Background(), more, synth.Options{Sessions: 3, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	added, _ := filepath.Glob(filepath.Join(more, "*.jsonl"))
	for _, f := range added {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db, rep = storeLoad(t, path, dir)
	if len(rep.Files) != 3 {
		t.Fatalf("3 files added: read %d", len(rep.Files))
	}
	sameAsCold(t, "files added", db, dir)
	db.Close()

	// The three short files grow to their whole: each is read from where
	// the store stopped (the torn line and the line without its newline
	// again, with what follows).
	for _, f := range []string{grown, torn, open} {
		info, _ := os.Stat(f)
		appendTo(t, f, full[f][info.Size():])
	}
	db, rep = storeLoad(t, path, dir)
	if len(rep.Files) != 3 {
		t.Fatalf("3 files grew: read %d", len(rep.Files))
	}
	for _, f := range []string{grown, torn, open} {
		all := bytes.Count(full[f], []byte("\n"))
		if got := fileReport(t, rep, filepath.Base(f)); got.Events >= all-3 {
			t.Errorf("%s grew: %d events read of its %d; want it read from where the store stopped", filepath.Base(f), got.Events, all)
		}
	}
	sameAsCold(t, "files grew", db, dir)
	db.Close()

	// A file rewritten shorter, and one removed.
	b := full[grown]
	if err := os.WriteFile(grown, b[:nthLineEnd(b, 3)], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(files[5]); err != nil {
		t.Fatal(err)
	}
	db, rep = storeLoad(t, path, dir)
	if len(rep.Files) != 1 || len(rep.Unchanged) != 13 {
		t.Fatalf("1 rewritten, 1 removed: read %d, %d unchanged", len(rep.Files), len(rep.Unchanged))
	}
	sameAsCold(t, "file rewritten and file removed", db, dir)
	if got := rows(t, db, "SELECT count(*) FROM store_files")[0]; got != "14" {
		t.Errorf("the store remembers %s files, want 14", got)
	}
	db.Close()

	// A file rewritten with the same size: a new inode, read whole.
	b, err = os.ReadFile(files[3])
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(files[3])
	if err := os.WriteFile(files[3], []byte(strings.Replace(string(b), `"turn":1`, `"turn":2`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	db, rep = storeLoad(t, path, dir)
	if len(rep.Files) != 1 {
		t.Fatalf("1 file replaced: read %d", len(rep.Files))
	}
	sameAsCold(t, "file replaced", db, dir)
	db.Close()

	// A copy of a file the store holds, named after it: its session is
	// the store's already (store_sessions says so), and left out.
	b, err = os.ReadFile(files[4])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "zz-copy.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	db, rep = storeLoad(t, path, dir)
	if len(rep.Files) != 1 || len(rep.Duplicates) != 1 || rep.Duplicates[0].Kept != trajectory.Name(files[4]) {
		t.Fatalf("a copy added: read %d files, duplicates %+v; want 1 and the copy left out for %s", len(rep.Files), rep.Duplicates, files[4])
	}
	sameAsCold(t, "copy of a file added", db, dir)
	db.Close()

	// A new file going on with a session a kept file holds (later seqs):
	// the session's derived rows come from both files.
	b, err = os.ReadFile(files[6])
	if err != nil {
		t.Fatal(err)
	}
	var next []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		var ev map[string]any
		if json.Unmarshal(line, &ev) != nil || ev["type"] != "model_response" {
			continue
		}
		ev["seq"] = ev["seq"].(float64) + 10000
		l, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		next = append(append(next, l...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "zz-next.jsonl"), next, 0o644); err != nil {
		t.Fatal(err)
	}
	db, rep = storeLoad(t, path, dir)
	if len(rep.Files) != 1 || len(rep.Duplicates) != 1 {
		t.Fatalf("a session continued: read %d files, duplicates %+v; want 1 and the copy's only", len(rep.Files), rep.Duplicates)
	}
	sameAsCold(t, "a kept session continued in a new file", db, dir)
}

// A store opened read-only answers over an unchanged corpus, and refuses
// to load a changed one with ErrStale, changing nothing.
func TestReadOnlyStoreIsStaleWhenTheRunsChanged(t *testing.T) {
	dir := t.TempDir()
	if _, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 12, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "store.duckdb")
	ctx := context.Background()
	if _, err := Open(ctx, Options{Path: path, ReadOnly: true}); !errorsIs(err, ErrStale) {
		t.Fatalf("a missing store opened read-only: %v, want ErrStale", err)
	}
	db, _ := storeLoad(t, path, dir)
	db.Close()
	ro, err := Open(ctx, Options{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Load(ctx, dir); err != nil {
		t.Fatalf("unchanged corpus, read-only: %v", err)
	}
	sameAsCold(t, "read-only", ro, dir)
	// A temporary table is the user's own, and allowed.
	if _, err := ro.Query(ctx, "CREATE TEMP TABLE mine AS SELECT session FROM sessions"); err != nil {
		t.Errorf("a temporary table in a read-only store: %v", err)
	}
	if _, err := synth.Write(ctx, dir, synth.Options{Sessions: 1, Seed: 9, Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Load(ctx, dir); !errorsIs(err, ErrStale) {
		t.Fatalf("changed corpus, read-only: %v, want ErrStale", err)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// A store holds the rows of one mode: a strict load after a lenient one
// reads every file again (and refuses a bad line), and an unchanged file
// says again what its last read said (the lines it skipped).
func TestStoreKeepsTheRowsOfOneModeAndSaysItsNotesAgain(t *testing.T) {
	ctx := context.Background()
	lines := basicLines(t)
	dir := t.TempDir()
	file := writeLines(t, dir, "a.jsonl", append(append([]string{}, lines[:3]...), append([]string{"{not json\n"}, lines[3:]...)...)...)
	path := filepath.Join(t.TempDir(), "store.duckdb")
	for i := range 2 {
		db, err := Open(ctx, Options{Path: path, Lenient: true})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := db.Load(ctx, file)
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		reports := rep.Files
		if i == 1 {
			reports = rep.Held
			if len(rep.Files) != 0 {
				t.Fatalf("unchanged file read again: %+v", rep.Files)
			}
		}
		if len(reports) != 1 || reports[0].Skipped != 1 || reports[0].FirstSkipped == nil {
			t.Fatalf("load %d: reports %+v, want the skipped line said", i+1, reports)
		}
	}
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var le *LoadError
	if _, err := db.Load(ctx, file); !errors.As(err, &le) {
		t.Fatalf("a strict load over a lenient store: %v, want the bad line refused", err)
	}
}

// landRuns writes sessions synth runs of seed into a directory of their
// own and moves them into dir, as new files, and returns their names.
func landRuns(t *testing.T, dir string, sessions int, seed int64) []string {
	t.Helper()
	src := t.TempDir()
	if _, err := synth.Write(context.Background(), src, synth.Options{Sessions: sessions, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(src, "*"+trajectory.Ext))
	var out []string
	for _, f := range files {
		to := filepath.Join(dir, filepath.Base(f))
		if err := os.Rename(f, to); err != nil {
			t.Fatal(err)
		}
		out = append(out, to)
	}
	return out
}

// The load that updates a store goes on from what the read-only load that
// found it stale listed (Continue), once, and only for the same paths.
func TestAnUpdateGoesOnFromTheListingOfTheStaleLoad(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	landRuns(t, dir, 6, 1)
	path := filepath.Join(t.TempDir(), "store.duckdb")
	db, _ := storeLoad(t, path, dir)
	db.Close()
	update := func(paths ...string) (*DB, LoadReport) {
		ro, err := Open(ctx, Options{Path: path, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ro.Load(ctx, dir); !errors.Is(err, ErrStale) {
			t.Fatalf("read-only load after files landed: %v, want ErrStale", err)
		}
		ro.Close()
		// Landed after the read-only load listed the runs.
		late := landRuns(t, dir, 1, 30+int64(len(paths)))
		rw, err := Open(ctx, Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		rw.Continue(ro)
		rep, err := rw.Load(ctx, paths...)
		if err != nil {
			t.Fatal(err)
		}
		if len(late) != 1 {
			t.Fatalf("landed %d files, want 1", len(late))
		}
		return rw, rep
	}
	landed := landRuns(t, dir, 2, 2)
	rw, rep := update(dir)
	if len(rep.Files) != len(landed) {
		t.Fatalf("the update read %d files, want the %d the stale load listed: %+v", len(rep.Files), len(landed), rep.Files)
	}
	// The next load lists the runs again: the file landed late is read.
	rep, err := rw.Load(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 1 {
		t.Fatalf("the next load read %d files, want the 1 landed late", len(rep.Files))
	}
	sameAsCold(t, "after the late file", rw, dir)
	rw.Close()
	// A listing of other paths is not used.
	other := t.TempDir()
	landRuns(t, other, 3, 40)
	landRuns(t, dir, 1, 41)
	rw, _ = update(other)
	defer rw.Close()
	sameAsCold(t, "other paths", rw, other)
}

// A file that is not a store of this version, a database of its own or a
// store another layout made, is refused with ErrStoreVersion and left as
// it is, read-only or not; a new file becomes a store.
func TestOpenRefusesWhatIsNotAStoreOfThisVersion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	own := filepath.Join(dir, "own.duckdb")
	raw, err := sql.Open("duckdb", own)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("CREATE TABLE mine AS SELECT 42 AS answer"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	for _, ro := range []bool{true, false} {
		if _, err := Open(ctx, Options{Path: own, ReadOnly: ro}); !errors.Is(err, ErrStoreVersion) {
			t.Errorf("a database of its own, read-only %t: %v, want ErrStoreVersion", ro, err)
		}
	}
	raw, _ = sql.Open("duckdb", own)
	var answer int
	if err := raw.QueryRow("SELECT answer FROM mine").Scan(&answer); err != nil || answer != 42 {
		t.Errorf("the database of its own was changed: %v %d", err, answer)
	}
	raw.Close()

	other := filepath.Join(dir, "other.duckdb")
	db, err := Open(ctx, Options{Path: other})
	if err != nil {
		t.Fatalf("a new file: %v", err)
	}
	if _, err := db.sql.Exec("UPDATE store_meta SET value = 'another' WHERE key = 'version'"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, ro := range []bool{true, false} {
		if _, err := Open(ctx, Options{Path: other, ReadOnly: ro}); !errors.Is(err, ErrStoreVersion) {
			t.Errorf("a store of another version, read-only %t: %v, want ErrStoreVersion", ro, err)
		}
	}
	fresh := filepath.Join(dir, "fresh.duckdb")
	db, err = Open(ctx, Options{Path: fresh})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(ctx, Options{Path: fresh, ReadOnly: true})
	if err != nil {
		t.Fatalf("a store this version made, read-only: %v", err)
	}
	db.Close()
}
