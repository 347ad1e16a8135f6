package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/trajectory"
)

const (
	ccFixture = "testdata/claudecode/-home-user-project/2ab44da7-bb3e-4176-915d-2d1b02fa1102.jsonl"
	cxFixture = "testdata/codex/2026/12/01/rollout-2026-12-01T23-38-03-01a233f8-f69d-7ce1-a6f9-54e8733429d1.jsonl"
)

func importAll(t *testing.T, format Format, runs string, paths ...string) Report {
	t.Helper()
	rep, err := Import(context.Background(), Options{Format: format, Paths: paths, RunsDir: runs})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	return rep
}

// readEvents decodes a trajectory file with the contract's own reader.
func readEvents(t *testing.T, path string) []trajectory.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []trajectory.Event
	dec := trajectory.NewDecoder(f, path)
	for {
		ev, err := dec.Next()
		if err != nil {
			break
		}
		out = append(out, ev)
	}
	return out
}

// transcriptToolUses counts the distinct tool_use ids of a transcript's
// assistant content the way a reader of the raw file would, independent
// of the importer: every "type":"tool_use" block with an id in a
// non-sidechain assistant record (Claude Code) or every function_call
// response_item (Codex).
func transcriptToolUses(t *testing.T, format Format, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		switch format {
		case ClaudeCode:
			msg, _ := rec["message"].(map[string]any)
			if rec["type"] != "assistant" || msg == nil {
				continue
			}
			blocks, _ := msg["content"].([]any)
			for _, bl := range blocks {
				m, _ := bl.(map[string]any)
				if m["type"] == "tool_use" {
					ids[m["id"].(string)] = true
				}
			}
		case Codex:
			p, _ := rec["payload"].(map[string]any)
			if rec["type"] == "response_item" && p["type"] == "function_call" {
				ids[p["call_id"].(string)] = true
			}
		}
	}
	return len(ids)
}

func TestImportedFixturesValidateAndTheirFunnelCountsTheTranscriptsToolCalls(t *testing.T) {
	cases := []struct {
		name     string
		format   Format
		path     string
		sessions int
		// files are the transcripts whose tool_use blocks the sessions hold.
		files []string
	}{
		{"a Claude Code session with a read, bash, parallel calls, a denied call and a subagent", ClaudeCode, ccFixture, 2,
			[]string{ccFixture, "testdata/claudecode/-home-user-project/2ab44da7-bb3e-4176-915d-2d1b02fa1102/subagents/agent-a51b4d4ea4bad4457.jsonl"}},
		{"a Codex exec session with a read, parallel commands, a failing one and a sandbox-refused rm", Codex, cxFixture, 1, []string{cxFixture}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runs := t.TempDir()
			rep := importAll(t, tc.format, runs, tc.path)
			if len(rep.Problems) > 0 {
				t.Fatalf("problems: %v", rep.Problems)
			}
			if len(rep.Sessions) != tc.sessions {
				t.Fatalf("got %d sessions, want %d: %+v", len(rep.Sessions), tc.sessions, rep.Sessions)
			}
			want := 0
			for _, f := range tc.files {
				want += transcriptToolUses(t, tc.format, f)
			}
			if want == 0 {
				t.Fatal("the fixture holds no tool calls; the test would prove nothing")
			}
			got := 0
			for _, s := range rep.Sessions {
				fr, err := trajectory.ValidateFile(s.Path)
				if err != nil {
					t.Fatal(err)
				}
				if len(fr.Problems) > 0 {
					t.Errorf("%s does not validate: %v", s.Path, fr.Problems)
				}
				got += s.ToolCalls
			}
			if got != want {
				t.Errorf("imported %d tool calls, the transcripts hold %d", got, want)
			}
			ctx := context.Background()
			db, err := metrics.Open(ctx, metrics.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Load(ctx, runs); err != nil {
				t.Fatal(err)
			}
			funnel, err := db.Metric(ctx, "funnel")
			if err != nil {
				t.Fatal(err)
			}
			row := funnel.Rows[0]
			if row[0] != "(all)" {
				t.Fatalf("first funnel row is %v, want (all)", row)
			}
			lostAt := slices.Index(funnel.Columns, "lost")
			if lostAt < 0 {
				t.Fatalf("funnel columns %v have no lost", funnel.Columns)
			}
			if calls, lost := toInt(row[1]), toInt(row[lostAt]); calls != want || lost != 0 {
				t.Errorf("funnel (all) = %v: %d calls and %d lost, want %d calls and none lost", row, calls, lost, want)
			}
		})
	}
}

