//go:build !unix

package importer

import "time"

// cpuTime is unknown here; benchmarks then report no CPU throughput.
func cpuTime() time.Duration { return 0 }
