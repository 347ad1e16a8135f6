package detectors

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/store"
)

// TestKeptFindingsAreAColdDetects runs detect (DetectLiveness, with every
// detector, as retrace report does) through a store over a corpus that
// changes, and after each change compares the report and the liveness
// table with a cold detect's over the same files: after a metrics-only
// build (the first detect finds and keeps the findings), over the
// unchanged corpus (no file read again), after a file was rewritten and
// only metrics read it (the store's mark of the file changed under kept
// findings: a cache that ignored the mark would serve the old file's),
// after a file grew, a file was added and one removed, and with other
// thresholds.
func TestKeptFindingsAreAColdDetects(t *testing.T) {
	ctx := context.Background()
	runs := t.TempDir()
	fixtures, err := filepath.Glob("testdata/fire/*.jsonl")
	if err != nil || len(fixtures) < 10 {
		t.Fatalf("fixtures: %v %v", fixtures, err)
	}
	copyTo := func(src, name string) {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(runs, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range fixtures {
		copyTo(f, filepath.Base(f))
	}
	cfg := store.Config{Dir: t.TempDir(), Wait: time.Minute}
	var settings Settings
	// warm detects through the store and says how many files it read again.
	warm := func() (Report, Liveness, int) {
		t.Helper()
		var rep Report
		var lv Liveness
		read := 0
		db, _, err := store.Open(ctx, cfg, []string{runs}, func(db *metrics.DB) (metrics.LoadReport, error) {
			read = 0
			r, l, lrep, err := DetectLiveness(ctx, db, []string{runs}, Catalog(), Options{Settings: settings,
				Progress: func(done, total int) { read = total }})
			rep, lv = r, l
			return lrep, err
		})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		return rep, lv, read
	}
	cold := func() (Report, Liveness) {
		t.Helper()
		db, err := metrics.Open(ctx, metrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rep, lv, _, err := DetectLiveness(ctx, db, []string{runs}, Catalog(), Options{Settings: settings})
		if err != nil {
			t.Fatal(err)
		}
		return rep, lv
	}
	metricsOnly := func() {
		t.Helper()
		db, _, err := store.Open(ctx, cfg, []string{runs}, func(db *metrics.DB) (metrics.LoadReport, error) { return db.Load(ctx, runs) })
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	same := func(step string, wantRead int) Report {
		t.Helper()
		got, glv, read := warm()
		want, wlv := cold()
		if len(want.Findings) == 0 {
			t.Fatalf("%s: the cold detect found nothing: the comparison proves nothing", step)
		}
		if !reflect.DeepEqual(got, want) {
			for i := range min(len(got.Findings), len(want.Findings)) {
				if !reflect.DeepEqual(got.Findings[i], want.Findings[i]) {
					t.Fatalf("%s: finding %d differs:\nthrough the store %+v\ncold              %+v", step, i, got.Findings[i], want.Findings[i])
				}
			}
			t.Fatalf("%s: %d findings through the store, %d cold (%d/%d sessions, %d/%d events)", step,
				len(got.Findings), len(want.Findings), got.Sessions, want.Sessions, got.Events, want.Events)
		}
		if !reflect.DeepEqual(glv, wlv) {
			t.Fatalf("%s: liveness differs:\nthrough the store %+v\ncold              %+v", step, glv, wlv)
		}
		if wantRead >= 0 && read != wantRead {
			t.Fatalf("%s: %d files read again, want %d", step, read, wantRead)
		}
		return got
	}

	metricsOnly()
	// The first detect after metrics made the store reads every file.
	same("first detect after metrics", len(fixtures))
	same("unchanged", 0)
	same("unchanged, again", 0)

	// A file rewritten: lost_call.jsonl now holds denial_loop's session
	// under another id. metrics reads it into the store, so detect's load
	// sees nothing changed; the kept findings are the old file's.
	before := warmFindingsOf(t, same("before the rewrite", 0), "lost_call.jsonl")
	b, err := os.ReadFile("testdata/fire/denial_loop.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.ReplaceAll(string(b), "20261201-212139.017-a78eb3f8", "20261201-212139.017-a78eb3f9"))
	if err := os.WriteFile(filepath.Join(runs, "lost_call.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	metricsOnly()
	after := warmFindingsOf(t, same("rewritten, read by metrics", 1), "lost_call.jsonl")
	if reflect.DeepEqual(before, after) {
		t.Fatalf("the rewritten file's findings did not change (%v): the test proves nothing", before)
	}
	same("rewritten, unchanged since", 0)

	// A file that grew: another session appended (its own load sees it).
	extra, err := os.ReadFile("testdata/clean/lost_call.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(filepath.Join(runs, "denial_loop.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write(extra)
	fh.Close()
	same("grown", 0)
	same("grown, unchanged since", 0)

	// A file added, one removed.
	copyTo("testdata/clean/denial_loop.jsonl", "added.jsonl")
	if err := os.Remove(filepath.Join(runs, "cache_breaker.jsonl")); err != nil {
		t.Fatal(err)
	}
	same("added and removed", 0)
	same("added and removed, unchanged since", 0)

	// A file removed that only metrics saw go: no file's findings are
	// missing, but the SQL detectors' are of other rows.
	if err := os.Remove(filepath.Join(runs, "denominator_shift.jsonl")); err != nil {
		t.Fatal(err)
	}
	metricsOnly()
	same("removed, read by metrics", 0)
	same("removed, unchanged since", 0)

	// Other thresholds: the Go detectors whose thresholds changed find
	// again, in every file.
	settings = Settings{"denial_loop": {"min_denials": 2}, "low_yield_spin": {"min_turns": 2}}
	left, _ := filepath.Glob(filepath.Join(runs, "*.jsonl"))
	same("other thresholds", len(left))
	same("other thresholds, unchanged since", 0)
	settings = nil
	same("the defaults again", 0)

	// A copy of a file: its session is loaded once, from the first file,
	// and the copy's read is noted, so nothing of the copy is kept.
	copyTo(filepath.Join(runs, "spill_read_loop.jsonl"), "zz_copy.jsonl")
	same("a copy", 0)
	same("a copy, unchanged since", 0)

	// A new file holding a session of its own and a copy of one the store
	// holds from another file: the load keeps its own session only, and
	// the detectors in its pass must judge that one only (the store's
	// sessions seed the load's feed), or the copy's findings come twice.
	own, err := os.ReadFile("testdata/clean/repeated_readonly.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile(filepath.Join(runs, "spill_read_loop.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runs, "zz_mixed.jsonl"), append(own, copied...), 0o644); err != nil {
		t.Fatal(err)
	}
	same("a copy of a stored session beside a new one", 0)
	// The store holds the file not whole, so it keeps no findings of it:
	// it is read again, its copy left out (metrics.DB.SessionsOf).
	same("a copy of a stored session beside a new one, unchanged since", 1)
}

// warmFindingsOf returns the findings of rep whose first evidence is in
// the file named base.
func warmFindingsOf(t *testing.T, rep Report, base string) []Finding {
	t.Helper()
	var out []Finding
	for _, f := range rep.Findings {
		if filepath.Base(f.File()) == base {
			out = append(out, f)
		}
	}
	return out
}
