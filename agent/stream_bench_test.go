package agent

import (
	"io"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// BenchmarkStreamedToolsWallTime runs one session whose first reply
// streams a sentence and then N tool calls, the model taking gap to write
// each event and each call taking work, once with streaming tool
// execution and once with batch_tools, alternately in the same loop, and
// reports both wall times per session and their ratio (the
// calls hide behind the reply). The pace is realistic for a fast model
// scaled down: 60 ms an event, 50 ms a call.
func BenchmarkStreamedToolsWallTime(b *testing.B) {
	for _, c := range []struct {
		name string
		safe bool
	}{{"3_reads_parallel", true}, {"3_writes_serial", false}} {
		b.Run(c.name, func(b *testing.B) {
			const gap, work = 60 * time.Millisecond, 50 * time.Millisecond
			run := func(batch bool) time.Duration {
				probe := newProbe("probe", c.safe)
				probe.sleep = work
				p := &pacedProvider{probe: probe, gap: gap, turns: []pacedTurn{
					{content: []trajectory.ContentBlock{text("Working on it."), probeUse("toolu_1", "probe", "a"), probeUse("toolu_2", "probe", "b"), probeUse("toolu_3", "probe", "c")}},
					{content: []trajectory.ContentBlock{text("Done.")}},
				}}
				cfg := baseConfig(b, b.TempDir(), nil, recorder.New(io.Discard, recorder.Options{}), probe)
				cfg.Provider, cfg.Stream, cfg.BatchTools = p, true, batch
				start := time.Now()
				res, err := Run(b.Context(), cfg)
				if err != nil || res.Reason != trajectory.EndTurn || res.ToolCalls != 3 {
					b.Fatalf("session: %v, %+v", err, res)
				}
				return time.Since(start)
			}
			var streamed, batched time.Duration
			for b.Loop() {
				streamed += run(false)
				batched += run(true)
			}
			n := float64(b.N)
			b.ReportMetric(float64(streamed.Milliseconds())/n, "stream-ms/session")
			b.ReportMetric(float64(batched.Milliseconds())/n, "batch-ms/session")
			b.ReportMetric(float64(streamed)/float64(batched), "stream/batch")
		})
	}
}
