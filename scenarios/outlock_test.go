package scenarios

import (
	"errors"
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
