package recorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// Fake secrets in the shapes the built-in patterns know. None is real.
const (
	fakeAnthropicKey = "sk-ant-api03-Xq7vLm2Np9Rt4Kw8Zs1Bc6Df3Gh5Jy0Ua-Ei_OoPx"
	fakeBearerToken  = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLWZha2U"
	fakeAWSKeyID     = "AKIAIOSFODNN7EXAMPLE"
	fakeAWSSecret    = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	fakeKeyLine1     = "MIIEowIBAAKCAQEAq7vLm2Np9Rt4Kw8Zs1Bc6Df3Gh5Jy0UaEiOoPxFAKE"
	fakeKeyLine2     = "Zs1Bc6Df3Gh5Jy0UaEiOoPxq7vLm2Np9Rt4Kw8FAKEFAKEFAKEFAKEFAKE"
	fakePrivateKey   = "-----BEGIN RSA PRIVATE KEY-----\n" + fakeKeyLine1 + "\n" + fakeKeyLine2 + "\n-----END RSA PRIVATE KEY-----\n"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// stepClock returns a clock that advances a millisecond per call, in a
// zone other than UTC so tests see that events are written in UTC.
func stepClock() func() time.Time {
	var mu sync.Mutex
	now := t0.In(time.FixedZone("CET", 3600))
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Millisecond)
		return now
	}
}

func h(s string) string { return trajectory.Hash([]byte(s)) }

type emission struct {
	turn int
	p    trajectory.Payload
}

func sessionStart() *trajectory.SessionStart {
	return &trajectory.SessionStart{
		HarnessVersion: "retrace/test", Provider: "mock", Model: "scripted",
		Mode: trajectory.ModeHeadless, PermissionMode: trajectory.PermDefault,
		ConfigHash: h("cfg"), SystemPromptHash: h("sys"),
		Tools:    []trajectory.ToolInfo{{Name: "bash", DefinitionHash: h("bash"), Source: trajectory.ToolBuiltin, Display: trajectory.DisplayFull}},
		Defenses: []trajectory.DefenseName{},
	}
}

func modelRequest(n int) *trajectory.ModelRequest {
	hashes := make([]string, n)
	for i := range hashes {
		hashes[i] = h(fmt.Sprint("message ", i))
	}
	return &trajectory.ModelRequest{RequestBytes: 2000, SystemHash: h("sys"), ToolsHash: h("tools"),
		ToolNames: []string{"bash"}, MessageHashes: hashes, PrefixHash: trajectory.PrefixHashOf(hashes), NewMessages: []trajectory.Message{}}
}

func reminder(text string) *trajectory.Reminder {
	return &trajectory.Reminder{Kind: "state_refresh", Role: trajectory.RoleUser, Text: text}
}

// secretSession is a small valid session whose tool input carries a bearer
// token and an Anthropic key, and whose tool output carries a private key
// block (with real newlines) and an AWS key pair.
func secretSession() []emission {
	input := json.RawMessage(`{"command":"curl -H 'Authorization: Bearer ` + fakeBearerToken + `' -H 'x-api-key: ` + fakeAnthropicKey + `' https://api.example.com/v1/models"}`)
	output := "$ cat ~/.ssh/id_rsa ~/.aws/credentials\n" + fakePrivateKey +
		"[default]\naws_access_key_id = " + fakeAWSKeyID + "\naws_secret_access_key = " + fakeAWSSecret + "\n"
	bash := trajectory.ToolRef{ToolUseID: "toolu_01", Tool: "bash"}
	return []emission{
		{0, sessionStart()},
		{1, modelRequest(1)},
		{1, &trajectory.ModelResponse{
			Content: []trajectory.ContentBlock{
				{Type: trajectory.BlockText, Text: "Checking the API with your credentials."},
				{Type: trajectory.BlockToolUse, ID: "toolu_01", Name: "bash", Input: input},
			},
			StopReason: trajectory.StopToolUse, StopReasonRaw: "tool_use",
			Usage: trajectory.Usage{InputTokens: 100, OutputTokens: 20}, DurationMs: 300,
		}},
		{1, &trajectory.ToolCall{ToolRef: bash, Input: input}},
		{1, &trajectory.PermissionAllow{PermissionDecision: trajectory.PermissionDecision{ToolRef: bash, Source: trajectory.SourceRule, Step: trajectory.StepAllowRule, Rule: "Bash(curl:*)"}}},
		{1, &trajectory.ToolSuccess{ToolRef: bash}},
		{1, &trajectory.ToolEnd{ToolRef: bash, DurationMs: 40, OutputBytes: int64(len(output))}},
		{1, &trajectory.ToolResult{ToolRef: bash, Text: output, Display: trajectory.DisplayFull}},
		{1, &trajectory.SessionEnd{Reason: trajectory.EndTurn, Turns: 1, Usage: trajectory.Usage{InputTokens: 100, OutputTokens: 20}, ToolCalls: 1, DurationMs: 500}},
	}
}

