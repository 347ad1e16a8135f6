//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
	"time"
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
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	deadline := time.Now().Add(wait)
	if err := flock(l.gate, how, deadline); err != nil {
		return err
	}
	defer syscall.Flock(int(l.gate.Fd()), syscall.LOCK_UN)
	return flock(l.f, how, deadline)
}

// flock takes the flock how on f, trying until deadline.
func flock(f *os.File, how int, deadline time.Time) error {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		if time.Now().After(deadline) {
			return ErrBusy
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// unlock lets the lock go, keeping the file open.
func (l *lockFile) unlock() error { return syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN) }

// Close lets the lock go and closes the files.
func (l *lockFile) Close() error {
	l.gate.Close()
	return l.f.Close()
}
