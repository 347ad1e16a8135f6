//go:build unix

package filelock

import (
	"errors"
	"os"
	"syscall"
)

// Supported says flock(2) is there.
const Supported = true

// Try takes f's lock, shared or exclusive, without waiting: false when
// another open file holds a lock that conflicts, even one of this
// process (a flock belongs to an open file, not a process).
func Try(f *os.File, exclusive bool) (bool, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case errors.Is(err, syscall.EINTR):
			// A signal came in before the call decided: ask again.
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		default:
			return err == nil, err
		}
	}
}

// Unlock lets f's lock go, keeping f open.
func Unlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
