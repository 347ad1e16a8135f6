package scenarios_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/importer"
	"github.com/retrace-dev/retrace/scenarios"
	"github.com/retrace-dev/retrace/trajectory"
)

// importTestdata imports one of the importer's transcript directories
// and returns its main session's trajectory (the one no subagent's).
func importTestdata(t *testing.T, format importer.Format, dir string) string {
	t.Helper()
	runs := filepath.Join(t.TempDir(), "runs")
	rep, err := importer.Import(context.Background(), importer.Options{Format: format, Paths: []string{filepath.Join("..", "importer", "testdata", dir)}, RunsDir: runs})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Sessions {
		evs, err := trajectory.ReadFile(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		if evs[0].Payload.(*trajectory.SessionStart).ParentSession == "" {
			return s.Path
		}
	}
	t.Fatalf("no main session imported from %s", dir)
	return ""
}

// TestFromImportedClaudeCode makes the scenario of an imported Claude
// Code session with a subagent: the same client with the allow rule its
// calls needed, the subagent's conversation matched by its task, paths
// relative to the workspace, the file the session read with the content
// it saw, and comments with the transcript's own lines.
func TestFromImportedClaudeCode(t *testing.T) {
	rec := importTestdata(t, importer.ClaudeCode, "claudecode")
	res, err := scenarios.From(context.Background(), scenarios.FromOptions{Recording: rec})
	if err != nil {
		t.Fatal(err)
	}
	got := string(res.Archive)
	for _, want := range []string{
		"It is a session of claude-code 2.1.328, imported (retrace import) from\n",
		`agent: {profile: claude-code, args: ["--allowedTools", "Read"]}`,
		"    - name: sub1\n      match: {first_user_contains: \"Count the lines of notes.txt\"}\n      turns:\n",
		"    - name: main\n      match: {first_user_contains: \"check the notes\"}\n",
		`tool_use: {id: "toolu_read_2", name: "Read", input: {"file_path":"missing.txt"}}`,
		"# line 3 (2ab44da7-bb3e-4176-915d-2d1b02fa1102.jsonl:21): turn 1's model_response",
		"# line 3 (agent-a51b4d4ea4bad4457.jsonl:13): turn 1's model_response",
		"- workspace/notes.txt: as the Read call toolu_read_1 saw it, line 8 (2ab44da7-bb3e-4176-915d-2d1b02fa1102.jsonl:23)\n",
		"-- workspace/notes.txt --\nhello from notes\nline two\n",
		"{permission: \"deny\", source: non_interactive, tool: \"Bash\", count: 1}",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the scenario lacks %q:\n%s", want, got)
		}
	}
	if res.Turns != 8 || res.Calls != 6 || res.Files != 1 {
		t.Errorf("turns %d, calls %d, files %d; want 8, 6, 1 (the subagent's counted)", res.Turns, res.Calls, res.Files)
	}
	s, err := scenarios.Parse(res.Archive, "claudecode.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if s.Agent == nil || s.Agent.Profile != scenarios.ProfileClaudeCode {
		t.Fatalf("agent %+v, want the claude-code profile", s.Agent)
	}
}