func toInt(v any) int {
	switch n := v.(type) {
	case int64:
		return int(n)
	case int32:
		return int(n)
	case int:
		return n
	}
	return -1
}

// eventsOf returns the events of type typ about call id.
func eventsOf(evs []trajectory.Event, typ trajectory.EventType, id string) []trajectory.Event {
	var out []trajectory.Event
	for _, ev := range evs {
		if ev.Type() == typ && (id == "" || trajectory.ToolUseIDOf(ev.Payload) == id) {
			out = append(out, ev)
		}
	}
	return out
}

func TestClaudeCodeImportMapsPermissionsFailuresSubagentsAndTheSession(t *testing.T) {
	runs := t.TempDir()
	rep := importAll(t, ClaudeCode, runs, ccFixture)
	main, sub := rep.Sessions[0], rep.Sessions[1]
	evs := readEvents(t, main.Path)
	start := evs[0].Payload.(*trajectory.SessionStart)
	if start.HarnessVersion != "claude-code 2.1.328" || start.Model != "claude-sonnet-4-5" || start.Workspace != "/home/user/project" {
		t.Errorf("session_start = %q %q %q, want the client version, model and cwd of the transcript", start.HarnessVersion, start.Model, start.Workspace)
	}
	if start.Mode != trajectory.ModeHeadless || len(start.Tools) == 0 {
		t.Errorf("session_start mode %s with %d tools, want headless (claude -p) with the catalog of api-request-shape", start.Mode, len(start.Tools))
	}
	deny := eventsOf(evs, trajectory.TypePermissionDeny, "toolu_bash_2")
	if len(deny) != 1 || deny[0].Payload.(*trajectory.PermissionDeny).Observed != trajectory.ObservedTranscript {
		t.Fatalf("the refused rm has %d permission_deny events, want 1 observed in the transcript", len(deny))
	}
	fail := eventsOf(evs, trajectory.TypeToolFailure, "toolu_bash_2")
	if len(fail) != 1 || fail[0].Payload.(*trajectory.ToolFailure).FailureKind != trajectory.FailurePermissionDenied {
		t.Errorf("the refused rm: %v, want one tool_failure permission_denied", fail)
	}
	if f := eventsOf(evs, trajectory.TypeToolFailure, "toolu_read_2"); len(f) != 1 || f[0].Payload.(*trajectory.ToolFailure).FailureKind != trajectory.FailureToolError {
		t.Errorf("the read of a missing file: %v, want one tool_failure tool_error", f)
	}
	if a := eventsOf(evs, trajectory.TypePermissionAllow, "toolu_read_1"); len(a) != 1 || a[0].Payload.(*trajectory.PermissionAllow).Step != trajectory.StepAllowRule {
		t.Errorf("the allowed read: %v, want one permission_allow at allow_rule", a)
	}
	for _, ev := range eventsOf(evs, trajectory.TypeToolEnd, "") {
		end := ev.Payload.(*trajectory.ToolEnd)
		if end.DurationMs != 0 || end.DurationUnknown == end.NotRun {
			t.Errorf("tool_end %s has duration %v (unknown %v, not_run %v); Claude Code records no per-call duration, so none may be made up, and a call it refused did not run", end.ToolUseID, end.DurationMs, end.DurationUnknown, end.NotRun)
		}
		if end.NotRun != (end.ToolUseID == "toolu_bash_2") {
			t.Errorf("tool_end %s: not_run %v; only the refused rm did not run", end.ToolUseID, end.NotRun)
		}
	}
	resp := eventsOf(evs, trajectory.TypeModelResponse, "")
	if len(resp) != 6 {
		t.Fatalf("got %d model responses, want the 6 of the transcript", len(resp))
	}
	if calls := resp[1].Payload.(*trajectory.ModelResponse).ToolUses(); len(calls) != 2 {
		t.Errorf("the parallel response has %d tool_uses, want 2", len(calls))
	}
	if u := resp[0].Payload.(*trajectory.ModelResponse).Usage; u.InputTokens != 21297 || u.OutputTokens != 17 {
		t.Errorf("first response usage %+v, want the transcript's 21297 in / 17 out", u)
	}
	subStart := readEvents(t, sub.Path)[0].Payload.(*trajectory.SessionStart)
	if len(subStart.Tools) == 0 {
		t.Error("the subagent's session_start has no tools; its api-request-shape names them")
	}
	if subStart.ParentSession != main.ID || subStart.ParentToolUseID != "toolu_agent_1" || sub.Parent != main.ID {
		t.Errorf("subagent linked to %q, call %q; want parent_session %s and parent_tool_use_id toolu_agent_1", subStart.ParentSession, subStart.ParentToolUseID, main.ID)
	}
}

