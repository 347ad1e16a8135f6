package metrics

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// recorder is an Observer that writes down what it is handed, checking the
// contract's order as it goes.
type recorder struct {
	t      testing.TB
	events []string // "file|session|seq|line"
	ended  []string
	open   string // the file whose events are coming, "" between files
	last   int    // the last line handed over of open
}

func (r *recorder) Events(file string, evs []Located) {
	if len(evs) == 0 {
		r.t.Errorf("Events(%s) with no event", file)
	}
	if r.open != "" && r.open != file {
		r.t.Errorf("Events(%s) before EndFile(%s)", file, r.open)
	}
	if r.open != file {
		r.open, r.last = file, 0
	}
	for _, e := range evs {
		if e.Line <= r.last {
			r.t.Errorf("%s: line %d handed over after line %d", file, e.Line, r.last)
		}
		r.last = e.Line
		r.events = append(r.events, fmt.Sprintf("%s|%s|%d|%d", file, e.Session, e.Seq, e.Line))
	}
}

func (r *recorder) EndFile(file string) {
	if r.open != "" && r.open != file {
		r.t.Errorf("EndFile(%s) while %s is open", file, r.open)
	}
	r.open = ""
	r.ended = append(r.ended, file)
}

// observeLoad loads paths with parts of partBytes and an Observer, and
// returns the observer, the load's report and error, and the events the
// load put into DuckDB in the observer's notation.
func observeLoad(t testing.TB, opts Options, partBytes int64, paths ...string) (*recorder, LoadReport, error, []string) {
	t.Helper()
	oldAbove, oldPart := splitAbove, partSize
	splitAbove, partSize = partBytes, partBytes
	defer func() { splitAbove, partSize = oldAbove, oldPart }()
	ctx := context.Background()
	db, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	obs := &recorder{t: t}
	rep, err := db.LoadObserved(ctx, obs, paths...)
	tb, qerr := db.Query(ctx, "SELECT file, session, seq, line FROM raw_events ORDER BY file, line")
	if qerr != nil {
		t.Fatal(qerr)
	}
	var loaded []string
	for _, r := range tb.Rows {
		loaded = append(loaded, fmt.Sprintf("%v|%v|%v|%v", r[0], r[1], r[2], r[3]))
	}
	return obs, rep, err, loaded
}

// withSession returns lines with the basic fixture's session id replaced.
func withSession(lines []string, id string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.ReplaceAll(l, "20261130-090000.000-1a2b3c4d", id)
	}
	return out
}

func TestAnObserverSeesExactlyTheEventsTheLoadKeeps(t *testing.T) {
	lines := basicLines(t)
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	// many is a file large enough to be checked in several parts of 1 KiB.
	var many []string
	for i := range 12 {
		many = append(many, withSession(lines, fmt.Sprintf("20261130-090000.000-%08x", i))...)
	}
	repeatAtPart := cat(many[:40], many[30:])
	for _, tc := range []struct {
		name    string
		lenient bool
		files   map[string][]string
		wantErr bool
	}{
		{"Clean files, one of them checked in parts, are seen whole, line by line.", false,
			map[string][]string{"a.jsonl": lines, "b.jsonl": many}, false},
		{"A lenient load of a file whose lines repeat across a part boundary is seen without the repeats.", true,
			map[string][]string{"a.jsonl": repeatAtPart}, false},
		{"A lenient load of a session copied into a second file sees the copy's events only past the first file's seqs.", true,
			map[string][]string{"a.jsonl": lines[:6], "b.jsonl": lines}, false},
		{"A lenient load skips malformed lines, leaves out empty files, and the observer sees the same.", true,
			map[string][]string{"a.jsonl": cat(lines[:3], []string{"{not json\n"}, lines[3:]), "b.jsonl": {}, "c.jsonl": many}, false},
		{"A strict load of a file whose seq goes back is refused.", false,
			map[string][]string{"a.jsonl": repeatAtPart}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, ls := range tc.files {
				writeLines(t, dir, name, ls...)
			}
			obs, rep, err, loaded := observeLoad(t, Options{Lenient: tc.lenient}, 1<<10, dir)
			if tc.wantErr {
				var lo *LoadError
				if !errors.As(err, &lo) || loaded != nil {
					t.Fatalf("err = %v, %d events loaded; want a LoadError and nothing loaded", err, len(loaded))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(loaded) == 0 || !reflect.DeepEqual(obs.events, loaded) {
				t.Fatalf("observed %d events, loaded %d:\nobserved %v\nloaded   %v", len(obs.events), len(loaded), obs.events, loaded)
			}
			var files []string
			for _, f := range rep.Files {
				files = append(files, f.File)
			}
			if !reflect.DeepEqual(obs.ended, files) {
				t.Fatalf("EndFile for %v, want every file in the load's order %v", obs.ended, files)
			}
		})
	}
}

// A store's load observes only the events it keeps: a new file holding a
// copy of a session the store holds from another file (the detectors'
// findings in it would come twice) hands over its own session only.
func TestAStoresObservedLoadHandsNoCopyOfAStoredSession(t *testing.T) {
	ctx := context.Background()
	lines := basicLines(t)
	dir := t.TempDir()
	writeLines(t, dir, "a.jsonl", lines...)
	path := filepath.Join(t.TempDir(), "store.duckdb")
	db, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Load(ctx, dir); err != nil {
		t.Fatal(err)
	}
	db.Close()
	own := withSession(lines, "20261130-090000.000-00000b0b")
	writeLines(t, dir, "b.jsonl", append(append([]string{}, lines...), own...)...)
	db, err = Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	obs := &recorder{t: t}
	rep, err := db.LoadObserved(ctx, obs, dir)
	if err != nil {
		t.Fatal(err)
	}
	b := trajectory.Name(filepath.Join(dir, "b.jsonl"))
	if len(rep.Duplicates) != 1 || rep.Duplicates[0].File != b {
		t.Fatalf("duplicates %+v, want the copy in b.jsonl: the test proves nothing", rep.Duplicates)
	}
	tb, err := db.Query(ctx, "SELECT file, session, seq, line FROM raw_events WHERE file = "+quoteString(b)+" ORDER BY line")
	if err != nil {
		t.Fatal(err)
	}
	var loaded []string
	for _, r := range tb.Rows {
		loaded = append(loaded, fmt.Sprintf("%v|%v|%v|%v", r[0], r[1], r[2], r[3]))
	}
	if len(loaded) != len(own) || !reflect.DeepEqual(obs.events, loaded) {
		t.Fatalf("observed %d events, loaded %d of b.jsonl's own %d:\nobserved %v\nloaded   %v", len(obs.events), len(loaded), len(own), obs.events, loaded)
	}
}

// Standard input is observed like a file, so the detectors over the event
// stream see a trajectory piped in.
func TestAnObserverSeesStandardInput(t *testing.T) {
	lines := basicLines(t)
	obs, _, err, loaded := observeLoad(t, Options{Stdin: strings.NewReader(strings.Join(lines, ""))}, 1<<40, trajectory.Stdin)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != len(lines) || !reflect.DeepEqual(obs.events, loaded) {
		t.Fatalf("observed %v, loaded %v", obs.events, loaded)
	}
	if !strings.HasPrefix(obs.events[0], trajectory.StdinName+"|") {
		t.Fatalf("events are named %q, want %s", obs.events[0], trajectory.StdinName)
	}
}

// FuzzObservedIsWhatLoads checks, on any input loaded as two files (the
// data, and the data again: every session a copy) checked in small parts,
// that a load that succeeds hands its Observer exactly the events it puts
// into DuckDB, strict and lenient. Each exec loads into DuckDB twice.
func FuzzObservedIsWhatLoads(f *testing.F) {
	basic, err := os.ReadFile(filepath.Join(validDir, "basic.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	lines := strings.SplitAfter(string(basic), "\n")
	f.Add(basic, []byte{})
	f.Add([]byte(strings.Join(lines[:5], "")+lines[4]+strings.Join(lines[5:], "")), []byte(strings.Join(lines[:3], "")))
	f.Add([]byte(strings.Join(lines[:7], "")+strings.Join(lines[2:], "")), basic)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "a.jsonl"), a, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "b.jsonl"), append(b, a...), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, lenient := range []bool{false, true} {
			obs, _, err, loaded := observeLoad(t, Options{Lenient: lenient}, 1<<8, dir)
			if err == nil && !reflect.DeepEqual(obs.events, loaded) {
				t.Fatalf("lenient=%v: observed\n%v\nloaded\n%v", lenient, obs.events, loaded)
			}
		}
	})
}

