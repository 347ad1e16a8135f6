package mockllm_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// recordedSession builds the calls of a session of turns model calls as
// the wire recorder is fed them: each reply asks for one tool call, and
// the next request answers it with a result in the client's own wording
// (Claude Code's on the Messages API, Codex's exec output on Responses).
func recordedSession(turns int, codex bool) []mockllm.Logged {
	endpoint, ua := mockllm.EndpointMessages, "claude-cli/2.1.328 (external, sdk-cli)"
	if codex {
		endpoint, ua = mockllm.EndpointResponses, "codex_exec/0.171.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.171.0)"
	}
	out := make([]mockllm.Logged, 0, turns)
	msgs := []trajectory.Message{{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "check the notes"}}}}
	t0 := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	output := string(make([]byte, 0, 1024))
	for i := 0; i < 1024; i++ {
		output += "x"
	}
	for i := 1; i <= turns; i++ {
		use := trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: fmt.Sprintf("call_%d", i), Name: "Bash", Input: json.RawMessage(`{"command":"cat notes.txt"}`)}
		req := &llm.Request{Model: "m", System: "You are a coding agent.", MaxTokens: 32000, Messages: msgs}
		resp := &llm.Response{Content: []trajectory.ContentBlock{use}, StopReason: trajectory.StopToolUse, Usage: trajectory.Usage{InputTokens: 2000, OutputTokens: 20}}
		at := t0.Add(time.Duration(i) * time.Second)
		out = append(out, mockllm.Logged{Time: at, End: at.Add(100 * time.Millisecond), Endpoint: endpoint, Method: http.MethodPost,
			Header: http.Header{"User-Agent": {ua}}, Request: req, Status: http.StatusOK, Response: resp, Accepted: true, Complete: true, BodyBytes: 4096})
		text, isErr := output, i%5 == 0
		switch {
		case codex && isErr:
			text, isErr = "Chunk ID: e55de1\nWall time: 0.0100 seconds\nProcess exited with code 1\nOriginal token count: 11\nOutput:\ncat: missing.txt: No such file or directory\n", false
		case codex:
			text = "Chunk ID: e55de1\nWall time: 0.0100 seconds\nProcess exited with code 0\nOriginal token count: 256\nOutput:\n" + output
		case isErr:
			text = "Exit code 1\ncat: missing.txt: No such file or directory"
		}
		msgs = append(msgs[:len(msgs):len(msgs)],
			trajectory.Message{Role: trajectory.RoleAssistant, Content: []trajectory.ContentBlock{use}},
			trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockToolResult, ToolUseID: use.ID, Content: text, IsError: isErr}}})
	}
	return out
}

// BenchmarkRecord measures the wire recorder (mock serve --record) in
// model calls per second and per CPU second: a session of 200 tool-calling turns fed
// through a Transcript into a recorder writing to io.Discard, so the
// number is the recording's own cost, not the disk's. Compare it with
// the same benchmark on an earlier build in the same run.
func BenchmarkRecord(b *testing.B) {
	for _, client := range []string{"claude-code", "codex"} {
		b.Run(client, func(b *testing.B) {
			calls := recordedSession(200, client == "codex")
			b.ResetTimer()
			cpu0 := processCPU()
			for b.Loop() {
				rec := recorder.New(io.Discard, recorder.Options{})
				tr := mockllm.NewTranscript(rec)
				for _, l := range calls {
					tr.Accept(l)
					tr.Answer(l)
				}
				tr.Close()
				if _, err := rec.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(calls))*float64(b.N)/b.Elapsed().Seconds(), "calls/s")
			// On a shared machine compare calls per CPU second, which
			// other processes' load does not change.
			if cpu := processCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(len(calls))*float64(b.N)/cpu.Seconds(), "calls/cpu-s")
			}
		})
	}
}