func create(t *testing.T, opts Options) *Recorder {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = stepClock()
	}
	r, err := Create(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func closeOK(t *testing.T, r *Recorder) Stats {
	t.Helper()
	st, err := r.Close()
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	return st
}

// readEvents decodes every line of a trajectory file.
func readEvents(t *testing.T, path string) []trajectory.Event {
	t.Helper()
	evs, err := trajectory.ReadFile(path)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return evs
}

func assertValidFile(t *testing.T, path string) {
	t.Helper()
	rep, err := trajectory.ValidateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Errorf("validate: %v", p)
	}
	for _, w := range rep.Warnings {
		t.Errorf("validate: %v", w)
	}
}

func assertSeqs(t *testing.T, evs []trajectory.Event) {
	t.Helper()
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d, want %d", i, ev.Seq, i+1)
		}
	}
}

func TestPlantedSecretsNeverReachTheFileAndTheFileStaysValid(t *testing.T) {
	r := create(t, Options{})
	for _, e := range secretSession() {
		r.Emit(e.turn, e.p)
	}
	st := closeOK(t, r)

	raw, err := os.ReadFile(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{fakeBearerToken, fakeAnthropicKey, fakeAWSKeyID, fakeAWSSecret, fakeKeyLine1, fakeKeyLine2, "api03-Xq7v"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the file contains the secret %q", secret)
		}
	}
	for _, marker := range []string{"[REDACTED:bearer]", "[REDACTED:anthropic]", "[REDACTED:aws_access_key]", "[REDACTED:aws_secret]", "[REDACTED:private_key]"} {
		if !bytes.Contains(raw, []byte(marker)) {
			t.Errorf("the file lacks %s", marker)
		}
	}
	assertValidFile(t, r.Path())
	// The bearer token and the key appear in both the tool_use block and
	// the tool_call: 4 replacements; the tool output holds 3 more.
	if st.Redactions != 7 || st.Events != 9 || st.Problems() != 0 || st.Invalid != 0 {
		t.Errorf("stats = %+v, want 9 events, 7 redactions, no problems", st)
	}
}

func TestEmitFillsTheEnvelope(t *testing.T) {
	r := create(t, Options{SessionID: "20261130-090000.000-0000abcd"})
	r.Emit(0, sessionStart())
	r.Emit(1, modelRequest(1))
	closeOK(t, r)
	evs := readEvents(t, r.Path())
	if len(evs) != 2 {
		t.Fatalf("got %d events, want 2", len(evs))
	}
	for i, ev := range evs {
		if ev.V != trajectory.Version || ev.Session != "20261130-090000.000-0000abcd" || ev.Seq != int64(i+1) || ev.Turn != i {
			t.Errorf("event %d envelope = v%d %q seq %d turn %d", i, ev.V, ev.Session, ev.Seq, ev.Turn)
		}
		if ev.TS.Location() != time.UTC || !ev.TS.Equal(t0.Add(time.Duration(i+1)*time.Millisecond)) {
			t.Errorf("event %d ts = %v, want the clock's time in UTC", i, ev.TS)
		}
	}
	if filepath.Base(r.Path()) != "20261130-090000.000-0000abcd.jsonl" {
		t.Errorf("path = %s", r.Path())
	}
}

