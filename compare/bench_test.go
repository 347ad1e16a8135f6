package compare

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// longSession builds a session of turns turns, each a request, a reply
// with one call, the call's events and its result, with its conversation
// growing the way the agent loop grows it.
func longSession(turns int, root string) []trajectory.Event {
	var evs []trajectory.Event
	var hashes []string
	tools := []string{"read", "grep", "bash", "edit"}
	for turn := 1; turn <= turns; turn++ {
		id := fmt.Sprintf("toolu_%04d", turn)
		msg := textMsg(trajectory.RoleUser, fmt.Sprintf("result of turn %d in %s/pkg", turn-1, root))
		hashes = append(hashes, trajectory.Hash([]byte(fmt.Sprint(turn))))
		req := &trajectory.ModelRequest{SystemHash: trajectory.Hash([]byte("sys")), ToolsHash: trajectory.Hash([]byte("tools")),
			ToolNames: tools, MessageHashes: append([]string(nil), hashes...), NewMessages: []trajectory.Message{msg}}
		if turn == 1 {
			req.System = "You are a careful coding agent."
		}
		input := json.RawMessage(fmt.Sprintf(`{"command":"go test ./pkg%d","cwd":%q}`, turn, root))
		ref := trajectory.ToolRef{ToolUseID: id, Tool: "bash"}
		evs = append(evs,
			trajectory.Event{Turn: turn, Payload: req},
			trajectory.Event{Turn: turn, Payload: &trajectory.ModelResponse{StopReason: trajectory.StopReason("tool_use"),
				Content: []trajectory.ContentBlock{{Type: trajectory.BlockToolUse, ID: id, Name: "bash", Input: input}}}},
			trajectory.Event{Turn: turn, Payload: &trajectory.ToolCall{ToolRef: ref, Input: input}},
			trajectory.Event{Turn: turn, Payload: &trajectory.PermissionAllow{PermissionDecision: trajectory.PermissionDecision{ToolRef: ref, Source: trajectory.SourceRule, Step: trajectory.ChainStep("allow_rule"), Rule: "Bash(go test:*)"}}},
			trajectory.Event{Turn: turn, Payload: &trajectory.ToolSuccess{ToolRef: ref}},
			trajectory.Event{Turn: turn, Payload: &trajectory.ToolEnd{ToolRef: ref, DurationMs: 12}},
			trajectory.Event{Turn: turn, Payload: &trajectory.ToolResult{ToolRef: ref, Text: fmt.Sprintf("ok  %s/pkg%d  0.%03ds", root, turn, turn)}},
		)
	}
	return append(evs, trajectory.Event{Turn: turns, Payload: &trajectory.SessionEnd{Reason: trajectory.EndTurn, Turns: turns}})
}

func BenchmarkCompare200Turns(b *testing.B) {
	rec := longSession(200, "/tmp/retrace-ws-1")
	rep := longSession(200, "/tmp/replay-123")
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"no-default-normalize", Options{NoDefaults: true, PathRewrites: []PathRewrite{{Old: "/tmp/replay-123", New: "/tmp/retrace-ws-1"}},
			Rules: []Rule{{Name: "secs", Pattern: regexp.MustCompile(`\d+\.\d+s`), Replace: "<s>"}}}},
		{"default-normalize", Options{PathRewrites: []PathRewrite{{Old: "/tmp/replay-123", New: "/tmp/retrace-ws-1"}}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if r := Sessions(rec, rep, bc.opts); !r.Identical() {
				b.Fatalf("the benchmark sessions must compare identical: %+v", r.Divergences[:1])
			}
			b.ResetTimer()
			for b.Loop() {
				Sessions(rec, rep, bc.opts)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(rec)+len(rep)), "ns/event")
		})
	}
}

// BenchmarkNormalizeToolOutput measures the built-in rules over a typical
// 4 KiB tool output (ls -la, go test, a log), each text new so the cache
// never answers.
func BenchmarkNormalizeToolOutput(b *testing.B) {
	var sb strings.Builder
	for sb.Len() < 4096 {
		sb.WriteString("-rw-r--r-- 1 root root 1234 Dec  1 20:05 main.go\nok  \tgithub.com/x/y\t0.412s\n")
		sb.WriteString("2026-12-01T20:05:21Z INFO started pid 4242 in /tmp/go-build123/b001 id 9fceb02d0ae598e95dc970b74767f19372d61af8\n")
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		newNormalizer(Options{}).text(text, ScopeToolOutput, "bash")
	}
	b.ReportMetric(float64(len(text))*float64(b.N)/b.Elapsed().Seconds()/1e6, "MB/s-normalised")
}
