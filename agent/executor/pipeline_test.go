package executor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/trajectory"
)

// moodyTool is a test tool whose concurrency predicate panics, whose
// interrupt behaviour is configurable, and whose result carries a context
// modifier that logs the call's order of application.
type moodyTool struct {
	fakeTool
	interrupt tools.Interrupt
	log       *[]string
	mu        *sync.Mutex
}

func (m *moodyTool) Spec() tools.Spec {
	s := m.fakeTool.Spec()
	s.Interrupt = m.interrupt
	return s
}

func (m *moodyTool) ConcurrencySafe(json.RawMessage) bool {
	if m.name == "flaky" {
		panic("predicate bug")
	}
	return m.safe
}

func (m *moodyTool) Run(ctx context.Context, env *tools.Env, input json.RawMessage) (tools.Result, error) {
	res, err := m.fakeTool.Run(ctx, env, input)
	if err == nil && m.log != nil {
		res.Modify = func(*tools.Env) {
			m.mu.Lock()
			defer m.mu.Unlock()
			*m.log = append(*m.log, res.Output)
		}
	}
	return res, err
}

func TestAConcurrencyPredicateThatPanicsMeansNotSafe(t *testing.T) {
	flaky := &moodyTool{fakeTool: fakeTool{name: "flaky", safe: true}}
	h := newHarness(t, harnessOpts{extra: []tools.Tool{flaky}, perm: permission.Config{Allow: []string{"flaky"}}})
	res := h.turnWith(context.Background(), use("toolu_1", "flaky", `{"say":"a"}`), use("toolu_2", "flaky", `{"say":"b"}`))
	evs := h.events()
	for _, c := range payloads[*trajectory.ToolCall](evs) {
		if c.ConcurrencySafe {
			t.Fatalf("call %s marked concurrency-safe although its predicate panicked", c.ToolUseID)
		}
	}
	if res[0].IsError || res[1].IsError {
		t.Fatalf("the calls must still run: %+v", res)
	}
}

func TestContextModifiersApplyInTheCallsOrderNotInCompletionOrder(t *testing.T) {
	var log []string
	var mu sync.Mutex
	tool := &moodyTool{fakeTool: fakeTool{name: "mark", safe: true}, log: &log, mu: &mu}
	h := newHarness(t, harnessOpts{extra: []tools.Tool{tool}, perm: permission.Config{Allow: []string{"mark"}}})
	h.turnWith(context.Background(),
		use("toolu_1", "mark", `{"say":"first","sleep_ms":150}`),
		use("toolu_2", "mark", `{"say":"second","sleep_ms":50}`),
		use("toolu_3", "mark", `{"say":"third"}`))
	h.events()
	if strings.Join(log, ",") != "first,second,third" {
		t.Fatalf("modifiers applied as %v, want the calls' order", log)
	}
}

func TestACallThatDeclaresBlockRunsToCompletionThroughAnAbort(t *testing.T) {
	steady := &moodyTool{fakeTool: fakeTool{name: "steady"}, interrupt: tools.InterruptBlock}
	h := newHarness(t, harnessOpts{extra: []tools.Tool{steady}, perm: permission.Config{Mode: trajectory.PermBypass}})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	res := h.turnWith(ctx, use("toolu_1", "steady", `{"say":"done","sleep_ms":300}`), use("toolu_2", "steady", `{"say":"never"}`))
	evs := h.events()
	if res[0].IsError || res[0].Content != "done" {
		t.Fatalf("the blocking call = %+v, want it finished", res[0])
	}
	if f := failureOf(t, evs, "toolu_2"); f.FailureKind != trajectory.FailureAborted {
		t.Fatalf("the call after the abort = %+v, want aborted", f)
	}
}

func TestErrorsAreAlwaysDisplayedEvenForHiddenTools(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.turnWith(context.Background(),
		use("toolu_1", "todo_write", `{"todos":[{"content":"write tests","status":"in_progress","active_form":"Writing tests"}]}`),
		use("toolu_2", "todo_write", `{"todos":"not a list"}`))
	evs := h.events()
	display := map[string]trajectory.DisplayMode{}
	for _, r := range payloads[*trajectory.ToolResult](evs) {
		display[r.ToolUseID] = r.Display
	}
	if display["toolu_1"] != trajectory.DisplayHidden || display["toolu_2"] != trajectory.DisplayFull {
		t.Fatalf("display modes %v: a successful todo_write is hidden, a failed one is shown", display)
	}
}

func TestAWriteOutsideTheWorkspaceIsDeniedEvenInBypassMode(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermBypass}})
	outside := filepath.Join(t.TempDir(), "escape.txt")
	os.Symlink(filepath.Dir(outside), filepath.Join(h.ws, "link"))
	in, _ := json.Marshal(map[string]string{"file_path": "link/escape.txt", "content": "x"})
	res := h.turnWith(context.Background(), use("toolu_1", "write", string(in)))
	evs := h.events()
	if f := failureOf(t, evs, "toolu_1"); f.FailureKind != trajectory.FailurePermissionDenied {
		t.Fatalf("failure %+v, want permission_denied", f)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatalf("the write escaped the workspace through a symlink: %s", res[0].Content)
	}
}

func TestASnapshotSavesTheFileBeforeAnEditChangesIt(t *testing.T) {
	h := newHarness(t, harnessOpts{perm: permission.Config{Mode: trajectory.PermAcceptEdits}})
	os.WriteFile(filepath.Join(h.ws, "a.txt"), []byte("before\n"), 0o644)
	h.turnWith(context.Background(),
		use("toolu_1", "read", `{"file_path":"a.txt"}`),
		use("toolu_2", "edit", `{"file_path":"a.txt","old_string":"before","new_string":"after"}`))
	evs := h.events()
	ref := endOf(t, evs, "toolu_2").Snapshot
	if ref == "" || endOf(t, evs, "toolu_1").Snapshot != "" {
		t.Fatalf("snapshots: edit %q, read %q; want one for the edit only", ref, endOf(t, evs, "toolu_1").Snapshot)
	}
	blobs := h.ex.cfg.Blobs.(interface{ Get(string) ([]byte, error) })
	data, err := blobs.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	var m snapshotManifest
	if err := json.Unmarshal(data, &m); err != nil || len(m.Files) != 1 || !strings.Contains(m.Summary, "a.txt") {
		t.Fatalf("manifest %s (%v)", data, err)
	}
	saved, err := blobs.Get(m.Files[0].Blob)
	if err != nil || string(saved) != "before\n" {
		t.Fatalf("saved content %q (%v), want the file before the edit", saved, err)
	}
}

func TestACallToAToolOfAServerStillConnectingSaysSoInsteadOfDoesNotExist(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.ex.reg.SetPending(func() []string { return []string{"github"} })
	res := h.turnWith(context.Background(), use("toolu_1", "mcp__github__create_issue", `{}`), use("toolu_2", "reed", `{}`))
	evs := h.events()
	if !strings.Contains(res[0].Content, "still connecting") || failureOf(t, evs, "toolu_1").ErrorCode != "pending" {
		t.Fatalf("pending server's tool: %q", res[0].Content)
	}
	if !strings.Contains(res[1].Content, "does not exist") {
		t.Fatalf("a plain unknown tool: %q", res[1].Content)
	}
}