func TestAnEventThatDoesNotEncodeSpendsNoSeq(t *testing.T) {
	r := create(t, Options{})
	r.Emit(0, sessionStart())
	r.Emit(1, &trajectory.ToolCall{ToolRef: trajectory.ToolRef{ToolUseID: "toolu_01", Tool: "bash"}, Input: json.RawMessage(`{"command": "ls"`)})
	r.Emit(1, reminder("after the bad one"))
	st := closeOK(t, r)

	evs := readEvents(t, r.Path())
	assertSeqs(t, evs)
	if len(evs) != 2 || evs[1].Type() != trajectory.TypeReminder {
		t.Fatalf("got %d events, want session_start and reminder", len(evs))
	}
	if st.EncodeErrors != 1 || st.Events != 2 || st.FirstError == nil {
		t.Errorf("stats = %+v, want 1 encode error, 2 events, FirstError set", st)
	}
}

func TestEmitNeverPanics(t *testing.T) {
	tests := []struct {
		name string
		p    trajectory.Payload
		opts Options
	}{
		{"a nil payload is counted as an encode error", nil, Options{}},
		{"a nil pointer payload is counted as an encode error", (*trajectory.ToolCall)(nil), Options{}},
		{"a clock that panics is recovered and counted", reminder("x"), Options{SessionID: "s1", Clock: func() time.Time { panic("clock broke") }}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			r := New(&buf, tt.opts)
			r.Emit(1, tt.p)
			st, err := r.Close()
			if err != nil {
				t.Fatal(err)
			}
			if st.EncodeErrors != 1 || st.FirstError == nil || buf.Len() != 0 {
				t.Errorf("stats = %+v, file = %q; want 1 encode error and nothing written", st, buf.String())
			}
		})
	}
}

func TestLabelFieldsThatAreNotLabelsAreReplaced(t *testing.T) {
	ref := trajectory.ToolRef{ToolUseID: "toolu_01", Tool: "bash"}
	tests := []struct {
		name  string
		p     trajectory.Payload
		fixes int64
		check func(t *testing.T, line map[string]any)
	}{
		{
			"a tool failure's error code holding a path becomes invalid_label",
			&trajectory.ToolFailure{ToolRef: ref, FailureKind: trajectory.FailureToolError, ErrorCode: "/home/alice/secret.txt"},
			1, wantField("error_code", "invalid_label"),
		},
		{
			"a tool failure's structured error code is kept",
			&trajectory.ToolFailure{ToolRef: ref, FailureKind: trajectory.FailureToolError, ErrorCode: "exit:2"},
			0, wantField("error_code", "exit:2"),
		},
		{
			"a session end's error code holding a message becomes invalid_label",
			&trajectory.SessionEnd{Reason: trajectory.EndError, ErrorCode: "Error: ENOENT: no such file"},
			1, wantField("error_code", "invalid_label"),
		},
		{
			"a reminder kind with spaces becomes invalid_label",
			&trajectory.Reminder{Kind: "you read the same file twice", Role: trajectory.RoleUser, Text: "x"},
			1, wantField("kind", "invalid_label"),
		},
		{
			"a hook name that is a command becomes invalid_label",
			&trajectory.HookRun{ToolRef: ref, Phase: trajectory.HookPre, Hook: "./audit.sh --strict", Outcome: trajectory.HookContinue},
			1, wantField("hook", "invalid_label"),
		},
		{
			"evidence keys that are not labels are renamed without losing values",
			&trajectory.DefenseTrigger{Defense: trajectory.DefenseRepeatedReadOnly, Action: trajectory.ActionRemind,
				Evidence: map[string]string{"repeats": "3", "/etc/passwd": "a", "b c": "b"}},
			2, wantField("evidence", map[string]any{"repeats": "3", "invalid_label": "a", "invalid_label:2": "b"}),
		},
		{
			"tag keys that are not labels are renamed",
			func() trajectory.Payload {
				s := sessionStart()
				s.Tags = map[string]string{"git rev": "abc"}
				return s
			}(),
			1, wantField("tags", map[string]any{"invalid_label": "abc"}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := json.Marshal(tt.p)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			r := New(&buf, Options{Clock: stepClock()})
			r.Emit(1, tt.p)
			st, err := r.Close()
			if err != nil {
				t.Fatal(err)
			}
			after, _ := json.Marshal(tt.p)
			if !bytes.Equal(before, after) {
				t.Errorf("the caller's payload changed:\n%s\n%s", before, after)
			}
			if st.LabelFixes != tt.fixes {
				t.Errorf("LabelFixes = %d, want %d", st.LabelFixes, tt.fixes)
			}
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatal(err)
			}
			tt.check(t, line)
		})
	}
}

