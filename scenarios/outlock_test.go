package scenarios

import (
	"errors"
	"strings"
	"testing"
	"time"
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
