package importer

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// synthClaudeCode writes a Claude Code transcript of the given number of
// turns in the record shapes of the real fixture: each turn an api-request,
// an assistant tool_use, a user tool_result with a 1 KiB output and a
// large attachment line the importer skips, as Claude Code's are.
func synthClaudeCode(b *testing.B, turns int) (string, int64) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	var sb strings.Builder
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ts := func(i int) string { return t0.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano) }
	out := strings.Repeat("x", 1024)
	snapshot := strings.Repeat("s", 8<<10)
	fmt.Fprintf(&sb, `{"type":"user","message":{"role":"user","content":"go"},"timestamp":%q,"permissionMode":"default","entrypoint":"cli","cwd":"/home/user/project","sessionId":"bench","version":"2.1.328"}`+"\n", ts(0))
	for i := 1; i <= turns; i++ {
		fmt.Fprintf(&sb, `{"type":"api-request","sessionId":"bench","id":"req%d","timestamp":%q,"params":{"model":"claude-sonnet-4-5","max_tokens":32000}}`+"\n", i, ts(4*i))
		fmt.Fprintf(&sb, `{"type":"assistant","isSidechain":false,"message":{"id":"msg%d","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"ls -la","description":"List"}}],"stop_reason":"tool_use","usage":{"input_tokens":2000,"output_tokens":20,"cache_read_input_tokens":100,"cache_creation_input_tokens":0}},"requestRef":"req%d","timestamp":%q,"sessionId":"bench","version":"2.1.328"}`+"\n", i, i, i, ts(4*i+1))
		fmt.Fprintf(&sb, `{"type":"user","isSidechain":false,"message":{"role":"user","content":[{"tool_use_id":"toolu_%d","type":"tool_result","content":%q,"is_error":false}]},"timestamp":%q,"toolUseResult":{"stdout":"x","stderr":"","interrupted":false},"permissionDecision":{"decision":"accept","source":"config","reasonType":"rule"},"sessionId":"bench"}`+"\n", i, out, ts(4*i+2))
		fmt.Fprintf(&sb, `{"type":"attachment","attachment":{"type":"prompt_snapshot","systemPrompt":[%q]},"timestamp":%q,"sessionId":"bench"}`+"\n", snapshot, ts(4*i+3))
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	return path, int64(sb.Len())
}

// BenchmarkImportClaudeCode measures import throughput, reading the
// transcript through writing and fsyncing the trajectory, in MB/s of
// transcript.
//
// Baseline, in the same run: the same file decoded line by line with
// encoding/json into the importer's record type and nothing else
// (BenchmarkImportClaudeCode/baseline), which is what the importer did
// per line before it read transcripts with segmentio/encoding. Under load
// compare the ratio of cpu_MB/s, not the absolute numbers.
func BenchmarkImportClaudeCode(b *testing.B) {
	// A trajectory (v2) grows linearly with the turns, so the long
	// session's throughput should match the short one's.
	b.Run("baseline/turns=2000", func(b *testing.B) {
		path, size := synthClaudeCode(b, 2000)
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(size)
		b.ResetTimer()
		cpu0 := cpuTime()
		for b.Loop() {
			for line := range bytes.Lines(data) {
				var r ccRecord
				if err := stdjson.Unmarshal(line, &r); err != nil {
					b.Fatal(err)
				}
			}
		}
		if cpu := cpuTime() - cpu0; cpu > 0 {
			b.ReportMetric(float64(size)*float64(b.N)/1e6/cpu.Seconds(), "cpu_MB/s")
		}
	})
	for _, turns := range []int{200, 2000} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			path, size := synthClaudeCode(b, turns)
			b.SetBytes(size)
			b.ResetTimer()
			cpu0 := cpuTime()
			for b.Loop() {
				runs := b.TempDir()
				if _, err := Import(context.Background(), Options{Format: ClaudeCode, Paths: []string{path}, RunsDir: runs}); err != nil {
					b.Fatal(err)
				}
			}
			// MB/s (from SetBytes) is wall time, fsync and other
			// processes' load included; cpu_MB/s divides by the CPU time
			// the process used (all its goroutines, the GC included), the
			// issue's "on one core" measure.
			if cpu := cpuTime() - cpu0; cpu > 0 {
				b.ReportMetric(float64(size)*float64(b.N)/1e6/cpu.Seconds(), "cpu_MB/s")
			}
			b.ReportMetric(float64(size)/1e6, "transcript_MB")
		})
	}
}
