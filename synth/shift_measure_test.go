package synth_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	retracestats "github.com/retrace-dev/retrace/stats"
	"github.com/retrace-dev/retrace/synth"
	"github.com/retrace-dev/retrace/trajectory"
)

// toolTally counts one tool's calls over a corpus.
type toolTally struct {
	calls, successes int
	failures         map[trajectory.FailureKind]int
	durations        []float64 // tool_end duration_ms
}

func (t *toolTally) failed() int {
	n := 0
	for _, v := range t.failures {
		n += v
	}
	return n
}

// tally generates opts' sessions in memory and counts per tool.
func tally(t testing.TB, opts synth.Options) map[string]*toolTally {
	t.Helper()
	out := map[string]*toolTally{}
	get := func(name string) *toolTally {
		if out[name] == nil {
			out[name] = &toolTally{failures: map[trajectory.FailureKind]int{}}
		}
		return out[name]
	}
	var buf bytes.Buffer
	for i := range opts.Sessions {
		buf.Reset()
		if _, err := synth.WriteSession(&buf, opts, i); err != nil {
			t.Fatal(err)
		}
		d := trajectory.NewDecoder(&buf, "session")
		for {
			ev, err := d.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			switch p := ev.Payload.(type) {
			case *trajectory.ToolCall:
				get(p.Tool).calls++
			case *trajectory.ToolSuccess:
				get(p.Tool).successes++
			case *trajectory.ToolFailure:
				get(p.Tool).failures[p.FailureKind]++
			case *trajectory.ToolEnd:
				tt := get(p.Tool)
				tt.durations = append(tt.durations, p.DurationMs)
			}
		}
	}
	return out
}

func TestMeasure(t *testing.T) {
	base := tally(t, synth.Options{Sessions: 2000, Seed: 1})
	sh := tally(t, synth.Options{Sessions: 2000, Seed: 1, Shifts: []synth.Shift{{Tool: "bash", FailurePoints: 0.05}, {Tool: "read", TailFactor: 1.5}}})
	for _, name := range []string{"bash", "read", "edit", "grep"} {
		b, v := base[name], sh[name]
		t.Logf("%s: rate %.4f -> %.4f; p50 %.4f -> %.4f; p95 %.4f -> %.4f", name, float64(b.failed())/float64(b.calls), float64(v.failed())/float64(v.calls),
			retracestats.Quantile(b.durations, 0.5), retracestats.Quantile(v.durations, 0.5), retracestats.Quantile(b.durations, 0.95), retracestats.Quantile(v.durations, 0.95))
	}
}