func wantField(key string, want any) func(*testing.T, map[string]any) {
	return func(t *testing.T, line map[string]any) {
		t.Helper()
		if got := line[key]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
}

func TestSessionEndCarriesTheRecorderErrors(t *testing.T) {
	r := create(t, Options{})
	r.Emit(0, sessionStart())
	r.Emit(1, &trajectory.ToolCall{ToolRef: trajectory.ToolRef{ToolUseID: "toolu_01", Tool: "bash"}, Input: json.RawMessage(`not json`)})
	r.Emit(1, &trajectory.ToolCall{ToolRef: trajectory.ToolRef{ToolUseID: "toolu_02", Tool: "bash"}, Input: json.RawMessage(`{`)})
	end := &trajectory.SessionEnd{Reason: trajectory.EndTurn, Turns: 1}
	r.Emit(1, end)

	// session_end is flushed and fsynced at once, before Close.
	evs := readEvents(t, r.Path())
	if len(evs) != 2 {
		t.Fatalf("got %d events on disk before Close, want 2", len(evs))
	}
	got := evs[1].Payload.(*trajectory.SessionEnd).RecorderErrors
	if got != 2 {
		t.Errorf("recorder_errors = %d, want 2", got)
	}
	if end.RecorderErrors != 0 {
		t.Errorf("the caller's session_end was changed: recorder_errors = %d", end.RecorderErrors)
	}
}

func TestEventsThatAnnounceOrCompleteAnEffectAreInTheFileWhenEmitReturns(t *testing.T) {
	bash := trajectory.ToolRef{ToolUseID: "toolu_01", Tool: "bash"}
	decision := trajectory.PermissionDecision{ToolRef: bash, Source: trajectory.SourceRule, Step: trajectory.StepAllowRule}
	cases := []struct {
		name  string
		p     trajectory.Payload
		ahead bool
	}{
		{"session_start is written at once, so a crash during the workspace snapshot leaves a valid file", sessionStart(), true},
		{"model_request is written before the request is sent", modelRequest(1), true},
		{"model_response is written as soon as it is complete", &trajectory.ModelResponse{StopReason: trajectory.StopEndTurn}, true},
		{"model_error is written before the retry wait", &trajectory.ModelError{ErrorKind: trajectory.ModelOverloaded, Attempt: 1}, true},
		{"tool_call is written before any hook or the tool runs", &trajectory.ToolCall{ToolRef: bash, Input: json.RawMessage(`{}`)}, true},
		{"permission_allow is written before the tool runs", &trajectory.PermissionAllow{PermissionDecision: decision}, true},
		{"permission_prompt is written before a person is asked", &trajectory.PermissionPrompt{PermissionDecision: decision}, true},
		{"permission_deny is written at once", &trajectory.PermissionDeny{PermissionDecision: decision}, true},
		{"tool_end is written as soon as the tool ends, carrying its outcome along", &trajectory.ToolEnd{ToolRef: bash}, true},
		{"tool_success waits for its tool_end, which the same function emits next", &trajectory.ToolSuccess{ToolRef: bash}, false},
		{"tool_failure waits for its tool_end, which the same function emits next", &trajectory.ToolFailure{ToolRef: bash, FailureKind: trajectory.FailureToolError}, false},
		{"hook_run waits for the permission decision or tool_end that follows it", &trajectory.HookRun{ToolRef: bash, Phase: trajectory.HookPre, Hook: "lint", Outcome: trajectory.HookContinue}, false},
		{"tool_result waits for the next model_request", &trajectory.ToolResult{ToolRef: bash, Text: "ok", Display: trajectory.DisplayFull}, false},
		{"a reminder waits for the next model_request", reminder("later"), false},
		{"a defense_trigger is written at once, since the live transcript shows it", &trajectory.DefenseTrigger{Defense: trajectory.DefenseDenialFuse, Action: trajectory.ActionNeedsConfirmation}, true},
		{"a compaction is written at once, since the live transcript shows it", &trajectory.Compaction{Strategy: trajectory.CompactDrop}, true},
		{"session_end is written and fsynced at once", &trajectory.SessionEnd{Reason: trajectory.EndTurn}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := create(t, Options{})
			if c.p.EventType() != trajectory.TypeSessionStart {
				r.Emit(0, sessionStart())
			}
			before := fileSize(t, r.Path())
			r.Emit(1, c.p)
			after := fileSize(t, r.Path())
			if got := after > before; got != c.ahead {
				t.Fatalf("%s: in the file when Emit returned = %v (%d -> %d bytes), want %v", c.p.EventType(), got, before, after, c.ahead)
			}
			if c.ahead {
				return
			}
			// A batched event reaches the file with the next one written ahead.
			r.Emit(1, &trajectory.ToolEnd{ToolRef: bash})
			if evs := readEvents(t, r.Path()); len(evs) != 3 || evs[1].Type() != c.p.EventType() {
				t.Fatalf("after the next tool_end the file holds %d events, want session_start, %s and tool_end in that order", len(evs), c.p.EventType())
			}
		})
	}
}

