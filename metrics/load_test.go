package metrics

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// basicLines returns the lines of the basic fixture, each with its newline.
func basicLines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(validDir, "basic.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	lines[len(lines)-1] += "\n"
	return lines
}

// writeLines writes lines to name in dir and returns its path.
func writeLines(t *testing.T, dir, name string, lines ...string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadRefusesOrDropsASeqThatRepeatsOrGoesBack(t *testing.T) {
	lines := basicLines(t)
	// Line 4 is the one tool_call: counted twice, the funnel would say 2.
	repeated := append(append(append([]string{}, lines[:4]...), lines[3]), lines[4:]...)
	back := append(append(append([]string{}, lines[:6]...), lines[2]), lines[6:]...)
	for _, tc := range []struct {
		name  string
		lines []string
		line  int
		msg   string
	}{
		{"A tool_call repeated on the next line is refused at that line.", repeated, 5, "seq 4 after 4"},
		{"An event whose seq goes back is refused at its line.", back, 7, "seq 3 after 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeLines(t, t.TempDir(), "s.jsonl", tc.lines...)
			ctx := context.Background()
			_, err := open(t, Options{}).Load(ctx, p)
			var le *trajectory.LineError
			if !errors.Is(err, ErrSeq) || !errors.As(err, &le) || le.File != p || le.Line != tc.line || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("strict: err = %v, want ErrSeq at %s:%d saying %q", err, p, tc.line, tc.msg)
			}
			if !strings.Contains(err.Error(), "--lenient") {
				t.Fatalf("strict: %q does not say what to do", err)
			}
			db := open(t, Options{Lenient: true})
			rep, err := db.Load(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if fr := rep.Files[0]; fr.Dropped != 1 || fr.Events != 11 || !errors.Is(fr.FirstDropped, ErrSeq) {
				t.Fatalf("lenient: report %+v, want 1 dropped and the 11 events", fr)
			}
			if got := rows(t, db, "select count(*), count(distinct seq) from events"); got[0] != "11|11" {
				t.Fatalf("lenient: events|distinct seqs = %s, want 11|11", got[0])
			}
			if got := rows(t, db, "select count(*) from tool_calls"); got[0] != "1" {
				t.Fatalf("lenient: %s tool calls, want the one counted once", got[0])
			}
		})
	}
}

func TestLoadChecksSeqPerSessionInAFileOfMany(t *testing.T) {
	lines := basicLines(t)
	var other []string
	for _, l := range lines {
		other = append(other, strings.ReplaceAll(l, "1a2b3c4d", "99999999"))
	}
	// Two sessions one after the other, each from seq 1: nothing repeats
	// within a session.
	p := writeLines(t, t.TempDir(), "two.jsonl", append(append([]string{}, lines...), other...)...)
	rep, err := open(t, Options{}).Load(context.Background(), p)
	if err != nil || rep.Events != 22 {
		t.Fatalf("report %+v, err %v; want the 22 events of two sessions", rep, err)
	}
	// Twenty sessions, past the number a part finds by a scan, and the
	// third one's tool_call repeated after the fifteenth.
	var many []string
	for i := range 20 {
		for _, l := range lines {
			many = append(many, strings.ReplaceAll(l, "1a2b3c4d", fmt.Sprintf("%08d", i)))
		}
	}
	repeated := append(append(append([]string{}, many[:15*11]...), many[2*11+3]), many[15*11:]...)
	p = writeLines(t, t.TempDir(), "many.jsonl", repeated...)
	_, err = open(t, Options{}).Load(context.Background(), p)
	var le *trajectory.LineError
	if !errors.As(err, &le) || le.Line != 15*11+1 || !strings.Contains(err.Error(), "seq 4 after 11") {
		t.Fatalf("err = %v, want seq 4 after 11 at line %d", err, 15*11+1)
	}
	rep, err = open(t, Options{Lenient: true}).Load(context.Background(), p)
	if err != nil || rep.Events != 220 || rep.Files[0].Dropped != 1 {
		t.Fatalf("lenient: report %+v, err %v; want 220 events and 1 dropped", rep, err)
	}
}

