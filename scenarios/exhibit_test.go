package scenarios

import (
	"errors"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// recordingOf returns the recording section of a built-in exhibit.
func recordingOf(t *testing.T, file string) string {
	t.Helper()
	src := builtinSource(t, file)
	_, rec, ok := strings.Cut(src, "-- "+sectionRecording+" --\n")
	if !ok {
		t.Fatalf("%s has no %s section", file, sectionRecording)
	}
	return rec
}

func TestAnExhibitRefusesWhatOnlyARunHas(t *testing.T) {
	rec := recordingOf(t, "detector_lost_call_fires.txtar")
	cases := []struct {
		name, spec, extra, want string
	}{
		{"a prompt is refused, since no model runs", "prompt: Fix it.\nexpect: {detectors: {fire: {lost_call: 1}}}\n", "",
			"exhibit.txtar:3: prompt: an exhibit plays a recording, not a model"},
		{"a model script is refused", "model: {turns: [{content: [{text: Done.}]}]}\nexpect: {detectors: {fire: {lost_call: 1}}}\n", "",
			"exhibit.txtar:3: model: an exhibit plays a recording"},
		{"an outcome expectation is refused", "expect:\n  outcome: {reason: end_turn}\n", "",
			"exhibit.txtar:4: expect.outcome: an exhibit runs nothing"},
		{"a file expectation is refused", "expect:\n  files: [{path: a.txt, exists: true}]\n", "",
			"exhibit.txtar:4: a.txt: an exhibit has no workspace files to check"},
		{"a workspace file is refused", "expect: {detectors: {fire: {lost_call: 1}}}\n", "-- workspace/a.txt --\na\n",
			"workspace/a.txt: an exhibit has no workspace"},
		{"an exhibit that expects nothing is refused", "name: nothing\n", "",
			"an exhibit expects nothing"},
		{"a session in two recordings is refused", "expect: {detectors: {fire: {dead_defense: 1}}}\n", "-- recordings/b.jsonl --\n" + rec,
			"recordings/b.jsonl holds session "},
		{"event expectations over several recordings are refused", "expect:\n  events: [{event: tool_call}]\n", "-- recordings/b.jsonl --\n" + rec,
			"exhibit.txtar:4: expect.events[0]: the event expectations of an exhibit need one recording"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			section := "-- recording.jsonl --\n"
			if strings.Contains(c.extra, "recordings/") {
				section = "-- recordings/a.jsonl --\n"
			}
			src := "An exhibit.\n-- scenario.yaml --\n" + c.spec + section + rec + c.extra
			_, err := Parse([]byte(src), "exhibit.txtar")
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse accepted it (err %v)", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("the problems do not say %q:\n%v", c.want, err)
			}
		})
	}
}

func TestABrokenRecordingIsRefusedAtItsLineInTheArchive(t *testing.T) {
	rec := recordingOf(t, "detector_lost_call_fires.txtar")
	lines := strings.SplitAfter(rec, "\n")
	// The third event, at line 5 + 3 of the archive, is cut in half.
	lines[2] = lines[2][:len(lines[2])/2] + "\n"
	src := "An exhibit.\n-- scenario.yaml --\nexpect: {detectors: {fire: {lost_call: 1}}}\n-- recording.jsonl --\n" + strings.Join(lines, "")
	_, err := Parse([]byte(src), "exhibit.txtar")
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Parse accepted a broken recording (err %v)", err)
	}
	if !strings.HasPrefix(err.Error(), "exhibit.txtar:7: recording.jsonl: ") {
		t.Fatalf("the problem is not at the broken line 7 of the archive: %v", err)
	}
}

func TestACorpusDetectorIsRefusedOutsideAnExhibit(t *testing.T) {
	src := "-- scenario.yaml --\nprompt: Go.\nmodel: {turns: [{content: [{text: Done.}]}]}\nexpect: {detectors: {fire: {dead_defense: 1}}}\n"
	_, err := Parse([]byte(src), "run.txtar")
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "dead_defense judges a corpus") {
		t.Fatalf("a corpus detector in a run's expectations: err %v", err)
	}
}

// TestAnExhibitFailsWhenItsRecordingDoesNotShowWhatItExpects swaps the
// recordings of a must-fire and a must-not exhibit, for a detector that
// judges one session (the shared pass) and one that judges a corpus (a
// pass of its own), and checks that each fails naming its detector.
func TestAnExhibitFailsWhenItsRecordingDoesNotShowWhatItExpects(t *testing.T) {
	cases := []struct {
		name, fires, quiet string
	}{
		{"lost_call, judged in the shared pass", "detector_lost_call_fires.txtar", "detector_lost_call_quiet.txtar"},
		{"dead_defense, judged in a pass of its own", "detector_dead_defense_fires.txtar", "detector_dead_defense_quiet.txtar"},
	}
	var suite []*Scenario
	for _, c := range cases {
		fireRec, quietRec := recordingOf(t, c.fires), recordingOf(t, c.quiet)
		for _, swap := range []struct{ file, from, to string }{{c.fires, fireRec, quietRec}, {c.quiet, quietRec, fireRec}} {
			s, err := Parse([]byte(strings.Replace(builtinSource(t, swap.file), swap.from, swap.to, 1)), "swapped/"+swap.file)
			if err != nil {
				t.Fatal(err)
			}
			suite = append(suite, s)
		}
	}
	res := runSuite(t, suite, Options{Parallel: 2})
	if len(res.Scenarios) != 2*len(cases) {
		t.Fatalf("%d results for %d exhibits", len(res.Scenarios), 2*len(cases))
	}
	for _, s := range res.Scenarios {
		if s.Verdict != results.VerdictFail {
			t.Errorf("%s with the other recording: verdict %s, want fail:\n%s", s.Name, s.Verdict, table(res))
			continue
		}
		named := false
		for _, f := range s.Runs[0].Failures {
			named = named || strings.Contains(f.Expect, "expect.detectors: detector ") && strings.Contains(f.Expect, strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(s.Name, "detector_"), "_fires"), "_quiet"))
		}
		if !named {
			t.Errorf("%s: no failure names its detector: %+v", s.Name, s.Runs[0].Failures)
		}
	}
}

// TestTwoExhibitsOfOneSessionAreJudgedApart runs two exhibits that carry
// the same recording: one load refuses a session twice, so the second is
// judged in a pass of its own, and both pass.
func TestTwoExhibitsOfOneSessionAreJudgedApart(t *testing.T) {
	src := builtinSource(t, "detector_lost_call_fires.txtar")
	var suite []*Scenario
	for _, name := range []string{"first_copy", "second_copy"} {
		s, err := Parse([]byte(strings.Replace(src, "name: detector_lost_call_fires", "name: "+name, 1)), name+".txtar")
		if err != nil {
			t.Fatal(err)
		}
		suite = append(suite, s)
	}
	res := runSuite(t, suite, Options{Parallel: 1})
	for _, s := range res.Scenarios {
		if s.Verdict != results.VerdictPass || s.Runs[0].Findings["lost_call"] == 0 {
			t.Errorf("%s: verdict %s, findings %v, want a pass with lost_call found:\n%s", s.Name, s.Verdict, s.Runs[0].Findings, table(res))
		}
	}
}
