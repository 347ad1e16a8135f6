package scratch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/filelock"
)

// lockName is the lock file inside every directory Make makes.
const lockName = ".retrace-lock"

// quiet is how long a directory no process holds must have been left
// unchanged before Make removes it: a process takes its lock right after
// making its directory, and the wait keeps Make from taking a directory
// in that moment.
const quiet = time.Minute

// Dir is a scratch directory this process holds until Remove.
type Dir struct {
	// Path is the directory.
	Path string
	lock *os.File
}

// Make makes a directory named prefix and a random suffix in parent (the
// system's temporary directory when empty) and holds it, after removing
// the directories of that prefix in parent that a process which ended
// left there (see the package doc). A failure to remove one is not
// Make's: the new directory is made all the same.
func Make(parent, prefix string) (*Dir, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	sweep(parent, prefix)
	path, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(path, lockName), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		var ok bool
		// No one else has the lock file yet: only a failure of flock(2)
		// itself stops this.
		if ok, err = filelock.Try(lock, true); errors.Is(err, filelock.ErrUnsupported) {
			err = nil
		} else if !ok && err == nil {
			err = errors.New("its lock is held already")
		}
	}
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		os.RemoveAll(path)
		return nil, fmt.Errorf("scratch directory %s: %w", path, err)
	}
	return &Dir{Path: path, lock: lock}, nil
}

// Remove removes the directory and everything in it, and lets it go.
func (d *Dir) Remove() error {
	if d == nil || d.lock == nil {
		return nil
	}
	err := os.RemoveAll(d.Path)
	d.lock.Close()
	d.lock = nil
	return err
}

// sweep removes the directories of prefix in parent that no process
// holds and that have not changed for quiet.
func sweep(parent, prefix string) {
	if !filelock.Supported {
		return
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		// ReadDir does not follow links: a link is not a directory here.
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		path := filepath.Join(parent, e.Name())
		if info, err := os.Lstat(path); err != nil || !info.IsDir() || !mine(info) || time.Since(info.ModTime()) < quiet {
			continue
		}
		removeIfLeft(path)
	}
}

// removeIfLeft removes the directory at path when its lock file is there
// and no process holds it.
func removeIfLeft(path string) {
	lock, err := openLock(filepath.Join(path, lockName))
	if err != nil {
		return
	}
	defer lock.Close()
	// Held by a live process, or not lockable: left alone either way.
	if ok, err := filelock.Try(lock, true); !ok || err != nil {
		return
	}
	os.RemoveAll(path)
}
