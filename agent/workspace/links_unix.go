//go:build unix

package workspace

import (
	"io/fs"
	"syscall"
)

// LinkCount returns how many directory entries name the file info
// describes (its hard links), or 1 when the system does not say.
func LinkCount(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
