package main

import (
	"fmt"
	"os"
)

// Files retrace writes hold what models and tools wrote, redacted but still
// private to the user: exports, reports and results are created 0600 and
// the directories for them 0700, like the trajectories and blobs the
// recorder writes.

// createPrivate creates or truncates the file at path with mode 0600; a
// file that was there keeps its inode but loses any wider mode.
func createPrivate(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("make %s private: %w", path, err)
	}
	return f, nil
}

// mkdirPrivate creates dir and its missing parents with mode 0700.
func mkdirPrivate(dir string) error { return os.MkdirAll(dir, 0o700) }
