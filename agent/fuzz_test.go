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
