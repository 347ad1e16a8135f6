package scenarios

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/filelock"
)

func TestASecondLockOfAnOutDirectoryIsRefusedNamingTheHolder(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 12, 5, 23, 0, 0, 0, time.UTC)
	release, err := LockOut(dir, start)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockOut(dir, start)
	var le *OutLockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrOutLocked) {
		t.Fatalf("second lock: %v, want an OutLockedError", err)
	}
	if !strings.Contains(err.Error(), "started 2026-12-05T23:00:00Z") || !strings.Contains(err.Error(), "pid ") {
		t.Errorf("the refusal does not name the holder: %v", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	again, err := LockOut(dir, start)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}

// An eval refused in the moment between the holder taking the lock and
// writing its line still names the holder, and a released lock names no
// one: its line went with it.
func TestARefusalWaitsForTheHolderToSayWhoItIs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ok, err := filelock.Try(f, true); !ok || err != nil {
		t.Skipf("no flock(2) here: %v", err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		f.WriteAt([]byte("pid 42 started 2026-12-06T12:00:00Z\n"), 0)
	}()
	_, err = LockOut(dir, time.Now())
	var le *OutLockedError
	if !errors.As(err, &le) || le.Holder != "pid 42 started 2026-12-06T12:00:00Z" {
		t.Fatalf("refusal = %v, want it to name pid 42", err)
	}
	f.Close()

	release, err := LockOut(dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); len(data) != 0 {
		t.Errorf("a released lock file still says %q", data)
	}
}

// Recordings with no results.json naming them are not an eval's output:
// PrepareOut refuses the directory and removes nothing. An eval killed
// after it removed the recordings of the earlier one, before its
// results.json, leaves a directory the next one prepares.
func TestPrepareOutRemovesOnlyAnEarlierEvalsOutput(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	if err := os.MkdirAll(filepath.Join(runs, "a.blobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.jsonl", "b.jsonl"} {
		if err := os.WriteFile(filepath.Join(runs, f), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var held *OutHoldsRunsError
	if err := PrepareOut(dir); !errors.As(err, &held) || held.Runs != 2 || held.Foreign != 2 {
		t.Fatalf("no results.json: %v, want both recordings foreign", err)
	}
	results := `{"version":1,"scenarios":[{"name":"s","verdict":"pass","runs":[{"repeat":1,"passed":true,"trajectory":"elsewhere/runs/a.jsonl"}]}]}`
	if err := os.WriteFile(filepath.Join(dir, ResultsFile), []byte(results), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := PrepareOut(dir); !errors.As(err, &held) || held.Foreign != 1 {
		t.Fatalf("b.jsonl not named: %v, want one foreign recording", err)
	}
	for _, f := range []string{"a.jsonl", "a.blobs", "b.jsonl"} {
		if _, err := os.Stat(filepath.Join(runs, f)); err != nil {
			t.Errorf("a refused directory lost %s: %v", f, err)
		}
	}
	if err := os.Remove(filepath.Join(runs, "b.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := PrepareOut(dir); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(runs)
	if _, err := os.Stat(filepath.Join(dir, ResultsFile)); len(left) != 0 || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an earlier eval's output is still there: runs/ holds %d entries, results.json: %v", len(left), err)
	}
}
