//go:build unix

package scratch

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// canLock says flock(2) is there to hold a directory with.
const canLock = true

// errHeld means another open file holds the lock.
var errHeld = errors.New("held by another process")

// hold takes f's lock for as long as f stays open.
func hold(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// tryHold takes f's lock if no one holds it, and says errHeld when
// someone does.
func tryHold(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errHeld
	}
	return err
}

// mine says the file is this user's: another user's directory is not
// this process's to remove.
func mine(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// openLock opens the lock file at path, not a link planted in its place.
func openLock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
}
