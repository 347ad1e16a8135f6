package mockllm_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// BenchmarkTranscriptRecord measures what `mock serve --record` spends on
// recording one model call of an agent that answers a tool call each
// turn: Accept, Answer and Done into a recorder writing a file, without
// the HTTP around them (BenchmarkServerStreamedResponses measures that).
func BenchmarkTranscriptRecord(b *testing.B) {
	rec, err := recorder.Create(b.TempDir(), recorder.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tr := mockllm.NewTranscriptSessions(func(string) trajectory.Sink { return rec })
	prompt := trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "Fix the failing test in parse_test.go"}}}
	tools := []llm.ToolDef{{Name: "bash", Description: "Run a command.", Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}}
	now := time.Now()
	b.ReportAllocs()
	cpu0, measured := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id, prevID := fmt.Sprintf("toolu_%d", i), fmt.Sprintf("toolu_%d", i-1)
		msgs := []trajectory.Message{prompt}
		if i > 0 {
			msgs = append(msgs,
				trajectory.Message{Role: trajectory.RoleAssistant, Content: []trajectory.ContentBlock{{Type: trajectory.BlockToolUse, ID: prevID, Name: "bash", Input: json.RawMessage(`{"command":"go test ./..."}`)}}},
				trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockToolResult, ToolUseID: prevID, Content: "ok  \texample.com/parse\t0.412s"}}})
		}
		resp := &llm.Response{Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "Running the tests."},
			{Type: trajectory.BlockToolUse, ID: id, Name: "bash", Input: json.RawMessage(`{"command":"go test ./..."}`)}},
			StopReason: trajectory.StopToolUse, StopReasonRaw: "tool_use", Usage: trajectory.Usage{InputTokens: 1200, OutputTokens: 40}}
		l := mockllm.Logged{ID: uint64(i + 1), Time: now, End: now, Endpoint: mockllm.EndpointMessages, Method: http.MethodPost, Status: http.StatusOK,
			Request: &llm.Request{Model: "m", System: "You are a coding agent.", Tools: tools, Messages: msgs}, BodyBytes: 2000, Response: resp, Accepted: true}
		tr.Accept(l)
		l.Complete = true
		tr.Answer(l)
		tr.Done(l)
	}
	b.StopTimer()
	cpu1, _ := cpuTime()
	st, err := rec.Close()
	if err != nil || st.Problems() != 0 {
		b.Fatalf("stats %v, err %v", st, err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	if measured && cpu1 > cpu0 {
		// What one core sustains, whatever else shares the machine.
		b.ReportMetric(float64(b.N)/(cpu1-cpu0).Seconds(), "calls/cpu-s")
	}
}