func TestAFileWithoutEventsIsRefusedAsValidateRefusesIt(t *testing.T) {
	dir := t.TempDir()
	good := writeLines(t, dir, "good.jsonl", basicLines(t)...)
	for _, tc := range []struct{ name, content string }{
		{"A 0-byte file.", ""},
		{"A file of blank lines.", "\n\n  \n"},
		{"A file holding only a torn first line.", `{"v":1,"session":"x","se`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeLines(t, dir, "empty.jsonl", tc.content)
			ctx := context.Background()
			_, err := open(t, Options{}).Load(ctx, good, p)
			var fe *trajectory.FileError
			if !errors.Is(err, trajectory.ErrEmpty) || !errors.As(err, &fe) || fe.File != p {
				t.Fatalf("strict: err = %v, want ErrEmpty naming %s", err, p)
			}
			vrep, verr := trajectory.ValidateFile(p)
			if verr != nil || len(vrep.Problems) != 1 || vrep.Problems[0].Error() != fe.Error() {
				t.Fatalf("validate says %v (err %v), the load says %v; they must agree", vrep.Problems, verr, fe)
			}
			rep, err := open(t, Options{Lenient: true}).Load(ctx, good, p)
			if err != nil || rep.Events != 11 || len(rep.Files) != 2 || !errors.Is(rep.Files[0].Err, trajectory.ErrEmpty) {
				t.Fatalf("lenient: report %+v, err %v; want the good file's 11 events and the empty one left out", rep, err)
			}
		})
	}
}

func TestLoadReadsStdinAndNamesIt(t *testing.T) {
	ctx := context.Background()
	db := open(t, Options{Stdin: strings.NewReader(strings.Join(basicLines(t), ""))})
	rep, err := db.Load(ctx, trajectory.Stdin)
	if err != nil || rep.Events != 11 || rep.Files[0].File != trajectory.StdinName {
		t.Fatalf("report %+v, err %v; want 11 events from %s", rep, err, trajectory.StdinName)
	}
	if got := rows(t, db, "select distinct file from events"); len(got) != 1 || got[0] != trajectory.StdinName {
		t.Fatalf("file column %v, want %s", got, trajectory.StdinName)
	}
	_, err = open(t, Options{}).Load(ctx, trajectory.Stdin)
	if !errors.Is(err, trajectory.ErrUnreadable) {
		t.Fatalf("without Options.Stdin: err = %v, want ErrUnreadable", err)
	}
}

func TestOneUnreadableEntryDoesNotHideTheRestOfTheDirectory(t *testing.T) {
	dir := t.TempDir()
	writeLines(t, dir, "good.jsonl", basicLines(t)...)
	bad := writeLines(t, dir, "bad.jsonl", `{"v":1}`+"\n")
	loop := filepath.Join(dir, "loop.jsonl")
	if err := os.Symlink("loop.jsonl", loop); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err := open(t, Options{}).Load(ctx, dir)
	var le *LoadError
	if !errors.As(err, &le) || len(le.Problems) != 2 || !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("strict: err = %v, want a LoadError naming the loop and the bad line", err)
	}
	for _, want := range []string{loop + ": cannot read", "symlink loop", bad + ":1:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("strict: %q does not say %q", err, want)
		}
	}
	rep, err := open(t, Options{Lenient: true}).Load(ctx, dir)
	if err != nil || rep.Events != 11 || len(rep.NotRegular) != 1 || !strings.Contains(rep.NotRegular[0].String(), "pipe.jsonl: warning: skipped: a named pipe") {
		t.Fatalf("lenient: report %+v, err %v; want 11 events and the pipe skipped", rep, err)
	}
	var leftOut []string
	for _, f := range rep.Files {
		if f.Err != nil {
			leftOut = append(leftOut, f.File)
		}
	}
	if strings.Join(leftOut, ",") != loop {
		t.Fatalf("lenient: left out %v, want only %s", leftOut, loop)
	}
}

