//go:build !unix

package store

import (
	"os"
	"time"
)

// lockFile is a store's lock. Without flock(2) no store is safe to share
// between processes, so every lock is busy and reading commands load cold.
type lockFile struct {
	f *os.File
}

func openLock(path string) (*lockFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &lockFile{f: f}, nil
}

func (l *lockFile) lock(exclusive bool, wait time.Duration) error { return ErrBusy }

func (l *lockFile) unlock() error { return nil }

func (l *lockFile) Close() error { return l.f.Close() }
