package sandbox

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
)

// maxLinkScan bounds the entries LinkedFiles looks at, so that a huge
// workspace costs a bounded time at session start.
const maxLinkScan = 200_000

// errScanDone stops the walk early.
var errScanDone = errors.New("scan done")

// LinkedFiles lists up to max regular files under workspace that have
// more than one hard link, and reports whether the scan looked at the
// whole workspace. Landlock checks paths, not inodes: a hard link that
// already exists inside the workspace reaches its other names, which may
// lie outside (a package manager's store, a file of the home directory),
// and the sandbox cannot stop a command writing through it. The session
// warns about them (harness.Build).
func LinkedFiles(workspace string, max int) (files []string, complete bool) {
	seen := 0
	complete = true
	err := filepath.WalkDir(workspace, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable directory: skip it
		}
		if seen++; seen > maxLinkScan {
			complete = false
			return errScanDone
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			files = append(files, p)
			if len(files) >= max {
				complete = false
				return errScanDone
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errScanDone) {
		complete = false
	}
	return files, complete
}
