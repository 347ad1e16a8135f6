package agent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// BenchmarkSession200Turns runs a 200-turn scripted session of small reads
// through the whole loop (executor, recorder, defenses off so that the
// repeated-readonly guard does not stop it) and reports turns per second.
func BenchmarkSession200Turns(b *testing.B) {
	const turns = 200
	ws := b.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("retrace is a flight recorder for agents.\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	total := 0
	for i := 0; b.Loop(); i++ {
		script, err := mockllm.ParseScript(benchScript(turns), "bench")
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		rec := recorder.New(&buf, recorder.Options{})
		cfg := baseConfig(b, ws, script, rec)
		cfg.Limits.MaxTurns = turns
		cfg.Defenses = []trajectory.DefenseName{}
		res, err := Run(b.Context(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rec.Close(); err != nil {
			b.Fatal(err)
		}
		if res.Reason != trajectory.EndMaxTurns || res.Turns != turns {
			b.Fatalf("ended %s after %d turns", res.Reason, res.Turns)
		}
		if i == 0 {
			validate(b, buf.Bytes())
		}
		total += res.Turns
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "turns/s")
}

// benchScript is a script of n reads of a small file. It is generated, not
// a repeating script, because a repeating script repeats its tool_use ids
// and the trajectory rightly rejects two calls with one id.
func benchScript(n int) []byte {
	var b bytes.Buffer
	b.WriteString("turns:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - content: [{tool_use: {id: toolu_%d, name: read, input: {file_path: README.md}}}]\n", i)
	}
	return b.Bytes()
}
