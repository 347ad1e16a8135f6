package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/hooks"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// fakeTool is a small real tool for the pipeline tests: it sleeps, counts
// how many of its kind run at once, and can panic.
type fakeTool struct {
	name     string
	safe     bool
	panics   bool
	inFlight *atomic.Int32
	maxSeen  *atomic.Int32
}

type fakeInput struct {
	SleepMs int    `json:"sleep_ms,omitempty"`
	Say     string `json:"say,omitempty"`
}

func (f *fakeTool) Spec() tools.Spec {
	return tools.Spec{Name: f.name, Description: "A test tool.", Schema: tools.SchemaFor[fakeInput](),
		ReadOnly: f.safe, Display: trajectory.DisplayFull, Source: trajectory.ToolBuiltin}
}

func (f *fakeTool) ConcurrencySafe(json.RawMessage) bool { return f.safe }

func (f *fakeTool) Run(ctx context.Context, _ *tools.Env, input json.RawMessage) (tools.Result, error) {
	if f.panics {
		panic("fake tool exploded")
	}
	var in fakeInput
	if err := json.Unmarshal(input, &in); err != nil {
		return tools.Result{}, err
	}
	if f.inFlight != nil {
		n := f.inFlight.Add(1)
		defer f.inFlight.Add(-1)
		for {
			m := f.maxSeen.Load()
			if n <= m || f.maxSeen.CompareAndSwap(m, n) {
				break
			}
		}
	}
	select {
	case <-time.After(time.Duration(in.SleepMs) * time.Millisecond):
	case <-ctx.Done():
		return tools.Result{}, ctx.Err()
	}
	return tools.Result{Output: in.Say}, nil
}

// harness is one recorded session around an executor.
type harness struct {
	t     *testing.T
	ws    string
	rec   *recorder.Recorder
	buf   *bytes.Buffer
	ex    *Executor
	perm  *permission.Checker
	turn  int
	calls int
	fails int
}

type harnessOpts struct {
	perm   permission.Config
	hooks  []hooks.Config
	extra  []tools.Tool
	prompt Prompter
	// maxConcurrent, timeout and schemaSent go to the Config as they are.
	maxConcurrent int
	timeout       time.Duration
	schemaSent    func(string) bool
	// failWrite, when set, makes the trajectory's writer fail (no space
	// left) from the first write it returns true for.
	failWrite func(p []byte) bool
}

// fullDisk is a trajectory writer that fails from the first write its
// full function picks on, as a disk that filled up.
type fullDisk struct {
	buf    *bytes.Buffer
	full   func(p []byte) bool
	failed bool
}

func (d *fullDisk) Write(p []byte) (int, error) {
	if d.failed || d.full(p) {
		d.failed = true
		return 0, syscall.ENOSPC
	}
	return d.buf.Write(p)
}

func newHarness(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	ws := t.TempDir()
	reg, err := tools.NewRegistry(append(tools.Builtins(), o.extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	env, err := tools.NewEnv(ws, reg)
	if err != nil {
		t.Fatal(err)
	}
	perm, err := permission.New(o.perm, env.Workspace())
	if err != nil {
		t.Fatal(err)
	}
	var hr *hooks.Runner
	if o.hooks != nil {
		if hr, err = hooks.New(o.hooks, env.Workspace()); err != nil {
			t.Fatal(err)
		}
	}
	buf := &bytes.Buffer{}
	var w io.Writer = buf
	if o.failWrite != nil {
		w = &fullDisk{buf: buf, full: o.failWrite}
	}
	rec := recorder.New(w, recorder.Options{})
	ex, err := New(Config{Env: env, Permission: perm, Hooks: hr, Sink: rec, Blobs: recorder.OpenBlobs(filepath.Join(t.TempDir(), "blobs")),
		Prompter: o.prompt, SessionID: rec.SessionID(), MaxConcurrent: o.maxConcurrent, Timeout: o.timeout, SchemaSent: o.schemaSent,
		RecordErr: rec.Err})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ws: env.Workspace(), rec: rec, buf: buf, ex: ex, perm: perm}
	rec.Emit(0, &trajectory.SessionStart{HarnessVersion: "test", Provider: "mock", Model: "none", Mode: trajectory.ModeHeadless,
		PermissionMode: trajectory.PermDefault, ConfigHash: trajectory.Hash(nil), SystemPromptHash: trajectory.Hash(nil),
		Tools: []trajectory.ToolInfo{}, Defenses: []trajectory.DefenseName{}})
	return h
}

func use(id, name, input string) trajectory.ContentBlock {
	return trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: id, Name: name, Input: json.RawMessage(input)}
}