// TestEveryEventTypeIsClassified keeps the table above complete: a new
// event type must decide whether it is written ahead.
func TestEveryEventTypeIsClassified(t *testing.T) {
	batched := 0
	for _, typ := range trajectory.EventTypes() {
		if !writesAhead(typ) {
			batched++
		}
	}
	if batched != 5 {
		t.Fatalf("%d event types are batched, want the 5 the package doc names; update the doc and the test above", batched)
	}
}

func TestFlushAndSyncWriteTheBatchedEvents(t *testing.T) {
	r := create(t, Options{})
	r.Emit(0, sessionStart())
	r.Emit(1, reminder("batched"))
	if evs := readEvents(t, r.Path()); len(evs) != 1 {
		t.Fatalf("the reminder was written before a flush")
	}
	if err := r.Sync(); err != nil {
		t.Fatal(err)
	}
	if evs := readEvents(t, r.Path()); len(evs) != 2 {
		t.Fatalf("after Sync the file holds %d events, want 2", len(evs))
	}
	r.Emit(1, reminder("flushed by Flush"))
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if evs := readEvents(t, r.Path()); len(evs) != 3 {
		t.Fatalf("after Flush the file holds %d events, want 3", len(evs))
	}
}

// fileSize returns the size of the file at path, 0 when there is none yet.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