func TestCodexImportTakesExitCodesAndDurationsFromCodexsOwnEvents(t *testing.T) {
	runs := t.TempDir()
	rep := importAll(t, Codex, runs, cxFixture)
	evs := readEvents(t, rep.Sessions[0].Path)
	start := evs[0].Payload.(*trajectory.SessionStart)
	if start.HarnessVersion != "codex 0.171.0" || start.Model != "gpt-5-codex" || start.Mode != trajectory.ModeHeadless {
		t.Errorf("session_start %q %q %s, want codex 0.171.0, gpt-5-codex, headless", start.HarnessVersion, start.Model, start.Mode)
	}
	req := eventsOf(evs, trajectory.TypeModelRequest, "")[0].Payload.(*trajectory.ModelRequest)
	if len(req.ToolNames) != 0 || len(start.Tools) != 0 || !start.ToolsUnknown {
		t.Errorf("tool_names %v, tools %v, tools_unknown %v: a rollout does not log the catalog, so none may be made up from the calls", req.ToolNames, start.Tools, start.ToolsUnknown)
	}
	cases := []struct {
		id        string
		code      string
		knownTime bool
	}{
		{"call_read_1", "", true},
		{"call_wc_1", "", true},
		{"call_cat_2", "exit:1", true},
		{"call_rm_1", "exit:1", true},
	}
	for _, c := range cases {
		fail := eventsOf(evs, trajectory.TypeToolFailure, c.id)
		switch {
		case c.code == "" && len(fail) != 0:
			t.Errorf("%s failed: %v", c.id, fail)
		case c.code != "" && (len(fail) != 1 || fail[0].Payload.(*trajectory.ToolFailure).ErrorCode != c.code):
			t.Errorf("%s: %v, want one tool_failure with %s", c.id, fail, c.code)
		}
		end := eventsOf(evs, trajectory.TypeToolEnd, c.id)[0].Payload.(*trajectory.ToolEnd)
		if end.DurationUnknown == c.knownTime {
			t.Errorf("%s: duration unknown %v, want %v", c.id, end.DurationUnknown, !c.knownTime)
		}
		// The header's wall time (0.0000 seconds in this rollout) is
		// the call's time, not the exec event's microseconds.
		if c.knownTime && (end.DurationMs != 0 || end.Observed != trajectory.ObservedTranscript) {
			t.Errorf("%s: duration %v observed %q, want the header's wall time, 0 ms", c.id, end.DurationMs, end.Observed)
		}
		res := eventsOf(evs, trajectory.TypeToolResult, c.id)[0].Payload.(*trajectory.ToolResult)
		if strings.Contains(res.Text, "Chunk ID") || strings.Contains(res.Text, "Wall time") {
			t.Errorf("%s: tool_result %q keeps Codex's header; only the text after Output: is the result", c.id, res.Text)
		}
	}
}