// turnWith records a model request and response carrying the tool_use
// blocks, runs them through the executor and returns the results.
func (h *harness) turnWith(ctx context.Context, uses ...trajectory.ContentBlock) []trajectory.ContentBlock {
	h.t.Helper()
	h.turn++
	msgs := []string{trajectory.Hash([]byte{byte(h.turn)})}
	h.rec.Emit(h.turn, &trajectory.ModelRequest{SystemHash: trajectory.Hash(nil), ToolsHash: trajectory.Hash(nil), ToolNames: []string{},
		MessageHashes: msgs, PrefixHash: trajectory.PrefixHashOf(msgs), NewMessages: []trajectory.Message{}})
	h.rec.Emit(h.turn, &trajectory.ModelResponse{Content: uses, StopReason: trajectory.StopToolUse, Usage: trajectory.Usage{}})
	results := h.ex.Execute(ctx, h.turn, uses)
	if len(results) != len(uses) {
		h.t.Fatalf("got %d results for %d tool_use blocks", len(results), len(uses))
	}
	for i, r := range results {
		if r.ToolUseID != uses[i].ID {
			h.t.Fatalf("result %d is for %s, want %s (results keep the blocks' order)", i, r.ToolUseID, uses[i].ID)
		}
		h.calls++
		if r.IsError {
			h.fails++
		}
	}
	return results
}

// events ends the session and returns its events after checking every
// trajectory invariant with the real checker.
func (h *harness) events() []trajectory.Event {
	h.t.Helper()
	h.rec.Emit(h.turn, &trajectory.SessionEnd{Reason: trajectory.EndTurn, Turns: h.turn, ToolCalls: h.calls, ToolFailures: h.failures()})
	if st, err := h.rec.Close(); err != nil || st.Problems() != 0 || st.Invalid != 0 {
		h.t.Fatalf("recorder: %v, %s (first invalid: %v)", err, st, st.FirstInvalid)
	}
	rep, err := trajectory.ValidateStream(bytes.NewReader(h.buf.Bytes()), "session.jsonl")
	if err != nil {
		h.t.Fatal(err)
	}
	for _, p := range rep.Problems {
		h.t.Errorf("invariant: %v", p)
	}
	var evs []trajectory.Event
	dec := trajectory.NewDecoder(bytes.NewReader(h.buf.Bytes()), "session.jsonl")
	for {
		ev, err := dec.Next()
		if err != nil {
			break
		}
		evs = append(evs, ev)
	}
	return evs
}

// failures counts tool_failure events so far, which is what session_end
// must report (an is_error result is not always a failure event, and the
// reverse).
func (h *harness) failures() int {
	n := 0
	if err := h.rec.Flush(); err != nil {
		h.t.Fatal(err)
	}
	dec := trajectory.NewDecoder(bytes.NewReader(h.buf.Bytes()), "session.jsonl")
	for {
		ev, err := dec.Next()
		if err != nil {
			return n
		}
		if ev.Type() == trajectory.TypeToolFailure {
			n++
		}
	}
}

func payloads[T trajectory.Payload](evs []trajectory.Event) []T {
	var out []T
	for _, e := range evs {
		if p, ok := e.Payload.(T); ok {
			out = append(out, p)
		}
	}
	return out
}

