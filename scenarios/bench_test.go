package scenarios

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/harness"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/results"
)

// BenchmarkRunnerOverhead measures what the runner adds to one session
// that calls no tool: "session" is the bare session (workspace written,
// script parsed, harness.Build, Run, Close), "runner" the same scenario
// through Run with its expectations checked, "runner+detectors" with the
// detectors run over the recording too. The runner's own overhead is the
// difference of ms/scenario.
func BenchmarkRunnerOverhead(b *testing.B) {
	files := strings.Replace(minimal, "  outcome: {reason: end_turn}", "  outcome: {reason: end_turn, turns: 1}\n  files:\n    - {path: README.md, unchanged: true}\n  events:\n    - {tool_not_called: bash}", 1)
	s, err := Parse([]byte(files), "bench.txtar")
	if err != nil {
		b.Fatal(err)
	}
	withDetectors, err := Parse([]byte(strings.Replace(files, "    - {tool_not_called: bash}", "    - {tool_not_called: bash}\n  detectors: {no_others: true}", 1)), "bench.txtar")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("session", func(b *testing.B) {
		root := b.TempDir()
		for i := range b.N {
			ws := filepath.Join(root, fmt.Sprint(i))
			if err := writeWorkspace(ws, s.Files); err != nil {
				b.Fatal(err)
			}
			script, err := mockllm.ParseScript(s.Script, s.File)
			if err != nil {
				b.Fatal(err)
			}
			sess, err := harness.Build(context.Background(), harness.Spec{Workspace: ws, Provider: script, System: SystemPrompt,
				Prompt: s.Prompt, Runs: filepath.Join(root, "runs"), Config: s.Config})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := sess.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			if _, err := sess.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/scenario")
	})
	for _, c := range []struct {
		name string
		s    *Scenario
	}{{"runner", s}, {"runner+detectors", withDetectors}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				res := runSuite(b, []*Scenario{c.s}, Options{Parallel: 1})
				if res.Worst() != results.VerdictPass {
					b.Fatalf("the benchmark's scenario fails:\n%s", table(res))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/scenario")
		})
	}
}

// BenchmarkBuiltinSuite runs the whole built-in suite with one and with
// two runs at once and reports its wall time and throughput.
func BenchmarkBuiltinSuite(b *testing.B) {
	suite, err := Builtin()
	if err != nil {
		b.Fatal(err)
	}
	for _, j := range []int{1, 2} {
		b.Run(fmt.Sprintf("j=%d", j), func(b *testing.B) {
			for range b.N {
				res := runSuite(b, suite, Options{Parallel: j})
				if res.Worst() != results.VerdictPass {
					b.Fatalf("the built-in suite fails:\n%s", table(res))
				}
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(sec*1000, "ms/suite")
			b.ReportMetric(float64(len(suite))/sec, "scenarios/s")
		})
	}
}