// canceler is an Observer that cancels the load on its first call and
// then takes its time, as a caller giving up halfway would.
type canceler struct {
	cancel context.CancelFunc
	calls  int
}

func (c *canceler) Events(string, []Located) {
	c.calls++
	c.cancel()
}
func (c *canceler) EndFile(string) {}

// A load canceled while it feeds an Observer stops, with the context's
// error, and loads nothing: no worker waits forever for a place in the
// window or for the feed.
func TestACanceledObservedLoadStops(t *testing.T) {
	lines := basicLines(t)
	dir := t.TempDir()
	for i := range 50 {
		writeLines(t, dir, fmt.Sprintf("s%02d.jsonl", i), withSession(lines, fmt.Sprintf("20261130-090000.000-%08x", i))...)
	}
	old := windowBytes
	windowBytes = 1 // one part at a time
	defer func() { windowBytes = old }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := open(t, Options{})
	obs := &canceler{cancel: cancel}
	_, err := db.LoadObserved(ctx, obs, dir)
	if !errors.Is(err, context.Canceled) || obs.calls == 0 || obs.calls == 50 {
		t.Fatalf("err = %v after %d Events calls; want context.Canceled after the first few of 50", err, obs.calls)
	}
	if got := rows(t, db, "SELECT count(*) FROM raw_events"); got[0] != "0" {
		t.Fatalf("%s events loaded by a canceled load", got[0])
	}
}

func TestTheWindowLetsInOnePartOverItsSizeAndWaitsForTheRest(t *testing.T) {
	old := windowBytes
	windowBytes = 100
	defer func() { windowBytes = old }()
	w := newWindow(context.Background())
	defer w.stop()
	for _, size := range []int64{60, 40} {
		if !w.acquire(size) {
			t.Fatalf("acquire(%d) refused", size)
		}
	}
	got := make(chan bool)
	go func() { got <- w.acquire(500) }()
	select {
	case <-got:
		t.Fatal("a part over the window's size got in while it was full")
	case <-time.After(50 * time.Millisecond):
	}
	w.release(60)
	select {
	case <-got:
		t.Fatal("a part of 500 bytes got in next to 40")
	case <-time.After(50 * time.Millisecond):
	}
	w.release(40)
	if !<-got {
		t.Fatal("a part over the window's size was refused once the window emptied")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cw := newWindow(ctx)
	defer cw.stop()
	cw.acquire(100)
	go func() { got <- cw.acquire(1) }()
	cancel()
	if <-got {
		t.Fatal("a canceled load got a place")
	}
}