func failureOf(t *testing.T, evs []trajectory.Event, id string) *trajectory.ToolFailure {
	t.Helper()
	for _, f := range payloads[*trajectory.ToolFailure](evs) {
		if f.ToolUseID == id {
			return f
		}
	}
	t.Fatalf("no tool_failure for %s", id)
	return nil
}

func endOf(t *testing.T, evs []trajectory.Event, id string) *trajectory.ToolEnd {
	t.Helper()
	for _, e := range payloads[*trajectory.ToolEnd](evs) {
		if e.ToolUseID == id {
			return e
		}
	}
	t.Fatalf("no tool_end for %s", id)
	return nil
}

func TestIllegalParametersBecomeAnInvalidInputResultThatNamesTheField(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	cut := trajectory.ContentBlock{Type: trajectory.BlockToolUse, ID: "toolu_3", Name: "read", PartialInput: `{"file_pa`}
	res := h.turnWith(context.Background(),
		use("toolu_1", "read", `{"file_path": 123}`),
		use("toolu_2", "read", `{"path": "a.txt"}`),
		cut)
	evs := h.events()
	for i, want := range []string{"file_path", "file_path: required but missing", "must be a JSON object"} {
		if !res[i].IsError || !strings.Contains(res[i].Content, want) {
			t.Errorf("result %d = %q, want an error mentioning %q", i, res[i].Content, want)
		}
		if k := failureOf(t, evs, res[i].ToolUseID).FailureKind; k != trajectory.FailureInvalidInput {
			t.Errorf("result %d failure kind %s, want invalid_input", i, k)
		}
	}
	if !strings.Contains(res[0].Content, "123") {
		t.Errorf("the message should show what was sent: %q", res[0].Content)
	}
}

func TestAToolThatPanicsIsAnExceptionAndTheOtherCallsStillRun(t *testing.T) {
	h := newHarness(t, harnessOpts{extra: []tools.Tool{&fakeTool{name: "boom", panics: true}}, perm: permission.Config{Allow: []string{"boom"}}})
	os.WriteFile(filepath.Join(h.ws, "a.txt"), []byte("hello\n"), 0o644)
	res := h.turnWith(context.Background(), use("toolu_1", "boom", `{}`), use("toolu_2", "read", `{"file_path":"a.txt"}`))
	evs := h.events()
	if f := failureOf(t, evs, "toolu_1"); f.FailureKind != trajectory.FailureException || f.ErrorCode != "panic" {
		t.Fatalf("failure = %+v, want exception/panic", f)
	}
	if !res[0].IsError || !strings.Contains(res[0].Content, "internal error") {
		t.Fatalf("panic result = %q", res[0].Content)
	}
	if res[1].IsError || !strings.Contains(res[1].Content, "hello") {
		t.Fatalf("the read after the panic = %q, want the file", res[1].Content)
	}
}

func TestATenMegabyteOutputIsTruncatedSpilledAndExplained(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Allow: []string{"Bash(head:*)"}}})
	res := h.turnWith(context.Background(), use("toolu_1", "bash", `{"command":"head -c 10000000 /dev/zero | tr '\\0' x"}`))
	evs := h.events()
	text := res[0].Content
	if res[0].IsError {
		t.Fatalf("unexpected error: %.300s", text)
	}
	if n := len([]rune(text)); n > 30000+400 {
		t.Fatalf("the model got %d characters, want about the 30000 limit", n)
	}
	if !strings.Contains(text, "characters omitted") || !strings.Contains(text, "use the read tool") {
		t.Fatalf("the truncation notice is missing: %.200s … %.400s", text, text[len(text)-400:])
	}
	end := endOf(t, evs, "toolu_1")
	if !end.Truncated || end.Spill == "" || end.OutputBytes != 10_000_000 {
		t.Fatalf("tool_end = %+v, want truncated with a spill of 10000000 bytes", end)
	}
	path := text[strings.Index(text, "saved to ")+len("saved to "):]
	path = path[:strings.Index(path, ";")]
	if info, err := os.Stat(path); err != nil || info.Size() != 10_000_000 {
		t.Fatalf("spill file %s: %v %v", path, info, err)
	}
}

