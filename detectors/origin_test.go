package detectors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// In a session whose catalog was not logged (an imported Codex rollout),
// hallucinated_tool does not take every call for one to a tool never
// offered: it reports the calls the client answered not_found, and no
// other.
func TestHallucinatedToolInASessionWithoutACatalogUsesTheNotFoundCalls(t *testing.T) {
	st := start()
	st.ToolsUnknown = true
	ref := func(id, tool string) trajectory.ToolRef { return trajectory.ToolRef{ToolUseID: id, Tool: tool} }
	use := func(id, tool string) trajectory.ContentBlock {
		return trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: id, Name: tool, Input: json.RawMessage(`{}`)}
	}
	s := session("s", st,
		&trajectory.ModelRequest{ToolNames: []string{}},
		&trajectory.ModelResponse{Content: []trajectory.ContentBlock{use("c1", "exec_command"), use("c2", "frobnicate")}},
		&trajectory.ToolCall{ToolRef: ref("c1", "exec_command"), Input: json.RawMessage(`{}`)},
		&trajectory.ToolSuccess{ToolRef: ref("c1", "exec_command")},
		&trajectory.ToolCall{ToolRef: ref("c2", "frobnicate"), Input: json.RawMessage(`{}`), Index: 1},
		&trajectory.ToolFailure{ToolRef: ref("c2", "frobnicate"), FailureKind: trajectory.FailureNotFound},
	)
	fs := check(t, "hallucinated_tool", s, Settings{})
	if len(fs) != 1 || fs[0].ToolUseID != "c2" || fs[0].Severity != SeverityInfo || len(fs[0].Evidence) != 3 {
		t.Fatalf("findings %+v, want one info finding for c2 with the response, the call and its not_found", fs)
	}
	// The same session with a known, empty catalog: both calls were
	// never offered.
	st.ToolsUnknown = false
	if fs := check(t, "hallucinated_tool", s, Settings{}); len(fs) != 2 {
		t.Fatalf("with the catalog known and empty: %d findings, want 2", len(fs))
	}
}

// Evidence that points at an imported event names the client's own
// file:line; evidence of a session retrace recorded, or of a file that
// cannot be read again, names none.
func TestEvidenceNamesTheClientsOwnLine(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.jsonl")
	lines := `{"v":2,"session":"s","seq":1,"type":"session_start","origin_file":"/home/u/.claude/projects/p/x.jsonl"}
{"v":2,"session":"s","seq":2,"type":"model_request"}
{"v":2,"session":"s","seq":3,"type":"tool_call","origin_line":42}
{"v":2,"session":"s","seq":4,"type":"tool_failure","origin_line":43}
`
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := []Finding{{Evidence: []Evidence{{File: file, Line: 3}, {File: file, Line: 2}, {File: file, Line: 4}, {File: file, Line: 4}}},
		{Evidence: []Evidence{{File: "<stdin>", Line: 3}}}}
	if err := resolveOrigins(fs); err != nil {
		t.Fatal(err)
	}
	want := []string{"/home/u/.claude/projects/p/x.jsonl:42", "", "/home/u/.claude/projects/p/x.jsonl:43", "/home/u/.claude/projects/p/x.jsonl:43"}
	for i, e := range fs[0].Evidence {
		if e.Origin != want[i] {
			t.Errorf("evidence %d (line %d): origin %q, want %q", i, e.Line, e.Origin, want[i])
		}
	}
	if fs[1].Evidence[0].Origin != "" {
		t.Errorf("standard input's evidence got origin %q", fs[1].Evidence[0].Origin)
	}
}