func TestImportingTheSameTranscriptTwiceGivesTheSameSessionAndNoDuplicate(t *testing.T) {
	for _, tc := range []struct {
		format Format
		path   string
	}{{ClaudeCode, ccFixture}, {Codex, cxFixture}} {
		t.Run(string(tc.format), func(t *testing.T) {
			runs := t.TempDir()
			first := importAll(t, tc.format, runs, tc.path)
			second := importAll(t, tc.format, runs, tc.path)
			for i := range first.Sessions {
				if first.Sessions[i].ID != second.Sessions[i].ID {
					t.Errorf("session %d: ids %s and %s", i, first.Sessions[i].ID, second.Sessions[i].ID)
				}
				if first.Sessions[i].Outcome != Imported || second.Sessions[i].Outcome != Unchanged {
					t.Errorf("session %d: outcomes %s then %s, want imported then unchanged", i, first.Sessions[i].Outcome, second.Sessions[i].Outcome)
				}
			}
			files, _ := filepath.Glob(filepath.Join(runs, "*.jsonl"))
			if len(files) != len(first.Sessions) {
				t.Errorf("the runs directory holds %d files for %d sessions", len(files), len(first.Sessions))
			}
			left, _ := filepath.Glob(filepath.Join(filepath.Dir(runs), ".retrace-import-*"))
			if len(left) != 0 {
				t.Errorf("staging directories left behind: %v", left)
			}
		})
	}
}

