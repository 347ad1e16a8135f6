package scenarios

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// wireSession writes what mock serve --record writes for a session of two
// calls, a read that succeeded and a command whose result the client
// gave as plain text, and returns its file.
func wireSession(t *testing.T, dir string) string {
	t.Helper()
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	rec, err := recorder.Create(dir, recorder.Options{Clock: func() time.Time { at = at.Add(time.Millisecond); return at }})
	if err != nil {
		t.Fatal(err)
	}
	wire := func(id, tool string) trajectory.ToolRef {
		return trajectory.ToolRef{ToolUseID: id, Tool: tool, Observed: trajectory.ObservedWire}
	}
	in := json.RawMessage(`{"cmd":"x"}`)
	rec.Emit(0, &trajectory.SessionStart{HarnessVersion: "retrace mock serve", Provider: "mock", Model: "m", Mode: trajectory.ModeHeadless,
		PermissionMode: trajectory.PermDefault, ConfigHash: trajectory.Hash(nil), SystemPromptHash: trajectory.Hash(nil),
		Tools: []trajectory.ToolInfo{}, Defenses: []trajectory.DefenseName{}, Tags: map[string]string{"source": "mock_serve"}})
	rec.Emit(1, &trajectory.ModelRequest{SystemHash: trajectory.Hash(nil), ToolsHash: trajectory.Hash(nil), ToolNames: []string{}, MessageHashes: []string{}, PrefixHash: trajectory.EmptyPrefixHash, NewMessages: []trajectory.Message{}})
	rec.Emit(1, &trajectory.ModelResponse{Content: []trajectory.ContentBlock{
		{Type: trajectory.BlockToolUse, ID: "c1", Name: "exec_command", Input: in},
		{Type: trajectory.BlockToolUse, ID: "c2", Name: "exec_command", Input: in}},
		StopReason: trajectory.StopToolUse, StopReasonRaw: "tool_use"})
	for _, id := range []string{"c1", "c2"} {
		ref := wire(id, "exec_command")
		rec.Emit(1, &trajectory.ToolCall{ToolRef: ref, Input: in})
		rec.Emit(1, &trajectory.ToolSuccess{ToolRef: ref})
		rec.Emit(1, &trajectory.ToolEnd{ToolRef: ref, DurationUnknown: true, OutputBytes: 3})
		rec.Emit(1, &trajectory.ToolResult{ToolRef: ref, Text: "out", Display: trajectory.DisplayFull})
	}
	rec.Emit(2, &trajectory.ModelRequest{SystemHash: trajectory.Hash(nil), ToolsHash: trajectory.Hash(nil), ToolNames: []string{}, MessageHashes: []string{}, PrefixHash: trajectory.EmptyPrefixHash, NewMessages: []trajectory.Message{}})
	rec.Emit(2, &trajectory.ModelResponse{Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "Done."}}, StopReason: trajectory.StopEndTurn, StopReasonRaw: "end_turn"})
	rec.Emit(2, &trajectory.SessionEnd{Reason: trajectory.EndTurn, Turns: 2, ToolCalls: 2})
	if _, err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return rec.Path()
}

