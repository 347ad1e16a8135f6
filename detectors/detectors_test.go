package detectors

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/synth"
)

// loaded opens a new database, closed when the test ends, and loads paths
// into it strictly.
func loaded(t testing.TB, paths ...string) *metrics.DB {
	t.Helper()
	db, err := metrics.Open(context.Background(), metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Load(context.Background(), paths...); err != nil {
		t.Fatal(err)
	}
	return db
}

// detect loads paths into a new database, strictly, and runs ds over them.
func detect(t testing.TB, ds []Detector, paths ...string) Report {
	t.Helper()
	rep, err := Run(context.Background(), loaded(t, paths...), ds, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func lines(f Finding) []int {
	var out []int
	for _, e := range f.Evidence {
		out = append(out, e.Line)
	}
	return out
}

// Every detector fires on its must-fire fixture, with its id, severity,
// call and evidence lines, and no detector at all fires on the clean
// session that looks like it.
func TestEveryDetectorFiresOnItsFixtureAndNoneOnTheCleanOne(t *testing.T) {
	for _, tc := range []struct {
		name     string
		id       string
		severity Severity
		call     string
		lines    []int
	}{
		{"A read whose success and end were never recorded is a lost call.", "lost_call", SeverityError, "toolu_read", []int{5}},
		{"A grep whose tool_result the next request dropped is an unpaired tool_use.", "unpaired_tool_use", SeverityError, "toolu_grep", []int{20}},
		{"A read cut off by max_tokens that ran anyway is found at the reply, the call and the success.", "truncated_tool_use_executed", SeverityError, "toolu_cut", []int{4, 5, 7}},
		{"A reply without a stop reason that ended the session as end_turn is stop_reason_as_done.", "stop_reason_as_done", SeverityError, "", []int{4, 5}},
		{"An end_turn reply whose read never ran is end_turn_with_tool_use.", "end_turn_with_tool_use", SeverityError, "toolu_read", []int{4, 5}},
		{"A call of read_file, answered not_found, is a hallucinated tool at info.", "hallucinated_tool", SeverityInfo, "toolu_bad", []int{4, 5, 6}},
		{"Five empty-input replies in a row exceed the cap of three.", "empty_input_retry", SeverityError, "toolu_e1", []int{4, 8, 12, 16, 20}},
		{"Three parallel calls reporting the same duration are flattened latency.", "latency_flattened", SeverityWarning, "toolu_ls", []int{10, 13, 16}},
		{"The same bash call denied three times with no fuse is a denial loop.", "denial_loop", SeverityWarning, "toolu_mock_1_1", []int{7, 15, 23}},
		{"An error code that carries the missing file's path is an unbounded label.", "unbounded_label", SeverityWarning, "toolu_missing", []int{24}},
		{"Three empty-input replies with the empty-input retry enabled and no trigger are a dead defense.", "dead_defense", SeverityWarning, "", []int{4, 7, 10}},
		{"Five reads of the same file with the same text and the guard off are a repeated read-only call, found at all five.", "repeated_readonly", SeverityWarning, "toolu_r1", []int{5, 12, 19, 26, 33}},
		{"A denial fuse that recorded a trigger at each of its three denials counts decisions, found at the three triggers.", "decision_counted_as_trigger", SeverityWarning, "toolu_mock_1_1", []int{8, 17, 26}},
		{"Half of bash's calls denied make its success rate 50% of requested and 100% of executed calls, found at the denials.", "denominator_shift", SeverityInfo, "toolu_t1", []int{17, 21, 25, 29, 33, 37, 41, 45}},
		{"A spilled output read back three times with bash, each read spilled to the same blob, is a closed spill loop at error.", "spill_read_loop", SeverityError, "toolu_seq", []int{8, 12, 19, 26}},
		{"A deferred read_many next to the resident read, listed in the system prompt without a label, is a prefix collapse risk.", "prefix_collapse_risk", SeverityWarning, "", []int{1, 3}},
		{"The same grep -c returning 2 four turns in a row with the defense off is a low-yield spin, found at the four calls.", "low_yield_spin", SeverityWarning, "toolu_c1", []int{5, 12, 19, 28}},
		{"A grep that found nothing, answered with an empty tool_result the next request carried, is an unexplained empty output.", "empty_output_unexplained", SeverityError, "toolu_grep", []int{9, 7, 8, 10}},
		{"A truncated grep whose result is the bare head of its output is an unannounced truncation.", "truncation_unannounced", SeverityWarning, "toolu_big", []int{9, 8}},
		{"A read a hook redirected, whose result lost the executor's notice, is a silent input change.", "hook_changed_input_silently", SeverityWarning, "toolu_hooked", []int{6, 10}},
		{"Thirteen requests whose context grows quadratically with no compaction are a context runaway.", "context_runaway", SeverityWarning, "", []int{88, 4, 46}},
		{"A frozen git status listing two changed paths, contradicted by a clean git status run three times, is a stale snapshot.", "stale_snapshot", SeverityWarning, "toolu_g1", []int{5, 1, 12, 19}},
		{"A repeated-readonly reminder sent without its harness tag is a phantom user message.", "phantom_user_message", SeverityWarning, "", []int{25, 26}},
		{"A catalog that defines read twice, with two definition hashes, is definition drift at error.", "definition_drift", SeverityError, "", []int{1}},
		{"A tool answered unknown_tool and offered two turns later was pending, not missing.", "pending_as_missing", SeverityWarning, "toolu_early", []int{6, 8, 16}},
		{"A system prompt changed from the third request on breaks the cache, found at that request and the one before.", "cache_breaker", SeverityWarning, "", []int{17, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := detect(t, Catalog(), filepath.Join("testdata", "fire", tc.id+".jsonl"))
			var got []Finding
			for _, f := range rep.Findings {
				if f.Detector == tc.id {
					got = append(got, f)
				}
			}
			if len(got) != 1 {
				t.Fatalf("%d findings of %s, want 1; all findings: %+v", len(got), tc.id, rep.Findings)
			}
			f := got[0]
			if f.Severity != tc.severity || f.ToolUseID != tc.call || !slices.Equal(lines(f), tc.lines) {
				t.Errorf("finding %s at %s, call %q, lines %v; want %s, call %q, lines %v\n%s",
					f.Detector, f.Severity, f.ToolUseID, lines(f), tc.severity, tc.call, tc.lines, f.Message)
			}
			if f.Message == "" || f.NextStep == "" || f.Title == "" || f.Session == "" {
				t.Errorf("finding lacks a message, next step, title or session: %+v", f)
			}
			for _, e := range f.Evidence {
				if e.File != filepath.Join("testdata", "fire", tc.id+".jsonl") || e.Seq < 1 || e.Type == "" {
					t.Errorf("evidence %+v does not locate an event of the fixture", e)
				}
			}
			clean := detect(t, Catalog(), filepath.Join("testdata", "clean", tc.id+".jsonl"))
			if len(clean.Findings) != 0 {
				t.Errorf("the clean fixture has findings: %+v", clean.Findings)
			}
			if clean.Sessions != 1 || clean.Events == 0 {
				t.Errorf("the clean fixture was read as %d sessions, %d events", clean.Sessions, clean.Events)
			}
		})
	}
}

// Every detector of the catalog has a fixture pair, and the catalog's ids
// are unique snake_case with a documented seed section.
func TestTheCatalogIsDocumentedAndCovered(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Catalog() {
		in := d.Info()
		if seen[in.ID] {
			t.Errorf("id %s appears twice", in.ID)
		}
		seen[in.ID] = true
		for _, r := range in.ID {
			if (r < 'a' || r > 'z') && r != '_' {
				t.Errorf("id %q is not snake_case", in.ID)
				break
			}
		}
		if !in.Severity.Valid() || in.Title == "" || in.About == "" || in.NextStep == "" {
			t.Errorf("detector %s is not fully documented: %+v", in.ID, in)
		}
		for _, kind := range []string{"fire", "clean"} {
			p := filepath.Join("testdata", kind, in.ID+".jsonl")
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		}
		if sd, ok := d.(*sqlDetector); ok {
			if q, err := sd.SQL(); err != nil || q == "" {
				t.Errorf("detector %s has no query: %v", in.ID, err)
			}
		}
	}
}

func TestSelectKeepsTheCatalogOrderAndRefusesUnknownIDs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		only, skip []string
		want       string
		bad        bool
	}{
		{"No --only and no --skip select every detector.", nil, nil, fmt.Sprint(len(catalog)), false},
		{"--only keeps the catalog's order, not the flag's.", []string{"denial_loop", "lost_call"}, nil, "[lost_call denial_loop]", false},
		{"--skip leaves the named detector out.", []string{"lost_call", "denial_loop"}, []string{"lost_call"}, "[denial_loop]", false},
		{"An unknown id is an error naming the known ones.", []string{"lost_calls"}, nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := Select(tc.only, tc.skip)
			if tc.bad {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, d := range ds {
				ids = append(ids, d.Info().ID)
			}
			got := fmt.Sprint(ids)
			if tc.only == nil {
				got = fmt.Sprint(len(ids))
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// A clean synthetic corpus, realistic sessions with parallel batches,
// compactions, denials, retries and hallucinated tools answered
// not_found, gets no finding at warning or above: a detector that fires
// on healthy sessions is noise.
func TestACleanSynthCorpusHasNoWarningOrError(t *testing.T) {
	dir := t.TempDir()
	if _, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 300, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	rep := detect(t, Catalog(), dir)
	if rep.Sessions != 300 {
		t.Fatalf("read %d sessions, want 300", rep.Sessions)
	}
	for _, f := range rep.Findings {
		if f.Severity.Rank() >= SeverityWarning.Rank() {
			t.Errorf("%s %s at %s:%d: %s", f.Severity, f.Detector, f.File(), f.Line(), f.Message)
		}
	}
}
