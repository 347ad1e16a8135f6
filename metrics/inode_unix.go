//go:build unix

package metrics

import (
	"io/fs"
	"syscall"
)

// inode returns the file's inode number: a file replaced by another of the
// same size and time (a rename over it) is a new file.
func inode(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int64(st.Ino)
	}
	return 0
}
