//go:build !unix

package scratch

import (
	"errors"
	"io/fs"
	"os"
)

// canLock says flock(2) is there to hold a directory with: not here, so
// nothing is swept.
const canLock = false

// errHeld means another open file holds the lock.
var errHeld = errors.New("held by another process")

// hold does nothing: without flock(2) a directory is held by no lock.
func hold(*os.File) error { return nil }

// tryHold says every lock is held, so nothing is removed.
func tryHold(*os.File) error { return errHeld }

// mine says no file is known to be this user's.
func mine(fs.FileInfo) bool { return false }

// openLock opens the lock file at path.
func openLock(path string) (*os.File, error) { return os.OpenFile(path, os.O_RDWR, 0) }