func TestASessionInTwoFilesIsLoadedOnceFromTheFirstOrRefusedWithStrictDupes(t *testing.T) {
	lines := basicLines(t)
	for _, tc := range []struct {
		name   string
		a, b   []string
		events int // loaded: a's events only
		left   int // b's events left out
	}{
		{"A whole copy in another directory.", lines, lines, 11, 11},
		{"Two files overlapping by three events.", lines[:6], lines[3:], 6, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a := writeLines(t, filepath.Join(dir), "a.jsonl", tc.a...)
			if err := os.Mkdir(filepath.Join(dir, "copy"), 0o755); err != nil {
				t.Fatal(err)
			}
			b := writeLines(t, filepath.Join(dir, "copy"), "b.jsonl", tc.b...)
			ctx := context.Background()
			for _, lenient := range []bool{false, true} {
				db := open(t, Options{Lenient: lenient})
				rec := &recorder{t: t}
				rep, err := db.LoadObserved(ctx, rec, dir)
				if err != nil || rep.Events != tc.events {
					t.Fatalf("lenient %v: report %+v, err %v; want a's %d events once", lenient, rep, err, tc.events)
				}
				want := Duplicate{Session: "20261130-090000.000-1a2b3c4d", File: b, Line: 1, Kept: a}
				if len(rep.Duplicates) != 1 || rep.Duplicates[0] != want {
					t.Fatalf("lenient %v: duplicates %+v, want [%+v]", lenient, rep.Duplicates, want)
				}
				if fr := rep.Files[1]; fr.File != b || fr.Duplicates != tc.left || fr.Dropped != 0 || fr.Events != 0 {
					t.Fatalf("lenient %v: report of the copy %+v, want %d left out as duplicates", lenient, fr, tc.left)
				}
				if got := rows(t, db, "select count(*), count(distinct seq), count(distinct file) from events"); got[0] != fmt.Sprintf("%d|%d|1", tc.events, tc.events) {
					t.Fatalf("lenient %v: events|distinct seqs|files = %s, want a's %d events", lenient, got[0], tc.events)
				}
				if n := len(rec.events); n != tc.events {
					t.Fatalf("lenient %v: the observer saw %d events, want the %d loaded", lenient, n, tc.events)
				}
			}
			_, err := open(t, Options{StrictDupes: true, Lenient: true}).Load(ctx, dir)
			var le *trajectory.LineError
			if !errors.Is(err, ErrDuplicateSession) || !errors.As(err, &le) || le.File != b || le.Line != 1 || !strings.Contains(err.Error(), "is in "+a+" too") {
				t.Fatalf("strict dupes: err = %v, want ErrDuplicateSession at %s:1 naming %s", err, b, a)
			}
		})
	}
}

func TestASessionContinuedInASecondFileIsNoDuplicate(t *testing.T) {
	lines := basicLines(t)
	dir := t.TempDir()
	writeLines(t, dir, "a.jsonl", lines[:5]...)
	writeLines(t, dir, "b.jsonl", lines[5:]...)
	rep, err := open(t, Options{}).Load(context.Background(), dir)
	if err != nil || rep.Events != len(lines) || len(rep.Duplicates) != 0 {
		t.Fatalf("report %+v, err %v; want all %d events and no duplicate", rep, err, len(lines))
	}
}

func TestALenientLoadRefusesAStreamItCannotReadAgainToDropACopy(t *testing.T) {
	dir := t.TempDir()
	writeLines(t, dir, "a.jsonl", basicLines(t)...)
	pipe := filepath.Join(dir, "z.jsonl")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		if f, err := os.OpenFile(pipe, os.O_WRONLY, 0); err == nil {
			f.WriteString(strings.Join(basicLines(t), ""))
			f.Close()
		}
	}()
	_, err := open(t, Options{Lenient: true}).Load(context.Background(), filepath.Join(dir, "a.jsonl"), pipe)
	var fe *trajectory.FileError
	if !errors.Is(err, ErrSeq) || !errors.As(err, &fe) || fe.File != pipe || !strings.Contains(err.Error(), "save it to a file") {
		t.Fatalf("err = %v, want ErrSeq naming the pipe and what to do", err)
	}
}

