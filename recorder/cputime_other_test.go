//go:build !unix

package recorder

import "time"

// cpuTime is not measured here.
func cpuTime() (time.Duration, bool) { return 0, false }
