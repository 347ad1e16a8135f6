//go:build unix

package filelock

import (
	"os"
	"path/filepath"
	"testing"
)

// Locks conflict between open files as flock(2) says: shared with shared
// is fine, exclusive with anything is not, and Unlock lets the next one
// in.
func TestTryConflictsAsFlockSays(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	a, b, c := open(), open(), open()
	try := func(f *os.File, exclusive, want bool) {
		t.Helper()
		if got, err := Try(f, exclusive); got != want || err != nil {
			t.Fatalf("Try(exclusive=%v) = %v, %v; want %v", exclusive, got, err, want)
		}
	}
	try(a, false, true)
	try(b, false, true)
	try(c, true, false)
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	Unlock(b)
	try(c, true, true)
	try(a, false, false)
	try(b, true, false)
}
