package agent

import (
	"encoding/json"
	"testing"

	"github.com/retrace-dev/retrace/agent/tools"
)

func TestClassifyJudgesWritesFromTheCommandNotItsName(t *testing.T) {
	cases := []struct {
		name             string
		tool             tools.Tool
		input            string
		readOnly, writes bool
	}{
		{"The seed's spinning type check counts errors without writing a file.", tools.BashTool{},
			`{"command":"bunx tsc --noEmit 2>&1 | grep -c \"error TS\""}`, false, false},
		{"A redirection into a file writes.", tools.BashTool{}, `{"command":"go vet ./... > /tmp/e.txt 2>&1"}`, false, true},
		{"Removing a file writes.", tools.BashTool{}, `{"command":"rm -f out.txt"}`, false, true},
		{"An in-place sed writes.", tools.BashTool{}, `{"command":"sed -i s/a/b/ f.txt"}`, false, true},
		{"A plain listing is read-only.", tools.BashTool{}, `{"command":"ls -la"}`, true, false},
		{"The read tool is read-only.", tools.ReadTool{}, `{"file_path":"a"}`, true, false},
		{"The write tool writes.", tools.WriteTool{}, `{"file_path":"a","content":""}`, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ro, wr := classify(tc.tool, json.RawMessage(tc.input))
			if ro != tc.readOnly || wr != tc.writes {
				t.Errorf("read-only %v writes %v, want %v %v", ro, wr, tc.readOnly, tc.writes)
			}
		})
	}
}

func TestScalarOutputsAreJudgedByShape(t *testing.T) {
	for out, want := range map[string]bool{"139": true, "-3": true, "2.5": true, "87%": true,
		"139 errors": false, "src/a.ts:1: error": false, "": false, "1\n2": false} {
		if got := scalar.MatchString(out); got != want {
			t.Errorf("%q: scalar %v, want %v", out, got, want)
		}
	}
}
