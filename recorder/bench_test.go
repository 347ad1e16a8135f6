package recorder

import (
	"encoding/json"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// benchMix is a realistic turn: a request, a response with two tool uses,
// then each call's events and results; one result carries a secret.
func benchMix() []emission {
	ids := []string{"toolu_01", "toolu_02"}
	refs := []trajectory.ToolRef{{ToolUseID: ids[0], Tool: "read"}, {ToolUseID: ids[1], Tool: "bash"}}
	mix := []emission{
		{1, modelRequest(3)},
		{1, &trajectory.ModelResponse{
			Content: []trajectory.ContentBlock{
				{Type: trajectory.BlockText, Text: "Reading the file, then running the tests."},
				{Type: trajectory.BlockToolUse, ID: ids[0], Name: "read", Input: json.RawMessage(`{"file_path":"internal/server/handler.go"}`)},
				{Type: trajectory.BlockToolUse, ID: ids[1], Name: "bash", Input: json.RawMessage(`{"command":"go test ./internal/server/..."}`)},
			},
			StopReason: trajectory.StopToolUse, StopReasonRaw: "tool_use",
			Usage: trajectory.Usage{InputTokens: 1200, OutputTokens: 90, CacheReadTokens: 800}, TTFTMs: 120.5, DurationMs: 900,
		}},
	}
	for i, ref := range refs {
		mix = append(mix,
			emission{1, &trajectory.ToolCall{ToolRef: ref, Input: json.RawMessage(`{"file_path":"internal/server/handler.go"}`), Index: i}},
			emission{1, &trajectory.PermissionAllow{PermissionDecision: trajectory.PermissionDecision{ToolRef: ref, Source: trajectory.SourceReadOnly, Step: trajectory.StepReadOnly}}},
			emission{1, &trajectory.ToolSuccess{ToolRef: ref}},
			emission{1, &trajectory.ToolEnd{ToolRef: ref, DurationMs: 12.5, OutputBytes: 1400}},
		)
	}
	mix = append(mix,
		emission{1, &trajectory.ToolResult{ToolRef: refs[0], Text: "1\tpackage server\n2\t\n3\t// Handler serves the API; see the Bearer auth middleware.\n4\tfunc Handler() {}\n", Display: trajectory.DisplayFull}},
		emission{1, &trajectory.ToolResult{ToolRef: refs[1], Text: "ok  \texample.com/internal/server\t0.412s\nAuthorization: Bearer " + fakeBearerToken + "\n", Display: trajectory.DisplayFull}},
	)
	return mix
}

func BenchmarkEmit(b *testing.B) {
	mix := benchMix()
	r, err := Create(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0, measured := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := mix[i%len(mix)]
		r.Emit(e.turn, e.p)
	}
	if err := r.Flush(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cpu1, _ := cpuTime()
	st, err := r.Close()
	if err != nil || st.Problems() != 0 {
		b.Fatalf("stats %v, err %v", st, err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	if measured && cpu1 > cpu0 {
		// The rate per CPU second is what one core sustains, whatever else
		// shares the machine; with -cpu 1 the process uses one core.
		b.ReportMetric(float64(b.N)/(cpu1-cpu0).Seconds(), "events/cpu-s")
	}
	b.SetBytes(st.Bytes / int64(b.N))
}

func BenchmarkRedact(b *testing.B) {
	var lines [][]byte
	for i, e := range benchMix() {
		line, err := trajectory.AppendEvent(nil, trajectory.NewEvent("20261130-090000.000-0000abcd", int64(i+1), t0, e.turn, e.p))
		if err != nil {
			b.Fatal(err)
		}
		lines = append(lines, line)
	}
	cases := []struct {
		name  string
		lines [][]byte
	}{
		{"clean", lines[:len(lines)-1]},
		{"secret", lines[len(lines)-1:]},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var total int64
			for _, l := range c.lines {
				total += int64(len(l))
			}
			b.SetBytes(total / int64(len(c.lines)))
			b.ReportAllocs()
			red := DefaultRedactor()
			for i := 0; i < b.N; i++ {
				red.Redact(c.lines[i%len(c.lines)])
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}