// TestFromImportedBuiltin plays an imported Codex session through
// retrace's runtime: exec_command becomes bash, the calls that ran get
// allow rules, and the client's permission decisions are not expected.
func TestFromImportedBuiltin(t *testing.T) {
	rec := importTestdata(t, importer.Codex, "codex")
	res, err := scenarios.From(context.Background(), scenarios.FromOptions{Recording: rec, Runtime: scenarios.RuntimeBuiltin})
	if err != nil {
		t.Fatal(err)
	}
	got := string(res.Archive)
	for _, want := range []string{
		`tool_use: {id: "call_read_1", name: "bash", input: {"command":"cat notes.txt"}}`,
		"# not recorded: allow rules for the calls the client ran",
		"      - Bash(cat notes.txt)\n",
		"{tool_called: \"bash\", count: 4}",
		// Codex's wire flags no error; the failed calls' results are.
		`{tool_use_id: "call_cat_2", is_error: true}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the scenario lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"agent:", "exec_command\", count", "permission:"} {
		if strings.Contains(got, not) {
			t.Errorf("the scenario has %q:\n%s", not, got)
		}
	}
	if s, err := scenarios.Parse(res.Archive, "builtin.txtar"); err != nil || s.Agent != nil {
		t.Fatalf("parse: %v, agent %+v; want a scenario of retrace's runtime", err, s)
	}
}

// TestFromClientRefuses checks the client sessions that cannot become a
// scenario: each error wraps ErrFrom and says what is missing.
func TestFromClientRefuses(t *testing.T) {
	rec := importTestdata(t, importer.Codex, "codex")
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lines := strings.SplitAfter(string(data), "\n")
	// Without the cat of notes.txt's result the session read nothing.
	var noRead strings.Builder
	for _, l := range lines {
		if !strings.Contains(l, `"type":"tool_result","tool_use_id":"call_read_1"`) {
			noRead.WriteString(l)
		}
	}
	cases := []struct {
		name, path, runtime, want string
	}{
		{"torn", write("torn.jsonl", strings.Join(lines[:6], "")), "", "it is torn: no session_end"},
		{"unknown client", write("aider.jsonl", strings.Replace(string(data), `"client":"codex"`, `"client":"aider"`, 1)), "", "a session of aider, a client retrace has no agent profile for"},
		{"nameless client", write("nameless.jsonl", strings.Replace(string(data), `"client":"codex",`, ``, 1)), "", "it is from an unknown client"},
		{"no file read", write("noread.jsonl", noRead.String()), "", "no workspace snapshot and read no file"},
		{"no file read, builtin", write("noread2.jsonl", noRead.String()), scenarios.RuntimeBuiltin, "no workspace snapshot and read no file"},
		{"subagent", write("sub.jsonl", strings.Replace(string(data), `"type":"session_start",`, `"type":"session_start","parent_session":"20260101-000000.000-00000000",`, 1)), "", "a subagent's session"},
		{"bad runtime", rec, "elsewhere", `--runtime "elsewhere"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scenarios.From(context.Background(), scenarios.FromOptions{Recording: tc.path, Runtime: tc.runtime})
			if !errors.Is(err, scenarios.ErrFrom) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrFrom saying %q", err, tc.want)
			}
		})
	}
}

// TestFromClientKeepsSecretsRedacted: a key the session read is redacted
// in the recording (the importer writes through the recorder), and the
// workspace file made of that read keeps it redacted.
func TestFromClientKeepsSecretsRedacted(t *testing.T) {
	const secret = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345"
	src := filepath.Join("..", "importer", "testdata", "codex", "2026", "12", "01", "rollout-2026-12-01T23-38-03-01a233f8-f69d-7ce1-a6f9-54e8733429d1.jsonl")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "line two") {
		t.Fatal("the fixture no longer reads notes.txt's second line; pick another line to plant the key in")
	}
	dir := t.TempDir()
	transcript := filepath.Join(dir, "rollout-secret.jsonl")
	if err := os.WriteFile(transcript, []byte(strings.ReplaceAll(string(data), "line two", "key "+secret)), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := importer.Import(context.Background(), importer.Options{Format: importer.Codex, Paths: []string{transcript}, RunsDir: filepath.Join(dir, "runs")})
	if err != nil || len(rep.Sessions) != 1 {
		t.Fatalf("import: %v, %+v", err, rep)
	}
	res, err := scenarios.From(context.Background(), scenarios.FromOptions{Recording: rep.Sessions[0].Path})
	if err != nil {
		t.Fatal(err)
	}
	got := string(res.Archive)
	if strings.Contains(got, secret) || strings.Contains(got, "AbCdEfGhIjKl") {
		t.Fatalf("the scenario holds the key:\n%s", got)
	}
	if !strings.Contains(got, "-- workspace/notes.txt --\nhello from notes\nkey [REDACTED:anthropic]\n") {
		t.Fatalf("the workspace file does not hold the read content, redacted:\n%s", got)
	}
}

// TestFromImportedKeep keeps one property of a client session: the
// expectations are that property alone, the turns do not check the
// requests, and a property the session does not show is refused.
func TestFromImportedKeep(t *testing.T) {
	rec := importTestdata(t, importer.ClaudeCode, "claudecode")
	p, err := scenarios.ParseProperty("failure:permission_denied,tool=Bash")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scenarios.From(context.Background(), scenarios.FromOptions{Recording: rec, Keep: &p})
	if err != nil {
		t.Fatal(err)
	}
	got := string(res.Archive)
	if !strings.Contains(got, "  events:\n    - {failure: permission_denied, tool: \"Bash\", min: 1}\n") || strings.Contains(got, "tool_results") || strings.Contains(got, "outcome:") {
		t.Fatalf("want the kept failure alone, and no request checks:\n%s", got)
	}
	q, _ := scenarios.ParseProperty("defense:denial_fuse")
	if _, err := scenarios.From(context.Background(), scenarios.FromOptions{Recording: rec, Keep: &q}); !errors.Is(err, scenarios.ErrFrom) || !strings.Contains(err.Error(), "does not show it") {
		t.Fatalf("a property the session does not show: got %v", err)
	}
}