func TestTheFileAppearsWithSessionStartWholeAndNeverEmpty(t *testing.T) {
	dir := t.TempDir()
	r, err := Create(dir, Options{Clock: stepClock()})
	if err != nil {
		t.Fatal(err)
	}
	listing := func() []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	if _, err := os.Stat(r.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after Create, before any event, %s exists (%v); a crash now would leave an empty trajectory", r.Path(), err)
	}
	if names := listing(); len(names) != 1 || !strings.HasPrefix(names[0], ".") {
		t.Fatalf("after Create the directory holds %q, want one hidden file", names)
	}
	r.Emit(0, sessionStart())
	if evs := readEvents(t, r.Path()); len(evs) != 1 || evs[0].Type() != trajectory.TypeSessionStart {
		t.Fatalf("after session_start the file holds %d events, want session_start", len(evs))
	}
	if names := listing(); len(names) != 1 || names[0] != filepath.Base(r.Path()) {
		t.Fatalf("after session_start the directory holds %q, want only %s", names, filepath.Base(r.Path()))
	}
	closeOK(t, r)

	empty, err := Create(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	closeOK(t, empty)
	if names := listing(); len(names) != 1 {
		t.Fatalf("a session that recorded nothing left %q, want no file of its own", names)
	}
}

func TestConcurrentEmitsGetSeqsWithoutGaps(t *testing.T) {
	const goroutines, each = 16, 500
	r := create(t, Options{Clock: time.Now})
	r.Emit(0, sessionStart())
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if i%100 == 0 {
					r.Emit(1, modelRequest(1))
					continue
				}
				r.Emit(1, reminder(fmt.Sprintf("goroutine %d event %d", g, i)))
			}
		})
	}
	wg.Wait()
	st := closeOK(t, r)
	evs := readEvents(t, r.Path())
	if len(evs) != 1+goroutines*each || st.Events != int64(len(evs)) {
		t.Fatalf("got %d events (stats: %d), want %d", len(evs), st.Events, 1+goroutines*each)
	}
	assertSeqs(t, evs)
}

// failAfter is a writer that takes limit bytes and then fails.
type failAfter struct {
	limit int
	buf   bytes.Buffer
}

var errDiskFull = errors.New("no space left on device")

func (f *failAfter) Write(p []byte) (int, error) {
	room := max(f.limit-f.buf.Len(), 0)
	if len(p) <= room {
		return f.buf.Write(p)
	}
	f.buf.Write(p[:room])
	return room, errDiskFull
}

func TestWriteErrorsAreCountedAndNeverReachTheCaller(t *testing.T) {
	const events = 100
	w := &failAfter{limit: 2000}
	r := New(w, Options{Clock: stepClock()})
	r.Emit(0, sessionStart())
	for i := 1; i < events; i++ {
		if i%10 == 0 {
			r.Emit(i/10, modelRequest(1))
			continue
		}
		r.Emit(i/10, reminder(fmt.Sprint("event ", i)))
	}
	st, err := r.Close()
	if !errors.Is(err, errDiskFull) {
		t.Errorf("Close error = %v, want the write error", err)
	}
	if st.WriteErrors == 0 || !errors.Is(st.FirstError, errDiskFull) {
		t.Fatalf("stats = %+v, want write errors and FirstError wrapping the disk error", st)
	}
	if st.Events+st.WriteErrors != events {
		t.Errorf("events %d + write errors %d != %d emitted", st.Events, st.WriteErrors, events)
	}
	// What was written is a clean prefix: whole lines, then one torn line.
	complete := w.buf.Bytes()[:bytes.LastIndexByte(w.buf.Bytes(), '\n')+1]
	if int64(bytes.Count(complete, []byte{'\n'})) != st.Events || int64(len(complete)) != st.Bytes {
		t.Errorf("the writer holds %d whole lines (%d bytes); stats say %d events (%d bytes)",
			bytes.Count(complete, []byte{'\n'}), len(complete), st.Events, st.Bytes)
	}
	if !strings.Contains(st.String(), "lost to write errors: recorder: write trajectory writer: no space left on device") {
		t.Errorf("String() = %q", st.String())
	}

	r.Emit(9, reminder("too late"))
	again, err2 := r.Close()
	if again.Dropped != 1 || again.Problems() != st.Problems()+1 || !errors.Is(again.FirstError, errDiskFull) {
		t.Errorf("after Emit after Close: stats = %+v, want 1 dropped and the first error kept", again)
	}
	if !errors.Is(err2, errDiskFull) {
		t.Errorf("second Close error = %v, want the first Close's", err2)
	}
}

