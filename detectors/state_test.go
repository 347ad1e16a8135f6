package detectors

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// Two sessions of one harness version whose read definitions differ are
// one corpus-level definition_drift warning, citing both sessions, with
// the shrunk description's session first.
func TestDefinitionDriftAcrossTheCorpusCitesTheSessionsOfEachDefinition(t *testing.T) {
	ds, err := Select([]string{"definition_drift"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	shrunk := filepath.Join("testdata", "corpus", "definition_drift_shrunk.jsonl")
	rep, err := Run(context.Background(), loaded(t, filepath.Join("testdata", "clean", "definition_drift.jsonl"), shrunk), ds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 {
		t.Fatalf("%d findings, want 1: %+v", len(rep.Findings), rep.Findings)
	}
	f := rep.Findings[0]
	if f.Severity != SeverityWarning || len(f.Sessions) != 2 || len(f.Evidence) != 2 || f.Evidence[0].File != shrunk || f.Evidence[0].Line != 1 {
		t.Errorf("finding %+v: want a warning citing 2 sessions, first at %s:1", f, shrunk)
	}
	if !strings.Contains(f.Message, "97.1%") {
		t.Errorf("message %q does not say how much of the description was lost", f.Message)
	}
}

// A tool_search result whose definition of a deferred tool lost most of
// the catalog's description is definition drift within the session,
// found at the result.
func TestDefinitionDriftFindsAToolSearchDefinitionThatDiffersFromTheCatalog(t *testing.T) {
	ds, err := Select([]string{"definition_drift"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), loaded(t, filepath.Join("testdata", "corpus", "definition_drift_search.jsonl")), ds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 {
		t.Fatalf("%d findings, want 1: %+v", len(rep.Findings), rep.Findings)
	}
	f := rep.Findings[0]
	if f.Severity != SeverityWarning || f.ToolUseID != "toolu_search" || !slices.Equal(lines(f), []int{9, 1}) || !strings.Contains(f.Message, "81.8%") {
		t.Errorf("finding %+v: want a warning about toolu_search at lines 9 and 1 saying 81.8%% was lost", f)
	}
}

// A cache-read share that falls at turns 3 and 4 with nothing to explain
// it is an info finding; the thresholds decide what counts as warm, how
// long the cache lives and how many drops make a pattern.
func TestCacheBreakerThresholdsDecideWhatACacheDropIs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings Settings
		want     int
	}{
		{"Two drops from 96% to 0% of cache reads, at turns 3 and 4, are found at the defaults.", nil, 1},
		{"With min_unexplained_drops 3 two drops are the provider evicting the cache.", Settings{"cache_breaker": {"min_unexplained_drops": 3}}, 0},
		{"With min_cache_read_share 0.99 the cache was never warm, so nothing dropped.", Settings{"cache_breaker": {"min_cache_read_share": 0.99}}, 0},
		{"With cache_ttl_seconds 0 every request finds the cache expired, which explains the miss.", Settings{"cache_breaker": {"cache_ttl_seconds": 0}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := Select([]string{"cache_breaker"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(context.Background(), loaded(t, filepath.Join("testdata", "corpus", "cache_drop.jsonl")), ds, Options{Settings: tc.settings})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Findings) != tc.want {
				t.Fatalf("%d findings, want %d: %+v", len(rep.Findings), tc.want, rep.Findings)
			}
			if tc.want == 1 && (rep.Findings[0].Severity != SeverityInfo || !slices.Equal(lines(rep.Findings[0]), []int{18, 25})) {
				t.Errorf("finding %+v, want info at lines 18 and 25", rep.Findings[0])
			}
		})
	}
}

func TestToolsChangeSaysWhatChangedAndLetsAppendedToolsThrough(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, cur []string
		want     string
	}{
		{"A deferred tool appended at the end is the runtime's design.", []string{"read", "bash"}, []string{"read", "bash", "mcp__x__y"}, ""},
		{"The same names in the same order mean the bytes changed.", []string{"read", "bash"}, []string{"read", "bash"}, "definitions' bytes changed"},
		{"The same names in another order are a reorder, naming the first position.", []string{"read", "bash", "ls"}, []string{"read", "ls", "bash"}, "position 2: bash, then ls"},
		{"A tool removed is named.", []string{"read", "bash"}, []string{"read"}, "removed bash"},
		{"A tool inserted before the end is named.", []string{"read", "bash"}, []string{"ls", "read", "bash"}, "added ls not at the end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := toolsChange(tc.old, tc.cur)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLabelledFindsAHarnessTagAroundTheText(t *testing.T) {
	for _, tc := range []struct {
		name, block string
		want        bool
	}{
		{"The runtime's harness-reminder tag labels the text.", "<harness-reminder>Stop.</harness-reminder>", true},
		{"A system-reminder tag with attributes labels it.", `Done. <system-reminder kind="x">Stop.</system-reminder>`, true},
		{"Bare text is not labelled.", "Stop.", false},
		{"A tag that says nothing about the harness does not label it.", "<b>Stop.</b>", false},
		{"An opening tag without its closing tag does not label it.", "<harness-reminder>Stop.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := labelled(tc.block, "Stop."); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGitStatusInReadsTheSnapshotBlockAfterItsHeader(t *testing.T) {
	for _, tc := range []struct {
		name, prompt string
		want         []string
		have         bool
	}{
		{"Lines after a git status header are the snapshot, sorted, the blanks of their letters dropped.", "Intro.\n\ngitStatus:\n?? b.txt\n M a.go\n\nMore.", []string{"?? b.txt", "M a.go"}, true},
		{"A snapshot after other lines, as Claude Code renders it, is found.", "gitStatus: a snapshot in time.\nCurrent branch: main\n\nStatus:\nM src/app.go\nD old.go\n\nRecent commits:\nabc123 Fix", []string{"D old.go", "M src/app.go"}, true},
		{"A clean marker is a clean snapshot.", "git status at start:\nStatus:\n(clean)\n", nil, true},
		{"A header with neither status lines nor a clean marker is no snapshot.", "gitStatus: see below.\nCurrent branch: main\n", nil, false},
		{"A prompt without a header has no snapshot.", "You are an agent.\n M a.go", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, have := gitStatusIn(tc.prompt)
			if have != tc.have || !slices.Equal(got, tc.want) {
				t.Errorf("got %q, %v; want %q, %v", got, have, tc.want, tc.have)
			}
		})
	}
}

func TestPhantomUserMessageFindsRemindersNotDeduplicatedOrNotCapped(t *testing.T) {
	rem := func(kind, key string) *trajectory.Reminder {
		return &trajectory.Reminder{Kind: kind, DedupKey: key, Role: trajectory.RoleUser, Text: "Continue."}
	}
	summarized := &trajectory.Compaction{Strategy: trajectory.CompactSummarize, MessagesBefore: 9, MessagesAfter: 2}
	for _, tc := range []struct {
		name  string
		s     *Session
		lines [][]int
	}{
		{"The same dedup_key injected twice is found at the second, then the first.", session("s", rem("continue", "k1"), rem("continue", "k1")), [][]int{{2, 1}}},
		{"A summarising compaction between takes the first out of the context.", session("s", rem("continue", "k1"), summarized, rem("continue", "k1")), nil},
		{"Without a dedup_key the same text counts as the same reminder.", session("s", rem("continue", ""), rem("continue", "")), [][]int{{2, 1}}},
		{"Four reminders of one kind exceed the cap of three, found at the fourth.", session("s", rem("continue", "k1"), rem("continue", "k2"), rem("continue", "k3"), rem("continue", "k4")), [][]int{{4}}},
		{"Three reminders of one kind with distinct keys are within the cap.", session("s", rem("continue", "k1"), rem("continue", "k2"), rem("continue", "k3")), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := catalogDetector(t, "phantom_user_message")
			got := d.Session(tc.s, Settings(nil).params(d))
			var ls [][]int
			for _, f := range got {
				ls = append(ls, lines(f))
			}
			if !slices.EqualFunc(ls, tc.lines, slices.Equal[[]int]) {
				t.Errorf("findings at %v, want %v: %+v", ls, tc.lines, got)
			}
		})
	}
}

func TestPendingAsMissingLeavesHonestAnswersAndMadeUpToolsAlone(t *testing.T) {
	start := &trajectory.SessionStart{Tools: []trajectory.ToolInfo{{Name: "read"}, {Name: "mcp__gh__issues", Deferred: true}}}
	fail := func(tool, code string) *trajectory.ToolFailure {
		return &trajectory.ToolFailure{ToolRef: trajectory.ToolRef{ToolUseID: "t1", Tool: tool}, FailureKind: trajectory.FailureNotFound, ErrorCode: code}
	}
	offer := func(names ...string) *trajectory.ModelRequest { return &trajectory.ModelRequest{ToolNames: names} }
	for _, tc := range []struct {
		name string
		s    *Session
		want int
	}{
		{"A late tool answered unknown_tool and offered later is found.", session("s", start, fail("mcp__notes__echo", "unknown_tool"), offer("read", "mcp__notes__echo")), 1},
		{"A late tool answered pending is the honest answer.", session("s", start, fail("mcp__notes__echo", "pending"), offer("read", "mcp__notes__echo")), 0},
		{"A result text saying the server is connecting is the honest answer too.", session("s", start, fail("mcp__notes__echo", ""),
			&trajectory.ToolResult{ToolRef: trajectory.ToolRef{ToolUseID: "t1", Tool: "mcp__notes__echo"}, Text: "MCP servers notes are still connecting."}, offer("mcp__notes__echo")), 0},
		{"A deferred tool of the starting catalog answered not_loaded is the deferred path.", session("s", start, fail("mcp__gh__issues", "not_loaded"), offer("read", "mcp__gh__issues")), 0},
		{"A late server's tool answered not_loaded was told it exists.", session("s", start, fail("mcp__notes__echo", "not_loaded"), offer("read", "mcp__notes__echo")), 0},
		{"A made-up tool that never shows up is not pending.", session("s", start, fail("read_file", "unknown_tool"), offer("read")), 0},
		{"A tool of a server the request lists as pending, answered unknown_tool, is found even if it never shows up.",
			session("s", start, &trajectory.ModelRequest{ToolNames: []string{"read"}, PendingSources: []string{"my notes"}}, fail("mcp__my_notes__echo", "unknown_tool")), 1},
		{"A pending server that is not the tool's does not make its unknown answer wrong.",
			session("s", start, &trajectory.ModelRequest{ToolNames: []string{"read"}, PendingSources: []string{"github"}}, fail("mcp__notes__echo", "unknown_tool")), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := catalogDetector(t, "pending_as_missing")
			got := d.Session(tc.s, Settings(nil).params(d))
			if len(got) != tc.want {
				t.Fatalf("%d findings, want %d: %+v", len(got), tc.want, got)
			}
			for _, f := range got {
				observed := tc.s.Events[1].Type() == trajectory.TypeModelRequest
				if want := map[bool]Severity{true: SeverityError, false: SeverityWarning}[observed]; f.Severity != want {
					t.Errorf("severity %s, want %s (observed pending: %v)", f.Severity, want, observed)
				}
			}
		})
	}
}

// catalogDetector returns the catalog's detector id.
func catalogDetector(t *testing.T, id string) Detector {
	t.Helper()
	ds, err := Select([]string{id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ds[0]
}

// A read of a file the frozen git status lists, failing with ENOENT, is
// an info finding at the call; a file the snapshot lists as deleted, or
// one it does not list, is not.
func TestStaleSnapshotReportsACallOnAListedFileThatIsGone(t *testing.T) {
	start := &trajectory.SessionStart{SystemPrompt: "Agent.\n\ngit status at start:\n?? notes.txt\n D old.go\n"}
	read := func(id, path string) *trajectory.ToolCall {
		return &trajectory.ToolCall{ToolRef: trajectory.ToolRef{ToolUseID: id, Tool: "read"}, Input: []byte(`{"file_path":"` + path + `"}`)}
	}
	enoent := func(id string) *trajectory.ToolFailure {
		return &trajectory.ToolFailure{ToolRef: trajectory.ToolRef{ToolUseID: id, Tool: "read"}, FailureKind: trajectory.FailureToolError, ErrorCode: "ENOENT"}
	}
	for _, tc := range []struct {
		name  string
		s     *Session
		lines []int
	}{
		{"A listed file read by its absolute path and gone is found at the call, the failure and the snapshot.", session("s", start, read("t1", "/ws/notes.txt"), enoent("t1")), []int{2, 3, 1}},
		{"A file the snapshot lists as deleted is expected to be gone.", session("s", start, read("t1", "old.go"), enoent("t1")), nil},
		{"A file the snapshot does not list says nothing about it.", session("s", start, read("t1", "other.txt"), enoent("t1")), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := catalogDetector(t, "stale_snapshot")
			got := d.Session(tc.s, Settings(nil).params(d))
			if tc.lines == nil {
				if len(got) != 0 {
					t.Errorf("findings %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Severity != SeverityInfo || got[0].ToolUseID != "t1" || !slices.Equal(lines(got[0]), tc.lines) {
				t.Errorf("findings %+v, want one info about t1 at lines %v", got, tc.lines)
			}
		})
	}
}

// The parsers of prompt and result text never panic, and what they return
// holds: snapshot entries are status letters, a space and a path, and a
// block that holds the text is judged without a panic whatever tags
// surround it.
func FuzzStateParsers(f *testing.F) {
	f.Add("Agent.\ngit status:\n M a.go\n?? b\n", "<harness-reminder>x</harness-reminder>", "x")
	f.Add("gitStatus\n\n R  a -> b\n", "<system-reminder a='1'>x", "x")
	f.Add("", "<<>></>x<", "<")
	f.Fuzz(func(t *testing.T, prompt, block, text string) {
		lines, _ := gitStatusIn(prompt)
		for _, l := range append(lines, statusLines(prompt)...) {
			code, path, ok := strings.Cut(l, " ")
			if !ok || code == "" || strings.Trim(code, "MTADRCU?!") != "" || strings.TrimSpace(path) == "" {
				t.Fatalf("%q is not a status entry (letters, a space, a path)", l)
			}
		}
		_ = describeStatus(lines)
		if text != "" && strings.Contains(block, text) {
			_ = labelled(block, text)
		}
	})
}

func TestCacheBreakerTellsBreakersFromTheRuntimesOwnChanges(t *testing.T) {
	req := func(system, tools string, names []string, msgs ...string) *trajectory.ModelRequest {
		return &trajectory.ModelRequest{SystemHash: system, ToolsHash: tools, ToolNames: names, MessageHashes: msgs}
	}
	base := []string{"read", "bash"}
	drop := &trajectory.Compaction{Strategy: trajectory.CompactDrop}
	// v2 encodes each list as the change since the list before it, as a
	// v 2 writer records it (messages_kept, the hashes after them).
	v2 := func(lists ...[]string) []*trajectory.ModelRequest {
		var enc trajectory.Conversation
		var out []*trajectory.ModelRequest
		for _, l := range lists {
			r := req("s1", "t1", base)
			enc.Encode(r, l)
			out = append(out, r)
		}
		return out
	}
	grows := v2([]string{"m1"}, []string{"m1", "m2"})
	rewrites := v2([]string{"m1", "m2"}, []string{"m1", "m2x", "m3"})
	for _, tc := range []struct {
		name  string
		s     *Session
		lines [][]int
	}{
		{"Requests that only append messages break nothing.", session("s", req("s1", "t1", base, "m1"), req("s1", "t1", base, "m1", "m2")), nil},
		{"A changed system prompt is found at the request and the one before.", session("s", req("s1", "t1", base, "m1"), req("s2", "t1", base, "m1", "m2")), [][]int{{2, 1}}},
		{"A deferred tool appended at the end is the runtime's design.", session("s", req("s1", "t1", base, "m1"), req("s1", "t2", append(base, "mcp__x__y"), "m1", "m2")), nil},
		{"Tools sent in another order are found.", session("s", req("s1", "t1", base, "m1"), req("s1", "t2", []string{"bash", "read"}, "m1", "m2")), [][]int{{2, 1}}},
		{"A message already sent that changed with no compaction is found.", session("s", req("s1", "t1", base, "m1", "m2"), req("s1", "t1", base, "m1", "m2x", "m3")), [][]int{{2, 1}}},
		{"A compaction between rewrites messages legitimately.", session("s", req("s1", "t1", base, "m1", "m2"), drop, req("s1", "t1", base, "m1", "m2x", "m3")), nil},
		{"v2: requests that keep every message break nothing.", session("s", grows[0], grows[1]), nil},
		{"v2: a request that keeps fewer messages than were sent, with no compaction, is found.", session("s", rewrites[0], rewrites[1]), [][]int{{2, 1}}},
		{"v2: with a compaction between, keeping fewer is legitimate.", session("s", rewrites[0], drop, rewrites[1]), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := catalogDetector(t, "cache_breaker")
			got := d.Session(tc.s, Settings(nil).params(d))
			var ls [][]int
			for _, f := range got {
				ls = append(ls, lines(f))
				if f.Severity != SeverityWarning {
					t.Errorf("severity %s, want warning", f.Severity)
				}
			}
			if !slices.EqualFunc(ls, tc.lines, slices.Equal[[]int]) {
				t.Errorf("findings at %v, want %v: %+v", ls, tc.lines, got)
			}
		})
	}
}
