package scenarios

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// bigWireSession writes a wire session of n calls, one a turn, and the
// transcript facts of each (a permission decision and a measured run
// time), and returns the file, the transcript events and the number of
// events in the file.
func bigWireSession(b *testing.B, dir string, n int) (string, []trajectory.Event, int) {
	b.Helper()
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	rec, err := recorder.Create(dir, recorder.Options{Clock: func() time.Time { at = at.Add(time.Millisecond); return at }})
	if err != nil {
		b.Fatal(err)
	}
	req := func() *trajectory.ModelRequest {
		return &trajectory.ModelRequest{SystemHash: trajectory.Hash(nil), ToolsHash: trajectory.Hash(nil), ToolNames: []string{}, MessageHashes: []string{}, PrefixHash: trajectory.EmptyPrefixHash, NewMessages: []trajectory.Message{}}
	}
	in := json.RawMessage(`{"cmd":"cat README.md"}`)
	rec.Emit(0, &trajectory.SessionStart{HarnessVersion: "retrace mock serve", Provider: "mock", Model: "m", Mode: trajectory.ModeHeadless,
		PermissionMode: trajectory.PermDefault, ConfigHash: trajectory.Hash(nil), SystemPromptHash: trajectory.Hash(nil),
		Tools: []trajectory.ToolInfo{}, Defenses: []trajectory.DefenseName{}, Tags: map[string]string{}})
	transcript := []trajectory.Event{{Payload: &trajectory.SessionStart{HarnessVersion: "codex 0.171.0", Tags: map[string]string{}}}}
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		ref := trajectory.ToolRef{ToolUseID: id, Tool: "exec_command", Observed: trajectory.ObservedWire}
		tr := trajectory.ToolRef{ToolUseID: id, Tool: "exec_command", Observed: trajectory.ObservedTranscript}
		rec.Emit(i+1, req())
		rec.Emit(i+1, &trajectory.ModelResponse{Content: []trajectory.ContentBlock{{Type: trajectory.BlockToolUse, ID: id, Name: "exec_command", Input: in}},
			StopReason: trajectory.StopToolUse, StopReasonRaw: "tool_use"})
		rec.Emit(i+1, &trajectory.ToolCall{ToolRef: ref, Input: in})
		rec.Emit(i+1, &trajectory.ToolSuccess{ToolRef: ref})
		rec.Emit(i+1, &trajectory.ToolEnd{ToolRef: ref, DurationUnknown: true, OutputBytes: 6})
		rec.Emit(i+1, &trajectory.ToolResult{ToolRef: ref, Text: "hello\n", Display: trajectory.DisplayFull})
		transcript = append(transcript,
			trajectory.Event{Payload: &trajectory.PermissionAllow{PermissionDecision: trajectory.PermissionDecision{ToolRef: tr, Source: trajectory.SourceRule, Step: trajectory.StepAllowRule}}},
			trajectory.Event{Payload: &trajectory.ToolEnd{ToolRef: tr, DurationMs: 12.5}})
	}
	rec.Emit(n+1, req())
	rec.Emit(n+1, &trajectory.ModelResponse{Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "Done."}}, StopReason: trajectory.StopEndTurn, StopReasonRaw: "end_turn"})
	rec.Emit(n+1, &trajectory.SessionEnd{Reason: trajectory.EndTurn, Turns: n + 1, ToolCalls: n})
	if _, err := rec.Close(); err != nil {
		b.Fatal(err)
	}
	evs, err := trajectory.ReadFile(rec.Path())
	if err != nil {
		b.Fatal(err)
	}
	return rec.Path(), transcript, len(evs)
}

// BenchmarkMergeAgentSession measures the merge of an agent run's wire
// session (1000 calls) with its transcript: "copy" rewrites the wire
// session without a transcript (the baseline: read, re-record), "merge"
// adds a permission decision and a measured run time to every call.
// events/s counts the wire session's events.
func BenchmarkMergeAgentSession(b *testing.B) {
	file, transcript, events := bigWireSession(b, filepath.Join(b.TempDir(), "wire"), 1000)
	for _, c := range []struct {
		name     string
		imported map[string][]trajectory.Event
	}{{"copy", nil}, {"merge", map[string][]trajectory.Event{"": transcript}}} {
		b.Run(c.name, func(b *testing.B) {
			runs := b.TempDir()
			start := time.Now()
			for range b.N {
				m, err := mergeOne(file, c.imported, runs, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := os.Remove(m.path); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(events*b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}