// The notice sends the model to read the spill; that read must work, and
// must not be truncated and spilled again (unlimited).
func TestTheSpilledOutputCanBeReadBackWithoutAnotherSpill(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Allow: []string{"Bash(seq:*)"}}})
	res := h.turnWith(context.Background(), use("toolu_1", "bash", `{"command":"seq 1 20000"}`))
	text := res[0].Content
	path := text[strings.Index(text, "saved to ")+len("saved to "):]
	path = path[:strings.Index(path, ";")]
	in, _ := json.Marshal(map[string]any{"file_path": path, "offset": 19990, "limit": 5})
	back := h.turnWith(context.Background(), use("toolu_2", "read", string(in)))
	evs := h.events()
	if back[0].IsError || !strings.Contains(back[0].Content, "19990") {
		t.Fatalf("reading the spill back: %q", back[0].Content)
	}
	if endOf(t, evs, "toolu_2").Truncated {
		t.Fatal("the read of a spill was truncated again")
	}
}

func TestReadEditReadInOneTurnSeesTheEdit(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermAcceptEdits}})
	os.WriteFile(filepath.Join(h.ws, "a.go"), []byte("package a\n\nconst X = 1\n"), 0o644)
	res := h.turnWith(context.Background(),
		use("toolu_1", "read", `{"file_path":"a.go"}`),
		use("toolu_2", "edit", `{"file_path":"a.go","old_string":"X = 1","new_string":"X = 2"}`),
		use("toolu_3", "read", `{"file_path":"a.go"}`))
	evs := h.events()
	if res[1].IsError {
		t.Fatalf("edit failed: %s", res[1].Content)
	}
	if !strings.Contains(res[0].Content, "X = 1") || !strings.Contains(res[2].Content, "X = 2") {
		t.Fatalf("first read %q, second read %q: the second must see the edit", res[0].Content, res[2].Content)
	}
	batches := map[string]int{}
	for _, c := range payloads[*trajectory.ToolCall](evs) {
		batches[c.ToolUseID] = c.Batch
	}
	if batches["toolu_1"] == batches["toolu_3"] {
		t.Fatalf("batches %v: the two reads around the edit must not be merged", batches)
	}
}

func TestAParallelBatchRecordsEachToolsOwnDuration(t *testing.T) {
	var inFlight, maxSeen atomic.Int32
	slow := &fakeTool{name: "nap", safe: true, inFlight: &inFlight, maxSeen: &maxSeen}
	h := newHarness(t, harnessOpts{extra: []tools.Tool{slow}, perm: permission.Config{Allow: []string{"nap"}}})
	sleeps := map[string]int{"toolu_1": 10, "toolu_2": 400, "toolu_3": 120}
	h.turnWith(context.Background(),
		use("toolu_1", "nap", `{"sleep_ms":10}`), use("toolu_2", "nap", `{"sleep_ms":400}`), use("toolu_3", "nap", `{"sleep_ms":120}`))
	evs := h.events()
	if maxSeen.Load() < 2 {
		t.Fatalf("at most %d calls ran at once; a safe batch must run in parallel", maxSeen.Load())
	}
	for id, ms := range sleeps {
		if d := endOf(t, evs, id).DurationMs; d < float64(ms) {
			t.Errorf("%s slept %d ms but recorded %.1f ms", id, ms, d)
		}
	}
	if short, long := endOf(t, evs, "toolu_1").DurationMs, endOf(t, evs, "toolu_2").DurationMs; short >= long {
		t.Errorf("the 10 ms call recorded %.1f ms, not less than the 400 ms call's %.1f ms: durations were averaged", short, long)
	}
}

