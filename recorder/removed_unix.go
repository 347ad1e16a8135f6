//go:build unix

package recorder

import (
	"os"
	"syscall"
)

// removed reports whether f no longer has a name in any directory: its
// link count fell to 0 because it, or its directory, was deleted.
func removed(f *os.File) bool {
	info, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 0
}