func TestEmitAfterCloseIsDropped(t *testing.T) {
	r := create(t, Options{})
	r.Emit(0, sessionStart())
	closeOK(t, r)
	r.Emit(1, reminder("late"))
	st := closeOK(t, r)
	if st.Dropped != 1 || !errors.Is(st.FirstError, ErrClosed) || st.Events != 1 {
		t.Errorf("stats = %+v, want 1 event, 1 dropped, FirstError wrapping ErrClosed", st)
	}
	if err := r.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close = %v, want ErrClosed", err)
	}
	if err := r.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close = %v, want ErrClosed", err)
	}
}

func TestNewDoesNotCloseItsWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := New(f, Options{Clock: stepClock()})
	r.Emit(0, sessionStart())
	closeOK(t, r)
	if _, err := f.WriteString(""); err != nil {
		t.Errorf("the writer was closed: %v", err)
	}
	if r.Path() != "" {
		t.Errorf("Path() = %q, want empty for New", r.Path())
	}
	if evs := readEvents(t, path); len(evs) != 1 || evs[0].Session != r.SessionID() {
		t.Errorf("got %d events", len(evs))
	}
}

func TestALineLargerThanTheBufferIsWrittenWhole(t *testing.T) {
	r := create(t, Options{})
	r.Emit(0, sessionStart())
	big := strings.Repeat("0123456789abcdef", 3*bufSize/16)
	r.Emit(1, reminder(big))
	r.Emit(1, reminder("small"))
	closeOK(t, r)
	evs := readEvents(t, r.Path())
	assertSeqs(t, evs)
	if len(evs) != 3 || evs[1].Payload.(*trajectory.Reminder).Text != big {
		t.Fatalf("got %d events, want 3 with the big one intact", len(evs))
	}
}

func TestCreateErrorsSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(dir, Options{SessionID: "taken"}); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dir  string
		id   string
		want []string
	}{
		{"a session id that is taken names the file and says to leave the id empty", dir, "taken", []string{filepath.Join(dir, "taken.jsonl"), "already exists", "leave Options.SessionID empty"}},
		{"a session id with a slash is refused before touching the disk", dir, "../escape", []string{`"../escape"`, "cannot name a file"}},
		{"a run directory that cannot be made names the directory", filepath.Join(notDir, "runs"), "", []string{filepath.Join(notDir, "runs"), "cannot create run directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Create(tt.dir, Options{SessionID: tt.id})
			if err == nil {
				t.Fatal("Create succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestStatsStringSummarisesOnOneLine(t *testing.T) {
	tests := []struct {
		name string
		st   Stats
		want string
	}{
		{"a clean session says only what was recorded", Stats{Events: 120, Bytes: 48 << 10}, "recorded 120 events (48 KiB)"},
		{"one event is singular and small sizes are in bytes", Stats{Events: 1, Bytes: 300}, "recorded 1 event (300 B)"},
		{
			"problems follow in order with the first error",
			Stats{Events: 3, Bytes: 2 << 20, Redactions: 2, LabelFixes: 1, Invalid: 1, FirstInvalid: errors.New("bad"), WriteErrors: 1, Dropped: 2, FirstError: errors.New("disk full")},
			"recorded 3 events (2.0 MiB); 2 secrets redacted; 1 label replaced by invalid_label; 1 invalid event written (first: bad); 1 event lost to write errors, 2 events dropped after close: disk full",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.st.String(); got != tt.want {
				t.Errorf("String() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestInvalidEventsAreWrittenAndCounted(t *testing.T) {
	var buf bytes.Buffer
	r := New(&buf, Options{Clock: stepClock()})
	r.Emit(1, &trajectory.ToolSuccess{}) // no tool_use_id
	st, _ := r.Close()
	if st.Invalid != 1 || st.Events != 1 || st.FirstInvalid == nil || !errors.Is(st.FirstInvalid, trajectory.ErrMissingField) {
		t.Errorf("stats = %+v, want 1 invalid event written and its error", st)
	}
	if st.Problems() != 0 {
		t.Errorf("Problems() = %d, want 0: the event is in the file", st.Problems())
	}
}

func TestAWriteErrorIsStickyAndTheEndIsWrittenWhenSpaceComesBack(t *testing.T) {
	w := &failAfter{limit: 1 << 20}
	r := New(w, Options{Clock: stepClock()})
	bash := trajectory.ToolRef{ToolUseID: "toolu_01", Tool: "bash"}
	r.Emit(0, sessionStart())
	w.limit = w.buf.Len() + 100
	if err := r.Err(); err != nil {
		t.Fatalf("Err before any failure = %v", err)
	}
	r.Emit(1, modelRequest(40)) // does not fit: the disk is full in the middle of this line
	err := r.Err()
	if !errors.Is(err, errDiskFull) || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Err after the failure = %v, want the disk error", err)
	}
	// The runtime stops; what it still records is held, and written with
	// session_end once the space is back.
	r.Emit(1, &trajectory.ToolCall{ToolRef: bash, Input: json.RawMessage(`{"command":"true"}`)})
	r.Emit(1, &trajectory.ToolFailure{ToolRef: bash, FailureKind: trajectory.FailureAborted, ErrorCode: "record_failed"})
	r.Emit(1, &trajectory.ToolEnd{ToolRef: bash})
	r.Emit(1, &trajectory.ToolResult{ToolRef: bash, Text: "Not run.", IsError: true, Display: trajectory.DisplayFull})
	if got := bytes.Count(w.buf.Bytes(), []byte{'\n'}); got != 1 {
		t.Fatalf("%d whole lines written after the failure began, want only session_start", got)
	}
	w.limit = 1 << 20
	r.Emit(1, &trajectory.SessionEnd{Reason: trajectory.EndRecordFailed, Turns: 1, ToolCalls: 1, ToolFailures: 1})
	if err := r.Err(); !errors.Is(err, errDiskFull) {
		t.Errorf("Err after the retry = %v, want it sticky", err)
	}
	st, cerr := r.Close()
	if cerr != nil || !bytes.HasSuffix(w.buf.Bytes(), []byte("\n")) {
		t.Fatalf("the file is not whole after the retry (close: %v)", cerr)
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, w.buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, path)
	assertSeqs(t, evs)
	if len(evs) != 7 || evs[6].Type() != trajectory.TypeSessionEnd {
		t.Fatalf("got %d events, want all 7 ending in session_end", len(evs))
	}
	if st.Events != 7 || st.WriteErrors != 0 || !errors.Is(st.FirstError, errDiskFull) {
		t.Errorf("stats = %+v, want 7 events, none lost, the disk error kept", st)
	}
}

func TestErrNoticesARemovedRunDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs")
	r, err := Create(dir, Options{Clock: stepClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Emit(0, sessionStart())
	if err := r.Err(); err != nil {
		t.Fatalf("Err = %v before the directory was removed", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	err = r.Err()
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), r.Path()) {
		t.Fatalf("Err = %v, want ErrNotExist naming %s", err, r.Path())
	}
}