// TestMergeAddsWhatOnlyTheTranscriptKnowsAndKeepsTheWiresCalls checks the
// merge of a wire session with the client's transcript: the transcript's
// permission decision, measured run time and the failure the wire took
// for a success (a command the client refused) join the wire's events
// with their own origins, the session_end's totals follow, the call the
// wire never saw is not added, and the result validates.
func TestMergeAddsWhatOnlyTheTranscriptKnowsAndKeepsTheWiresCalls(t *testing.T) {
	dir := t.TempDir()
	file := wireSession(t, filepath.Join(dir, "wire"))
	tr := func(id string) trajectory.ToolRef {
		return trajectory.ToolRef{ToolUseID: id, Tool: "exec_command", Observed: trajectory.ObservedTranscript}
	}
	inferred := trajectory.ToolRef{ToolUseID: "c2", Tool: "exec_command", Observed: trajectory.ObservedInferred}
	transcript := []trajectory.Event{
		{Payload: &trajectory.SessionStart{HarnessVersion: "codex 0.171.0", Mode: trajectory.ModeHeadless, PermissionMode: trajectory.PermDefault,
			Workspace: "/ws", Tags: map[string]string{"source_session": "rollout-1", "client_version": "0.171.0"}}},
		{Payload: &trajectory.PermissionAllow{PermissionDecision: trajectory.PermissionDecision{ToolRef: tr("c1"), Source: trajectory.SourceRule, Step: trajectory.StepAllowRule}}},
		{Payload: &trajectory.ToolEnd{ToolRef: tr("c1"), DurationMs: 92.5}},
		{Payload: &trajectory.ToolFailure{ToolRef: inferred, FailureKind: trajectory.FailureToolError, ErrorCode: "not_run"}},
		{Payload: &trajectory.ToolFailure{ToolRef: tr("ghost"), FailureKind: trajectory.FailureToolError}},
	}
	m, err := mergeOne(file, map[string][]trajectory.Event{"": transcript}, filepath.Join(dir, "runs"), nil)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := trajectory.ReadFile(m.path)
	if err != nil {
		t.Fatal(err)
	}
	c := trajectory.NewChecker(m.path)
	var types []string
	var allow *trajectory.PermissionAllow
	var end1 *trajectory.ToolEnd
	var fail2 *trajectory.ToolFailure
	var sessionEnd *trajectory.SessionEnd
	for i, ev := range evs {
		c.Add(i+1, ev)
		types = append(types, string(ev.Type()))
		switch p := ev.Payload.(type) {
		case *trajectory.PermissionAllow:
			allow = p
		case *trajectory.ToolEnd:
			if p.ToolUseID == "c1" {
				end1 = p
			}
		case *trajectory.ToolFailure:
			fail2 = p
		case *trajectory.SessionEnd:
			sessionEnd = p
		}
	}
	if v := c.Finish(); len(v) > 0 {
		t.Fatalf("the merged session breaks the invariants: %v\n%v", v, types)
	}
	if types[3] != "tool_call" || types[4] != "permission_allow" {
		t.Fatalf("the permission decision belongs right after its tool_call: %v", types)
	}
	if allow == nil || allow.Observed != trajectory.ObservedTranscript {
		t.Fatalf("permission_allow %+v: want the transcript's, marked observed transcript", allow)
	}
	if end1 == nil || end1.DurationMs != 92.5 || end1.DurationUnknown || end1.Observed != trajectory.ObservedTranscript || end1.OutputBytes != 3 {
		t.Fatalf("tool_end of c1 %+v: want the client's measured 92.5 ms (observed transcript) and the wire's output size", end1)
	}
	if fail2 == nil || fail2.ToolUseID != "c2" || fail2.ErrorCode != "not_run" || fail2.Observed != trajectory.ObservedInferred {
		t.Fatalf("the outcome of c2 is %+v: want the transcript's not_run failure, marked inferred", fail2)
	}
	if sessionEnd.ToolCalls != 2 || sessionEnd.ToolFailures != 1 {
		t.Fatalf("session_end counts %d calls and %d failures, want 2 and 1", sessionEnd.ToolCalls, sessionEnd.ToolFailures)
	}
	start := evs[0].Payload.(*trajectory.SessionStart)
	if start.HarnessVersion != "codex 0.171.0" || start.Tags["transcript_session"] != "rollout-1" || start.Tags["source"] != "mock_serve" || start.Workspace != "/ws" {
		t.Fatalf("session_start %+v: want the client's version and workspace, and both sources named in the tags", start)
	}
	if m.session != evs[0].Session {
		t.Fatalf("merged session id %s, file's %s", m.session, evs[0].Session)
	}
}

