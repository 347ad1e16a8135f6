package agent

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// BenchmarkSessionTurnsLinear shows that what a turn costs does not grow
// with the session: it runs scripted sessions of 100 and 1000 reads of a
// 2 KB file through the whole loop and the recorder, and reports the CPU
// time per turn of each and their ratio, which stays near 1 when the cost
// of recording a request (its request_bytes and message hashes) is linear
// in the turns rather than re-serialising the whole conversation.
func BenchmarkSessionTurnsLinear(b *testing.B) {
	ws := b.TempDir()
	readme := strings.Repeat("retrace is a flight recorder for agents.\n", 50)
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte(readme), 0o644); err != nil {
		b.Fatal(err)
	}
	scripts := map[int][]byte{100: benchScript(100), 1000: benchScript(1000)}
	session := func(turns int) time.Duration {
		script, err := mockllm.ParseScript(scripts[turns], "bench")
		if err != nil {
			b.Fatal(err)
		}
		rec := recorder.New(io.Discard, recorder.Options{})
		cfg := baseConfig(b, ws, script, rec)
		cfg.Limits.MaxTurns = turns
		cfg.Defenses = []trajectory.DefenseName{}
		cpu0, _ := cpuTime()
		res, err := Run(b.Context(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rec.Close(); err != nil {
			b.Fatal(err)
		}
		cpu1, _ := cpuTime()
		if res.Reason != trajectory.EndMaxTurns || res.Turns != turns {
			b.Fatalf("ended %s after %d turns", res.Reason, res.Turns)
		}
		return cpu1 - cpu0
	}
	if _, ok := cpuTime(); !ok {
		b.Skip("no process CPU time on this system")
	}
	var short, long time.Duration
	for b.Loop() {
		short += session(100)
		long += session(1000)
	}
	perShort := float64(short.Microseconds()) / float64(100*b.N)
	perLong := float64(long.Microseconds()) / float64(1000*b.N)
	b.ReportMetric(perShort, "cpu-µs/turn@100")
	b.ReportMetric(perLong, "cpu-µs/turn@1000")
	b.ReportMetric(perLong/perShort, "ratio@1000/100")
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