func TestUnknownAndNotYetLoadedToolsGetGuidanceNotExceptions(t *testing.T) {
	deferred := &deferredTool{fakeTool{name: "web_fetch", safe: true}}
	h := newHarness(t, harnessOpts{extra: []tools.Tool{deferred}})
	res := h.turnWith(context.Background(), use("toolu_1", "reed", `{}`), use("toolu_2", "web_fetch", `{}`))
	evs := h.events()
	if !strings.Contains(res[0].Content, "does not exist") || !strings.Contains(res[1].Content, `select:web_fetch`) {
		t.Fatalf("results %q / %q", res[0].Content, res[1].Content)
	}
	for _, id := range []string{"toolu_1", "toolu_2"} {
		if k := failureOf(t, evs, id).FailureKind; k != trajectory.FailureNotFound {
			t.Errorf("%s: kind %s, want not_found", id, k)
		}
	}
}

type deferredTool struct{ fakeTool }

func (d *deferredTool) Spec() tools.Spec {
	s := d.fakeTool.Spec()
	s.Deferred = true
	return s
}

func TestHeadlessAskIsRecordedAsAPromptThenANonInteractiveDeny(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	res := h.turnWith(context.Background(), use("toolu_1", "bash", `{"command":"touch x"}`))
	evs := h.events()
	prompts, denies := payloads[*trajectory.PermissionPrompt](evs), payloads[*trajectory.PermissionDeny](evs)
	if len(prompts) != 1 || len(denies) != 1 || denies[0].Source != trajectory.SourceNonInteractive || !denies[0].NeededPrompt {
		t.Fatalf("prompts %+v, denies %+v", prompts, denies)
	}
	if failureOf(t, evs, "toolu_1").FailureKind != trajectory.FailurePermissionDenied || !strings.Contains(res[0].Content, "non-interactive") {
		t.Fatalf("result %q", res[0].Content)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the denied command ran")
	}
}

// The fuse trips once per operation, at its third denial, and records
// what it does from then on. On the ask path the same call
// then goes to a person with the fuse's reason: needs_confirmation. A
// hard deny stays a deny and nothing is ever asked, so there the fuse
// tells the model to stop retrying and the session continues: continue,
// never needs_confirmation.
func TestTheDenialFuseFiresOnceWhereItActsWithTheActionItTakes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		perm    permission.Config
		command string
		action  trajectory.DefenseAction
		source  trajectory.PermissionSource
		// fusePrompts is how many permission_prompt events name the fuse.
		fusePrompts int
	}{
		{"A deny rule refused five times trips the fuse at the third with continue; nothing is asked.",
			permission.Config{Deny: []string{"Bash(rm:*)"}, FuseThreshold: 3}, "rm -f notes.txt", trajectory.ActionContinue, trajectory.SourceRule, 0},
		{"An ask refused headless five times trips the fuse at the third with needs_confirmation; the later calls go to a person.",
			permission.Config{FuseThreshold: 3}, "touch notes.txt", trajectory.ActionNeedsConfirmation, trajectory.SourceNonInteractive, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{perm: tc.perm})
			in, _ := json.Marshal(map[string]string{"command": tc.command})
			var res [][]trajectory.ContentBlock
			for i := 0; i < 5; i++ {
				res = append(res, h.turnWith(context.Background(), use(fmt.Sprintf("toolu_%d", i), "bash", string(in))))
			}
			evs := h.events()
			triggers := payloads[*trajectory.DefenseTrigger](evs)
			if len(triggers) != 1 || triggers[0].Defense != trajectory.DefenseDenialFuse || triggers[0].ToolUseID != "toolu_2" {
				t.Fatalf("defense triggers = %+v, want exactly one denial_fuse at the third denial (toolu_2)", triggers)
			}
			tr := triggers[0]
			if tr.Action != tc.action || tr.Count != 1 || tr.Evidence["source"] != string(tc.source) || tr.Evidence["tool"] != "bash" {
				t.Fatalf("trigger = %+v, want action %s, count 1, source %s", tr, tc.action, tc.source)
			}
			fused := 0
			for _, p := range payloads[*trajectory.PermissionPrompt](evs) {
				if p.Source == trajectory.SourceFuse {
					fused++
				}
			}
			if fused != tc.fusePrompts {
				t.Fatalf("%d permission prompts came from the fuse, want %d", fused, tc.fusePrompts)
			}
			for i, r := range res {
				if !r[0].IsError {
					t.Fatalf("call %d was not denied: %q", i, r[0].Content)
				}
			}
			if tc.action == trajectory.ActionContinue {
				for i := 2; i < 5; i++ {
					if !strings.Contains(res[i][0].Content, "stop retrying") {
						t.Errorf("denial %d does not tell the model to stop retrying: %q", i, res[i][0].Content)
					}
				}
				if strings.Contains(res[1][0].Content, "stop retrying") {
					t.Errorf("the second denial, before the fuse tripped, already says stop retrying: %q", res[1][0].Content)
				}
			}
		})
	}
}

