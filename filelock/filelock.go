package filelock

import "errors"

// ErrUnsupported means this system has no flock(2).
var ErrUnsupported = errors.New("file locks are not supported here")
