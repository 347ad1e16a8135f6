package importer

import (
	"fmt"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// A real opencode 1.18.33 session (testdata/gen/modes-opencode.yaml),
// imported from `opencode export` and from `opencode run --format json`:
// both give every call the same outcome, see through what opencode
// hides (a failed command is status "completed" with exit 1; a call to a
// tool it lacks is renamed to its invalid tool), and name their lines.
func TestOpenCodeExportAndRunGiveTheSameOutcomes(t *testing.T) {
	want := map[string]string{
		"toolu_read_1": "success", "toolu_read_5": "success", "toolu_wc_3": "success",
		"toolu_frob_1": "not_found", "toolu_empty_1": "invalid_input", "toolu_cat_1": "tool_error:exit:1",
		"toolu_big_1": "success", "toolu_write_1": "permission_denied",
	}
	var got []map[string]string
	for _, f := range []string{"testdata/opencode-modes/export.json", "testdata/opencode-modes/run.jsonl"} {
		rep := importAll(t, OpenCode, t.TempDir(), f)
		if len(rep.Sessions) != 1 || rep.Sessions[0].ToolCalls != 13 {
			t.Fatalf("%s: sessions %+v, want one with 13 calls", f, rep.Sessions)
		}
		path := rep.Sessions[0].Path
		if fr, err := trajectory.ValidateFile(path); err != nil || len(fr.Problems) > 0 {
			t.Fatalf("%s does not validate: %v %v", f, err, fr.Problems)
		}
		evs := readEvents(t, path)
		o := outcomes(evs)
		for id, w := range want {
			if o[id] != w {
				t.Errorf("%s: %s is %q, want %q", f, id, o[id], w)
			}
		}
		start := evs[0].Payload.(*trajectory.SessionStart)
		if !start.ToolsUnknown || start.OriginFile != f {
			t.Errorf("%s: session_start tools_unknown %v origin_file %q", f, start.ToolsUnknown, start.OriginFile)
		}
		if calls := eventsOf(evs, trajectory.TypeToolCall, "toolu_frob_1"); len(calls) != 1 || calls[0].Payload.(*trajectory.ToolCall).Tool != "frobnicate" {
			t.Errorf("%s: the call opencode renamed to invalid is %v, want the model's frobnicate", f, calls)
		}
		checkOrigins(t, evs, f, "toolu_")
		if len(eventsOf(evs, trajectory.TypePermissionDeny, "toolu_write_1")) != 1 {
			t.Errorf("%s: the rejected write has no permission_deny", f)
		}
		got = append(got, o)
	}
	if fmt.Sprint(got[0]) != fmt.Sprint(got[1]) {
		t.Errorf("the export and the run's events disagree:\n%v\n%v", got[0], got[1])
	}
}