// TestMergeWithoutATranscriptKeepsTheWireSession checks that a run whose
// client wrote no transcript still gets its wire session, unchanged but
// for its file, and a note saying so.
func TestMergeWithoutATranscriptKeepsTheWireSession(t *testing.T) {
	dir := t.TempDir()
	file := wireSession(t, filepath.Join(dir, "wire"))
	m, notes, err := mergeAgentSessions(t.Context(), mergeInput{wire: file, format: "codex", transcript: filepath.Join(dir, "no-such-dir"),
		stage: filepath.Join(dir, "stage"), runs: filepath.Join(dir, "runs")})
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 {
		t.Fatalf("notes %q: want one saying there is no transcript", notes)
	}
	a, _ := trajectory.ReadFile(file)
	b, err := trajectory.ReadFile(m.path)
	if err != nil || len(a) != len(b) {
		t.Fatalf("merged %d events (%v), want the wire's %d", len(b), err, len(a))
	}
	for i := range a {
		if a[i].Type() != b[i].Type() || !a[i].TS.Equal(b[i].TS) {
			t.Fatalf("event %d: %s at %s, want the wire's %s at %s", i, b[i].Type(), b[i].TS, a[i].Type(), a[i].TS)
		}
	}
}

// subagentWire writes the wire recording of a conversation whose first
// user message is first, without a link to any parent.
func subagentWire(t *testing.T, dir, first string, at time.Time) string {
	t.Helper()
	rec, err := recorder.Create(dir, recorder.Options{Clock: func() time.Time { at = at.Add(time.Millisecond); return at }})
	if err != nil {
		t.Fatal(err)
	}
	rec.Emit(0, &trajectory.SessionStart{HarnessVersion: "retrace mock serve", Provider: "mock", Model: "m", Mode: trajectory.ModeHeadless,
		PermissionMode: trajectory.PermDefault, ConfigHash: trajectory.Hash(nil), SystemPromptHash: trajectory.Hash(nil),
		Tools: []trajectory.ToolInfo{}, Defenses: []trajectory.DefenseName{}})
	rec.Emit(1, &trajectory.ModelRequest{SystemHash: trajectory.Hash(nil), ToolsHash: trajectory.Hash(nil), ToolNames: []string{}, MessageHashes: []string{trajectory.Hash([]byte(first))},
		PrefixHash:  trajectory.PrefixHashOf([]string{trajectory.Hash([]byte(first))}),
		NewMessages: []trajectory.Message{{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: first}}}}})
	if _, err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return rec.Path()
}

// TestRelinkTiesABackgroundSubagentToTheCallThatGaveItsPrompt checks the
// link of a subagent whose start the wire could not tie to a waiting
// call: the main session's call whose input text (16 bytes at least) the
// subagent's first message holds is its parent; a short input or a call
// after the subagent started is not.
func TestRelinkTiesABackgroundSubagentToTheCallThatGaveItsPrompt(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	call := func(id, input string, at time.Time) trajectory.Event {
		return trajectory.Event{Session: "main", TS: at, Payload: &trajectory.ToolCall{
			ToolRef: trajectory.ToolRef{ToolUseID: id, Tool: "Agent"}, Input: json.RawMessage(input)}}
	}
	main := []trajectory.Event{
		call("toolu_short", `{"prompt":"Read it"}`, start),
		call("toolu_agent", `{"prompt":"Read README.md and say what it holds","run_in_background":true}`, start),
		call("toolu_later", `{"prompt":"Read README.md and say what it holds"}`, start.Add(time.Hour)),
	}
	sub := subagentWire(t, filepath.Join(dir, "sub"), "<system-reminder>x</system-reminder>\nRead README.md and say what it holds", start.Add(time.Second))
	link, err := relink(main, sub)
	if err != nil {
		t.Fatal(err)
	}
	if link == nil || *link != (parentLink{session: "main", toolUseID: "toolu_agent"}) {
		t.Fatalf("link %+v, want the Agent call before the subagent started", link)
	}
	other := subagentWire(t, filepath.Join(dir, "other"), "Read it", start.Add(time.Second))
	if link, err := relink(main, other); err != nil || link != nil {
		t.Fatalf("a conversation holding only a short input is linked: %+v, %v", link, err)
	}
	m, err := mergeOne(sub, nil, filepath.Join(dir, "runs"), link)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := trajectory.ReadFile(m.path)
	if err != nil {
		t.Fatal(err)
	}
	st := evs[0].Payload.(*trajectory.SessionStart)
	if st.ParentSession != "main" || st.ParentToolUseID != "toolu_agent" || st.Tags["parent_link"] != "prompt" {
		t.Fatalf("session_start %+v: want the link, tagged parent_link=prompt", st)
	}
}