// Count is the fuse's triggers in the session: two operations that each
// trip it count 1 and 2.
func TestTheDenialFuseCountsItsTriggersAcrossOperations(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Deny: []string{"Bash(rm:*)"}, FuseThreshold: 2}})
	for i := 0; i < 4; i++ {
		h.turnWith(context.Background(), use(fmt.Sprintf("toolu_%d", i), "bash", fmt.Sprintf(`{"command":"rm -f f%d"}`, i/2)))
	}
	triggers := payloads[*trajectory.DefenseTrigger](h.events())
	if len(triggers) != 2 || triggers[0].Count != 1 || triggers[1].Count != 2 || triggers[1].ToolUseID != "toolu_3" {
		t.Fatalf("triggers = %+v, want counts 1 and 2, the second at toolu_3", triggers)
	}
}

type answer bool

func (a answer) Confirm(context.Context, Prompt) (bool, error) { return bool(a), nil }

func TestAnInteractiveYesIsRememberedForTheSameInputOnly(t *testing.T) {
	h := newHarness(t, harnessOpts{prompt: answer(true)})
	h.turnWith(context.Background(), use("toolu_1", "bash", `{"command":"touch a"}`))
	h.turnWith(context.Background(), use("toolu_2", "bash", `{"command":"touch a"}`), use("toolu_3", "bash", `{"command":"touch b"}`))
	evs := h.events()
	sources := map[string]trajectory.PermissionSource{}
	for _, a := range payloads[*trajectory.PermissionAllow](evs) {
		sources[a.ToolUseID] = a.Source
	}
	want := map[string]trajectory.PermissionSource{"toolu_1": trajectory.SourceUser, "toolu_2": trajectory.SourceSessionMemory, "toolu_3": trajectory.SourceUser}
	for id, s := range want {
		if sources[id] != s {
			t.Errorf("%s allowed by %q, want %q", id, sources[id], s)
		}
	}
}

func TestAFailedBashSkipsLaterBashCallsButNotOtherTools(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermBypass}})
	os.WriteFile(filepath.Join(h.ws, "a.txt"), []byte("a\n"), 0o644)
	res := h.turnWith(context.Background(),
		use("toolu_1", "bash", `{"command":"mkdir a.txt"}`),
		use("toolu_2", "read", `{"file_path":"a.txt"}`),
		use("toolu_3", "bash", `{"command":"touch after"}`))
	evs := h.events()
	if f := failureOf(t, evs, "toolu_1"); f.FailureKind != trajectory.FailureToolError || f.ErrorCode != "exit:1" {
		t.Fatalf("first bash failure = %+v", f)
	}
	if res[1].IsError {
		t.Fatalf("the read must run: %q", res[1].Content)
	}
	if f := failureOf(t, evs, "toolu_3"); f.FailureKind != trajectory.FailureAborted || f.ErrorCode != "sibling_failed" {
		t.Fatalf("later bash = %+v, want aborted/sibling_failed", f)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "after")); err == nil {
		t.Fatal("the skipped bash call ran")
	}
}

