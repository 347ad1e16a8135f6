//go:build unix

package store

import (
	"os"
	"time"

	"github.com/retrace-dev/retrace/filelock"
)

// lockFile is a store's lock: flock(2) on a file next to it, shared by
// the processes reading the store and held alone by the one updating it.
// The kernel drops a dead process's lock, so a crash leaves none behind.
//
// A second file, the gate, keeps readers that come and go from starving
// an update: a reader passes the gate (shared) only to take the lock, and
// an update holds the gate alone while it waits for the readers inside to
// leave, so that no new one comes in meanwhile.
type lockFile struct {
	f, gate *os.File
}

func openLock(path string) (*lockFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	gate, err := os.OpenFile(path+".gate", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &lockFile{f: f, gate: gate}, nil
}

// lock takes the lock, shared or alone, waiting up to wait for others to
// let go; it returns ErrBusy when they do not.
func (l *lockFile) lock(exclusive bool, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	if err := flock(l.gate, exclusive, deadline); err != nil {
		return err
	}
	defer filelock.Unlock(l.gate)
	return flock(l.f, exclusive, deadline)
}

// flock takes f's lock, shared or alone, trying until deadline.
func flock(f *os.File, exclusive bool, deadline time.Time) error {
	for {
		ok, err := filelock.Try(f, exclusive)
		if ok || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return ErrBusy
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// unlock lets the lock go, keeping the file open.
func (l *lockFile) unlock() error { return filelock.Unlock(l.f) }

// Close lets the lock go and closes the files.
func (l *lockFile) Close() error {
	l.gate.Close()
	return l.f.Close()
}
