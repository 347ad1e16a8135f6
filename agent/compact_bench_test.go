package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// benchHistory is a 200-turn history: each turn a read call and its
// 2 KB result.
func benchHistory(turns int) []trajectory.Message {
	out := []trajectory.Message{{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "Read every file."}}}}
	result := strings.Repeat("a line of a file that was read\n", 64)
	for i := range turns {
		id := fmt.Sprintf("toolu_%d", i)
		out = append(out,
			trajectory.Message{Role: trajectory.RoleAssistant, Content: []trajectory.ContentBlock{{Type: trajectory.BlockToolUse, ID: id, Name: "read", Input: []byte(`{"file_path":"f.txt"}`)}}},
			trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockToolResult, ToolUseID: id, Content: result}}})
	}
	return out
}

// BenchmarkContextSize measures what the loop pays before every request
// to decide whether to compact, at turn 200: with reported usage only the
// messages after the last reply are estimated; without it, the whole
// history is marshalled. Compare the two sub-benchmarks' ns/op.
func BenchmarkContextSize(b *testing.B) {
	history := benchHistory(200)
	b.Run("usage", func(b *testing.B) {
		s := &session{history: history, lastUsage: &trajectory.Usage{InputTokens: 120_000, OutputTokens: 40}, usageMark: len(history) - 2}
		for b.Loop() {
			if _, m := s.contextSize(); m != trajectory.MeasuredUsage {
				b.Fatal(m)
			}
		}
	})
	b.Run("estimate", func(b *testing.B) {
		s := &session{history: history}
		for b.Loop() {
			if _, m := s.contextSize(); m != trajectory.MeasuredEstimate {
				b.Fatal(m)
			}
		}
	})
}
