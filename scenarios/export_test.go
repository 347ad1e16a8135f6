package scenarios

import (
	"context"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/results"
)

// EvalThreshold evaluates one threshold over the sessions given exactly
// as an eval's expect.metrics does, for the glossary cross-check, an
// external test (it needs diff and report, which import this package).
func EvalThreshold(ctx context.Context, db *metrics.DB, src string, sessions []string) (results.ThresholdResult, error) {
	t, err := ParseThreshold(src)
	if err != nil {
		return results.ThresholdResult{}, err
	}
	return evalThreshold(ctx, db, MetricExpect{Source: src, Threshold: t, MinRuns: 1}, sessions)
}
