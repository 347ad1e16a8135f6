package executor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/trajectory"
)

// onDisk decodes the whole lines the writer holds.
func onDisk(t *testing.T, h *harness) []trajectory.Event {
	t.Helper()
	var evs []trajectory.Event
	dec := trajectory.NewDecoder(bytes.NewReader(h.buf.Bytes()), "session.jsonl")
	for {
		ev, err := dec.Next()
		if err != nil {
			return evs
		}
		evs = append(evs, ev)
	}
}

// TestNoToolRunsOnceTheRecorderCannotWrite fills the disk at one event of
// the second of three bash calls, and checks that the tools that ran had
// their tool_call and permission decision on disk, that none started
// after the failure, and that each call still got its result.
func TestNoToolRunsOnceTheRecorderCannotWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fullAt is the event whose write finds the disk full.
		fullAt string
		ran    []string
	}{
		{"the tool_calls of the turn", `"type":"tool_call","tool_use_id":"toolu_2"`, nil},
		{"the permission decision of the second call", `"type":"permission_allow","tool_use_id":"toolu_2"`, []string{"m1"}},
		{"the end of the first call", `"type":"tool_end","tool_use_id":"toolu_1"`, []string{"m1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermBypass},
				failWrite: func(p []byte) bool { return bytes.Contains(p, []byte(tc.fullAt)) }})
			results := h.turnWith(context.Background(),
				use("toolu_1", "bash", `{"command":"touch m1"}`),
				use("toolu_2", "bash", `{"command":"touch m2"}`),
				use("toolu_3", "bash", `{"command":"touch m3"}`))
			var ran []string
			for _, m := range []string{"m1", "m2", "m3"} {
				if _, err := os.Stat(filepath.Join(h.ws, m)); err == nil {
					ran = append(ran, m)
				}
			}
			if strings.Join(ran, ",") != strings.Join(tc.ran, ",") {
				t.Fatalf("ran %q, want %q", ran, tc.ran)
			}
			for i, r := range results {
				if (i == 0 && len(tc.ran) > 0) != !r.IsError {
					t.Errorf("result %d: is_error %v: %s", i, r.IsError, r.Content)
				}
				if r.IsError && !strings.Contains(r.Content, "could not be written") {
					t.Errorf("result %d says %q, want why it did not run", i, r.Content)
				}
			}
			evs := onDisk(t, h)
			calls := map[string]bool{}
			allows := map[string]bool{}
			for _, c := range payloads[*trajectory.ToolCall](evs) {
				calls[c.ToolUseID] = true
			}
			for _, a := range payloads[*trajectory.PermissionAllow](evs) {
				allows[a.ToolUseID] = true
			}
			for _, m := range ran {
				id := "toolu_" + strings.TrimPrefix(m, "m")
				if !calls[id] || !allows[id] {
					t.Errorf("%s ran without its tool_call (%v) and permission decision (%v) on disk", id, calls[id], allows[id])
				}
			}
			if err := h.rec.Err(); err == nil {
				t.Error("the recorder reports no error")
			}
		})
	}
}
