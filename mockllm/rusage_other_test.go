//go:build !unix

package mockllm_test

import "time"

// processCPU is unknown here; benchmarks then report no CPU throughput.
func processCPU() time.Duration { return 0 }