func TestAKeptDatabaseAnswersForExactlyTheRunsGiven(t *testing.T) {
	lines := basicLines(t)
	dir := t.TempDir()
	a := writeLines(t, dir, "a.jsonl", lines...)
	other := strings.ReplaceAll(strings.Join(lines, ""), "1a2b3c4d", "99999999")
	b := filepath.Join(dir, "b.jsonl")
	if err := os.WriteFile(b, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kept.duckdb")
	ctx := context.Background()
	load := func(paths ...string) (LoadReport, []string) {
		t.Helper()
		db, err := Open(ctx, Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rep, err := db.Load(ctx, paths...)
		if err != nil {
			t.Fatal(err)
		}
		return rep, rows(t, db, "select session, count(*) from events group by session order by session")
	}
	rep, got := load(a, b)
	if len(got) != 2 || len(rep.Files) != 2 || len(rep.Unchanged) != 0 {
		t.Fatalf("A and B: sessions %v, report %+v; want both read", got, rep)
	}
	rep, got = load(a)
	if strings.Join(got, ",") != "20261130-090000.000-1a2b3c4d|11" || len(rep.Files) != 0 || len(rep.Unchanged) != 1 {
		t.Fatalf("A alone: sessions %v, report %+v; want only A's session, A not read again", got, rep)
	}
	// Same size and modification time: not read again, so even bytes
	// that no longer decode do not matter (a proof that it was not read).
	info, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte(strings.Repeat("x", int(info.Size()))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(a, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	if rep, got = load(a); len(got) != 1 || len(rep.Unchanged) != 1 {
		t.Fatalf("A unchanged by its stamp: sessions %v, report %+v", got, rep)
	}
	// A changed file is read again: fewer events now.
	writeLines(t, dir, "a.jsonl", lines[:4]...)
	rep, got = load(a)
	if strings.Join(got, ",") != "20261130-090000.000-1a2b3c4d|4" || len(rep.Files) != 1 {
		t.Fatalf("A changed: sessions %v, report %+v; want its 4 events now", got, rep)
	}
	// B again, and A gone from the paths: only B.
	if _, got = load(b); strings.Join(got, ",") != "20261130-090000.000-99999999|11" {
		t.Fatalf("B alone: sessions %v", got)
	}
	// A copy of B's session next to the kept B is a duplicate of it.
	c := filepath.Join(dir, "c.jsonl")
	if err := os.WriteFile(c, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, got = load(b, c)
	if len(got) != 1 || got[0] != "20261130-090000.000-99999999|11" || len(rep.Duplicates) != 1 || rep.Duplicates[0].Kept != b {
		t.Fatalf("B kept and its copy C: sessions %v, duplicates %+v; want B's once", got, rep.Duplicates)
	}
}

// BenchmarkKeptDatabaseLoad loads a corpus of 2,000 sessions into a kept
// database: first into a new one (every file read: the baseline), then
// again with every file unchanged (none read), then with one file changed
// and a tenth of the files no longer given. It reports the seconds of
// each.
func BenchmarkKeptDatabaseLoad(b *testing.B) {
	dir := b.TempDir()
	writeCorpus(b, dir, 2000)
	files, err := trajectory.Expand(dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var first, again, changed time.Duration
	for i := 0; i < b.N; i++ {
		path := filepath.Join(b.TempDir(), "kept.duckdb")
		timed := func(paths ...string) time.Duration {
			start := time.Now()
			db, err := Open(ctx, Options{Path: path})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := db.Load(ctx, paths...); err != nil {
				b.Fatal(err)
			}
			db.Close()
			return time.Since(start)
		}
		first += timed(files...)
		again += timed(files...)
		now := time.Now()
		if err := os.Chtimes(files[0], now, now); err != nil {
			b.Fatal(err)
		}
		changed += timed(files[:len(files)*9/10]...)
	}
	n := float64(b.N)
	b.ReportMetric(first.Seconds()/n, "s-new-db")
	b.ReportMetric(again.Seconds()/n, "s-unchanged")
	b.ReportMetric(changed.Seconds()/n, "s-1-changed-10pct-dropped")
}