func TestAUserAbortStillGivesEveryCallOneResult(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermBypass}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Abort once the first call is running.
		for {
			if _, err := os.Stat(filepath.Join(h.ws, "started")); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	res := h.turnWith(ctx, use("toolu_1", "bash", `{"command":"touch started; sleep 30"}`), use("toolu_2", "bash", `{"command":"echo later"}`), use("toolu_3", "read", `{"file_path":"x"}`))
	evs := h.events()
	for i, r := range res {
		if !r.IsError {
			t.Errorf("result %d = %q, want an aborted error", i, r.Content)
		}
		if k := failureOf(t, evs, r.ToolUseID).FailureKind; k != trajectory.FailureAborted {
			t.Errorf("%s kind %s, want aborted", r.ToolUseID, k)
		}
	}
}

func TestEmptyOutputIsSaidExplicitly(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	os.WriteFile(filepath.Join(h.ws, "a.txt"), []byte("hello\n"), 0o644)
	res := h.turnWith(context.Background(), use("toolu_1", "grep", `{"pattern":"nothing-here"}`))
	h.events()
	if res[0].IsError || res[0].Content == "" || !strings.Contains(res[0].Content, "no matches") {
		t.Fatalf("result %+v, want an explicit no-matches text", res[0])
	}
}

// A command that prints only blanks and newlines succeeded with nothing
// to say, and the model is told so in words.
func TestBlankOutputIsSaidExplicitly(t *testing.T) {
	for _, tc := range []struct{ name, command string }{
		{"An echo that prints a newline is said to have no output.", `echo`},
		{"Spaces and a newline are said to be no output.", `printf '  \n'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{})
			in, _ := json.Marshal(map[string]string{"command": tc.command})
			res := h.turnWith(context.Background(), use("toolu_1", "bash", string(in)))
			h.events()
			if res[0].IsError || !strings.Contains(res[0].Content, "no output") {
				t.Fatalf("result %+v, want the explicit no-output text", res[0])
			}
		})
	}
}

func TestHooksBlockAndRewriteWithANoticeThatRevealsNoValues(t *testing.T) {
	dir := t.TempDir()
	block := filepath.Join(dir, "block.sh")
	os.WriteFile(block, []byte("#!/bin/bash\necho 'writing .env is not allowed' >&2\nexit 2\n"), 0o755)
	rewrite := filepath.Join(dir, "rewrite.sh")
	os.WriteFile(rewrite, []byte("#!/bin/bash\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"updatedInput\":{\"file_path\":\"b.txt\"}}}'\n"), 0o755)
	h := newHarness(t, harnessOpts{
		perm: permission.Config{Mode: trajectory.PermAcceptEdits},
		hooks: []hooks.Config{
			{Name: "no-env", Event: "PreToolUse", Matcher: "write", Command: block},
			{Name: "redirect", Event: "PreToolUse", Matcher: "read", Command: rewrite},
		}})
	os.WriteFile(filepath.Join(h.ws, "a.txt"), []byte("secret-a\n"), 0o644)
	os.WriteFile(filepath.Join(h.ws, "b.txt"), []byte("public-b\n"), 0o644)
	res := h.turnWith(context.Background(),
		use("toolu_1", "write", `{"file_path":".env","content":"KEY=1"}`),
		use("toolu_2", "read", `{"file_path":"a.txt"}`))
	evs := h.events()
	if failureOf(t, evs, "toolu_1").FailureKind != trajectory.FailureHookBlocked || !strings.Contains(res[0].Content, "writing .env is not allowed") {
		t.Fatalf("blocked write result %q", res[0].Content)
	}
	if !strings.Contains(res[1].Content, "public-b") || !strings.Contains(res[1].Content, "hook changed the input") || strings.Contains(res[1].Content, "b.txt") {
		t.Fatalf("rewritten read result %q: want b's content and a notice that does not reveal the new path", res[1].Content)
	}
	runs := payloads[*trajectory.HookRun](evs)
	if len(runs) != 2 || runs[1].Outcome != trajectory.HookModified || !runs[1].InputChanged {
		t.Fatalf("hook runs %+v", runs)
	}
}
