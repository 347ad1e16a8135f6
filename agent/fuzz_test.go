package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// FuzzAnyReplyLeavesAValidTrajectory feeds the loop a model reply built
// from fuzzed parts — text, tool name, tool input, stop reason and faults,
// the outside input the loop parses — and requires that the session ends
// and its trajectory validates, whatever the reply.
func FuzzAnyReplyLeavesAValidTrajectory(f *testing.F) {
	f.Add("Reading.", "read", `{"file_path":"README.md"}`, uint8(0), uint8(0))
	f.Add("", "read", `{}`, uint8(1), uint8(0))
	f.Add("done", "write", `{"file_path":"x.md","content":"hello"}`, uint8(2), uint8(1))
	f.Add("", "nope", `{"a":1}`, uint8(3), uint8(2))
	f.Add("hm", "bash", `{"command":"echo 1"}`, uint8(5), uint8(0))
	stops := []string{"tool_use", "end_turn", "max_tokens", "stop_sequence", "pause_turn", "refusal", "model_context_window_exceeded"}
	ws := f.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("retrace\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text, name, input string, stop, faults uint8) {
		if !json.Valid([]byte(input)) || len(input) == 0 || input[0] != '{' {
			input = "{}"
		}
		nameJSON, _ := json.Marshal(name)
		textJSON, _ := json.Marshal(text)
		fault := fmt.Sprintf("{max_tokens_in_tool_use: %v, missing_stop_reason: %v}", faults&1 != 0, faults&2 != 0)
		src := fmt.Sprintf("turns:\n  - stop_reason: %s\n    fault: %s\n    content:\n      - text: %s\n      - tool_use: {id: toolu_f, name: %s, input: %s}\n  - content: [{text: ok}]\n",
			stops[int(stop)%len(stops)], fault, textJSON, nameJSON, input)
		script, err := mockllm.ParseScript([]byte(src), "fuzz")
		if err != nil {
			return // not a reply the mock can send
		}
		var buf bytes.Buffer
		rec := recorder.New(&buf, recorder.Options{})
		cfg := baseConfig(t, ws, script, rec)
		cfg.Limits.MaxTurns = 4
		// Fuzzed input must never run a command or write a file: in the
		// default mode a headless session denies both.
		perm, err := permission.New(permission.Config{Home: t.TempDir()}, cfg.Executor.Env.Workspace())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Executor.Permission = perm
		cfg.PermissionMode = trajectory.PermDefault
		if _, err := Run(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
		if _, err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		validate(t, buf.Bytes())
	})
}

// FuzzConversationOfNeverPanics rebuilds the conversation of any
// trajectory the decoder accepts: a recording given to --continue is
// outside input, and a broken one must be an error, never a panic or a
// history with a call and no answer.
func FuzzConversationOfNeverPanics(f *testing.F) {
	f.Add([]byte(`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":1,"type":"model_request","request_bytes":1,"system_hash":"0000000000000000","tools_hash":"0000000000000000","tool_names":[],"message_hashes":["0000000000000000"],"new_messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}
{"v":1,"session":"s","seq":2,"ts":"2026-01-01T00:00:00Z","turn":1,"type":"model_response","content":[{"type":"tool_use","id":"t1","name":"read","input":{}}],"stop_reason":"tool_use","stop_reason_raw":"tool_use","usage":{"input_tokens":1,"output_tokens":1,"cache_read_tokens":0,"cache_creation_tokens":0},"duration_ms":0}
`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := trajectory.NewDecoder(bytes.NewReader(data), "fuzz")
		var events []trajectory.Event
		for {
			ev, err := dec.Next()
			if err != nil {
				break
			}
			events = append(events, ev)
		}
		history, err := ConversationOf(events)
		if err != nil {
			return
		}
		answered := map[string]bool{}
		for _, m := range history {
			for _, b := range m.Content {
				if b.Type == trajectory.BlockToolResult {
					answered[b.ToolUseID] = true
				}
			}
		}
		last := len(history) - 1
		if last >= 0 && history[last].Role == trajectory.RoleAssistant {
			for _, b := range history[last].Content {
				if b.Type == trajectory.BlockToolUse && !answered[b.ID] {
					t.Fatalf("the rebuilt reply keeps tool_use %s without its result", b.ID)
				}
			}
		}
	})
}
