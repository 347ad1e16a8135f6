//go:build unix

package scratch

import (
	"io/fs"
	"os"
	"syscall"
)

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
