//go:build !unix

package filelock

import "os"

// Supported says flock(2) is there: not here.
const Supported = false

// Try takes no lock: it says ErrUnsupported.
func Try(*os.File, bool) (bool, error) { return false, ErrUnsupported }

// Unlock does nothing: no lock was taken.
func Unlock(*os.File) error { return nil }