// withLines returns a copy of the fixture at src, in a temporary directory
// under the same relative name, with extra lines inserted after line n.
func withLines(t *testing.T, src string, n int, extra ...string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	out := append([]string{}, lines[:n]...)
	for _, e := range extra {
		out = append(out, e+"\n")
	}
	out = append(out, lines[n:]...)
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(dst, []byte(strings.Join(out, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestBadLinesAreReportedWithFileAndLineAndTheRestIsImported(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format Format
		src    string
	}{
		{"Claude Code", ClaudeCode, ccFixture},
		{"Codex", Codex, cxFixture},
	} {
		t.Run(tc.name+" with a torn line and an unknown record type", func(t *testing.T) {
			path := withLines(t, tc.src, 2, `{"type":"user","message":{"role":"us`, `{"type":"from-the-future","payload":{}}`)
			clean := importAll(t, tc.format, t.TempDir(), tc.src)
			rep := importAll(t, tc.format, t.TempDir(), path)
			if len(rep.Problems) != 1 {
				t.Fatalf("problems %v, want exactly the torn line", rep.Problems)
			}
			var le *LineError
			if !errors.As(rep.Problems[0], &le) || !errors.Is(le, ErrMalformedLine) || le.Line != 3 || le.File != path {
				t.Errorf("problem %v, want a LineError for %s:3", rep.Problems[0], path)
			}
			if rep.Unknown["from-the-future"] != 1 {
				t.Errorf("unknown types %v, want from-the-future counted once", rep.Unknown)
			}
			if rep.Sessions[0].ToolCalls != clean.Sessions[0].ToolCalls || rep.Sessions[0].ToolCalls == 0 {
				t.Errorf("imported %d tool calls beside the bad lines, want all %d", rep.Sessions[0].ToolCalls, clean.Sessions[0].ToolCalls)
			}
			strict, err := Import(context.Background(), Options{Format: tc.format, Paths: []string{path}, RunsDir: t.TempDir(), Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(strict.Sessions) != 0 || len(strict.Problems) < 2 || !strings.Contains(strict.Problems[len(strict.Problems)-1].Error(), "--strict") {
				t.Errorf("--strict imported %d sessions with problems %v, want the file refused", len(strict.Sessions), strict.Problems)
			}
		})
	}
}

func TestAFileThatIsNoTranscriptOfTheFormatIsAClearErrorAndTheOthersStillImport(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.jsonl")
	if err := os.WriteFile(notes, []byte("{\"hello\": 1}\nplain text\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := importAll(t, ClaudeCode, t.TempDir(), cxFixture, notes, ccFixture)
	var notTranscript int
	for _, p := range rep.Problems {
		if errors.Is(p, ErrNotTranscript) {
			notTranscript++
		}
	}
	if notTranscript != 2 {
		t.Errorf("problems %v, want the Codex rollout and notes.jsonl each refused as not a Claude Code transcript", rep.Problems)
	}
	if len(rep.Sessions) != 2 {
		t.Errorf("got %d sessions, want the Claude Code session and its subagent", len(rep.Sessions))
	}
}

func TestADirectoryIsWalkedForTranscriptsAndAskingForASubagentImportsItsParent(t *testing.T) {
	rep := importAll(t, ClaudeCode, t.TempDir(), "testdata/claudecode")
	if rep.Files != 1 || len(rep.Sessions) != 2 {
		t.Errorf("the directory gave %d files and %d sessions, want 1 file with its subagent", rep.Files, len(rep.Sessions))
	}
	sub := "testdata/claudecode/-home-user-project/2ab44da7-bb3e-4176-915d-2d1b02fa1102/subagents/agent-a51b4d4ea4bad4457.jsonl"
	rep = importAll(t, ClaudeCode, t.TempDir(), sub)
	if len(rep.Sessions) != 2 || rep.Sessions[1].Parent != rep.Sessions[0].ID {
		t.Errorf("importing the subagent file gave %+v, want the parent and the linked subagent", rep.Sessions)
	}
	rep = importAll(t, Codex, t.TempDir(), "testdata/codex")
	if rep.Files != 1 || len(rep.Sessions) != 1 {
		t.Errorf("the Codex directory gave %d files and %d sessions, want 1", rep.Files, len(rep.Sessions))
	}
}

func TestATranscriptThatGrewIsUpdatedUnderTheSameSessionID(t *testing.T) {
	full, err := os.ReadFile(cxFixture)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(full), "\n")
	path := filepath.Join(t.TempDir(), filepath.Base(cxFixture))
	if err := os.WriteFile(path, []byte(strings.Join(lines[:len(lines)/2], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	first := importAll(t, Codex, runs, path)
	if err := os.WriteFile(path, full, 0o600); err != nil {
		t.Fatal(err)
	}
	second := importAll(t, Codex, runs, path)
	if first.Sessions[0].ID != second.Sessions[0].ID || second.Sessions[0].Outcome != Updated {
		t.Errorf("the grown transcript: %s %s then %s %s, want the same id, updated", first.Sessions[0].ID, first.Sessions[0].Outcome, second.Sessions[0].ID, second.Sessions[0].Outcome)
	}
	if second.Sessions[0].ToolCalls <= first.Sessions[0].ToolCalls {
		t.Errorf("tool calls %d then %d, want more after the transcript grew", first.Sessions[0].ToolCalls, second.Sessions[0].ToolCalls)
	}
	if fr, err := trajectory.ValidateFile(second.Sessions[0].Path); err != nil || len(fr.Problems) > 0 {
		t.Errorf("the updated file does not validate: %v %v", err, fr.Problems)
	}
}

func TestADirectoryOfManyTranscriptsIsImportedOneFileAtATimeWithProgress(t *testing.T) {
	dir := t.TempDir()
	const n = 300
	for i := range n {
		day := filepath.Join(dir, "2026", "12", fmt.Sprintf("%02d", i%28+1))
		if err := os.MkdirAll(day, 0o700); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"timestamp":"2026-12-01T00:00:%02d.%03dZ","type":"session_meta","payload":{"id":"s-%d","cli_version":"0.171.0","cwd":"/w"}}
{"timestamp":"2026-12-01T00:01:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}
{"timestamp":"2026-12-01T00:01:01Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}}
{"timestamp":"2026-12-01T00:01:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Process exited with code 0\nOutput:\na\n"}}
{"timestamp":"2026-12-01T00:01:03Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}
`, i%60, i, i)
		if err := os.WriteFile(filepath.Join(day, fmt.Sprintf("rollout-%04d.jsonl", i)), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var calls, last int
	runs := t.TempDir()
	rep, err := Import(context.Background(), Options{Format: Codex, Paths: []string{dir}, RunsDir: runs,
		Progress: func(done, total int) { calls, last = calls+1, done }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != n || len(rep.Sessions) != n || len(rep.Problems) != 0 {
		t.Fatalf("%d files, %d sessions, problems %v; want %d and %d and none", rep.Files, len(rep.Sessions), rep.Problems, n, n)
	}
	if calls != n || last != n {
		t.Errorf("progress called %d times, last with %d, want %d", calls, last, n)
	}
	files, _ := filepath.Glob(filepath.Join(runs, "*.jsonl"))
	if len(files) != n {
		t.Errorf("%d trajectory files for %d sessions", len(files), n)
	}
}

func TestAToolResultBetweenTwoBlocksOfOneClaudeCodeMessageKeepsOneResponse(t *testing.T) {
	const transcript = `{"type":"user","sessionId":"s","timestamp":"2026-12-01T00:00:00Z","message":{"role":"user","content":"go"}}
{"type":"assistant","sessionId":"s","timestamp":"2026-12-01T00:00:01Z","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a"}}],"stop_reason":"tool_use"}}
{"type":"user","sessionId":"s","timestamp":"2026-12-01T00:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"}]}}
{"type":"assistant","sessionId":"s","timestamp":"2026-12-01T00:00:03Z","message":{"id":"m1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"b"}}],"stop_reason":"tool_use"}}
{"type":"user","sessionId":"s","timestamp":"2026-12-01T00:00:04Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"b"}]}}
{"type":"assistant","sessionId":"s","timestamp":"2026-12-01T00:00:05Z","message":{"id":"m2","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn"}}
`
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(transcript), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := importAll(t, ClaudeCode, t.TempDir(), path)
	evs := readEvents(t, rep.Sessions[0].Path)
	resp := eventsOf(evs, trajectory.TypeModelResponse, "")
	if len(resp) != 2 || len(resp[0].Payload.(*trajectory.ModelResponse).ToolUses()) != 2 {
		t.Fatalf("got %d responses, want 2, the first with both tool_uses", len(resp))
	}
	if fr, err := trajectory.ValidateFile(rep.Sessions[0].Path); err != nil || len(fr.Problems) > 0 {
		t.Errorf("does not validate: %v %v", err, fr.Problems)
	}
	if end := evs[len(evs)-1].Payload.(*trajectory.SessionEnd); end.Reason != trajectory.EndTurn || end.ToolCalls != 2 {
		t.Errorf("session_end %+v, want end_turn with 2 calls", end)
	}
}

func TestAClaudeCodeRetryAfterA529IsAModelErrorBeforeTheResponse(t *testing.T) {
	rep := importAll(t, ClaudeCode, t.TempDir(), "testdata/claudecode-retry")
	if len(rep.Sessions) != 1 {
		t.Fatalf("got %d sessions, want 1", len(rep.Sessions))
	}
	path := rep.Sessions[0].Path
	if fr, err := trajectory.ValidateFile(path); err != nil || len(fr.Problems) > 0 {
		t.Fatalf("does not validate: %v %v", err, fr.Problems)
	}
	evs := readEvents(t, path)
	var types []trajectory.EventType
	for _, ev := range evs {
		types = append(types, ev.Type())
	}
	want := []trajectory.EventType{trajectory.TypeSessionStart, trajectory.TypeModelRequest, trajectory.TypeModelError, trajectory.TypeModelResponse, trajectory.TypeSessionEnd}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	e := evs[2].Payload.(*trajectory.ModelError)
	if e.ErrorKind != trajectory.ModelOverloaded || e.StatusCode != 529 || e.Attempt != 1 || !e.WillRetry || e.RetryAfterMs <= 0 {
		t.Errorf("model_error %+v, want overloaded 529, attempt 1, will retry after the logged delay", e)
	}
}

func TestACommandCodexRefusedToRunIsAFailureNotASuccess(t *testing.T) {
	rep := importAll(t, Codex, t.TempDir(), "testdata/codex-refused")
	if len(rep.Sessions) != 1 || rep.Sessions[0].ToolCalls != 1 {
		t.Fatalf("sessions %+v, want one with the refused call", rep.Sessions)
	}
	evs := readEvents(t, rep.Sessions[0].Path)
	fail := eventsOf(evs, trajectory.TypeToolFailure, "call_rm_1")
	if len(fail) != 1 || fail[0].Payload.(*trajectory.ToolFailure).FailureKind != trajectory.FailurePermissionDenied {
		t.Errorf("the escalation Codex refused: %v, want one tool_failure permission_denied", fail)
	}
	if s := eventsOf(evs, trajectory.TypeToolSuccess, "call_rm_1"); len(s) != 0 {
		t.Errorf("the refused command is recorded as a success: %v", s)
	}
	if fr, err := trajectory.ValidateFile(rep.Sessions[0].Path); err != nil || len(fr.Problems) > 0 {
		t.Errorf("does not validate: %v %v", err, fr.Problems)
	}
}

// TestImportedSessionsAreLinearV2 checks that every imported request keeps
// the whole request before it and records only the new messages, with a
// prefix hash that chains over the full list (trajectory v 2).
func TestImportedSessionsAreLinearV2(t *testing.T) {
	for _, tc := range []struct {
		format Format
		path   string
	}{{ClaudeCode, ccFixture}, {Codex, cxFixture}} {
		rep := importAll(t, tc.format, t.TempDir(), tc.path)
		evs := readEvents(t, rep.Sessions[0].Path)
		var conv trajectory.Conversation
		prev, n := 0, 0
		for _, ev := range evs {
			r, ok := ev.Payload.(*trajectory.ModelRequest)
			if !ok {
				continue
			}
			n++
			full, err := conv.Next(r)
			if err != nil || ev.V != trajectory.Version || r.MessagesKept != prev || len(r.MessageHashes) != len(full)-prev ||
				r.PrefixHash != trajectory.PrefixHashOf(full) {
				t.Fatalf("%s request %d: v %d, kept %d of %d, %d hashes, %v", tc.format, n, ev.V, r.MessagesKept, prev, len(r.MessageHashes), err)
			}
			prev = len(full)
		}
		if n < 2 {
			t.Fatalf("%s: %d requests; the fixture should have several", tc.format, n)
		}
	}
}

// A shorter copy of a transcript already imported (a backup taken
// earlier, a copy that lost its end) maps to the same session id: it
// must not replace the longer import, in a later import or in the same
// one, whatever the order, and it says so (Kept).
func TestAShorterCopyOfATranscriptNeverReplacesTheLongerImport(t *testing.T) {
	full, err := os.ReadFile(cxFixture)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(full), "\n")
	dir := t.TempDir()
	fullPath, half := filepath.Join(dir, "full", filepath.Base(cxFixture)), filepath.Join(dir, "half", filepath.Base(cxFixture))
	for p, content := range map[string]string{fullPath: string(full), half: strings.Join(lines[:len(lines)/2], "")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	runs := t.TempDir()
	first := importAll(t, Codex, runs, fullPath)
	want, err := os.ReadFile(first.Sessions[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	second := importAll(t, Codex, runs, half)
	if got := second.Sessions[0]; got.ID != first.Sessions[0].ID || got.Outcome != Kept {
		t.Errorf("the shorter copy: %s %s, want %s kept", got.ID, got.Outcome, first.Sessions[0].ID)
	}
	if got, err := os.ReadFile(first.Sessions[0].Path); err != nil || string(got) != string(want) {
		t.Errorf("the shorter copy replaced the longer import (%v)", err)
	}
	for _, order := range [][]string{{fullPath, half}, {half, fullPath}} {
		runs := t.TempDir()
		rep := importAll(t, Codex, runs, order...)
		if got, err := os.ReadFile(rep.Sessions[0].Path); err != nil || string(got) != string(want) {
			t.Errorf("importing %v in one go left the shorter session (%v): %+v", order, err, rep.Sessions)
		}
	}
}
