package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/synth"
)

func TestSynthWritesACorpusThatValidatesAndFeedsTheMetrics(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "corpus")
	code, stdout, stderr := runCLI(t, nil, "synth", "--sessions", "60", "--out", dir)
	if code != ExitOK || stdout != "" || !strings.HasPrefix(stderr, "wrote 60 sessions, ") || !strings.Contains(stderr, " to "+dir+" in ") {
		t.Fatalf("synth: exit %d, stdout %q, stderr %q; want 0 and a one-line summary on stderr", code, stdout, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 60 {
		t.Fatalf("%d files written, want 60", len(files))
	}
	if code, stdout, stderr := runCLI(t, nil, "validate", dir); code != ExitOK || stdout != "" {
		t.Fatalf("validate: exit %d, stdout %q, stderr %q; want 0 and no problems", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, nil, "metrics", dir, "--metric", "all")
	if code != ExitOK || !strings.Contains(stdout, "== funnel ==") || !strings.Contains(stdout, "tool_error") {
		t.Fatalf("metrics: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}

func TestSynthJSONSummaryMatchesWhatWasWritten(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, nil, "synth", "--sessions", "12", "--out", dir, "--seed", "9", "--start", "2027-02-01", "--days", "3", "--format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var doc synthJSON
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	lines := 0
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	var size int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += strings.Count(string(b), "\n")
		size += int64(len(b))
	}
	if doc.Sessions != 12 || doc.Seed != 9 || doc.Dir != dir || doc.Events != int64(lines) || doc.Bytes != size || doc.ToolCalls == 0 {
		t.Fatalf("summary %+v; the directory holds %d files, %d lines, %d bytes", doc, len(files), lines, size)
	}
	if !strings.HasPrefix(doc.FirstStart, "2027-02-01") || doc.LastStart > "2027-02-04" {
		t.Fatalf("sessions start from %s to %s, want within 3 days from 2027-02-01", doc.FirstStart, doc.LastStart)
	}
}

func TestSynthRefusesADirectoryWithRunsUnlessForced(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, nil, "synth", "--sessions", "3", "--out", dir); code != ExitOK {
		t.Fatalf("first write: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr := runCLI(t, nil, "synth", "--sessions", "3", "--out", dir, "--seed", "2")
	if code != ExitInvalid || !strings.Contains(stderr, "already holds") || !strings.Contains(stderr, "--force") {
		t.Fatalf("second write: exit %d, stderr %q; want 2, saying the directory holds runs and how to write anyway", code, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "synth", "--sessions", "3", "--out", dir, "--seed", "2", "--force"); code != ExitOK {
		t.Fatalf("forced write: exit %d, stderr %q", code, stderr)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl")); len(files) != 6 {
		t.Fatalf("%d files after two corpora of 3, want 6", len(files))
	}
}

func TestSynthRejectsBadFlagsWithExitTwo(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a corpus needs a directory to go to", []string{"synth"}, "--out is required"},
		{"zero sessions is no corpus", []string{"synth", "--out", out, "--sessions", "0"}, "at least 1 session"},
		{"the sessions must spread over at least a day", []string{"synth", "--out", out, "--days", "0"}, "at least 1 day"},
		{"a start that is not a date is named", []string{"synth", "--out", out, "--start", "yesterday"}, `--start "yesterday"`},
		{"an output path that is a file is refused", []string{"synth", "--out", file}, "is a file"},
		{"positional arguments are not taken", []string{"synth", "--out", out, "extra"}, "unknown command"},
		{"an unknown format names the known ones", []string{"synth", "--out", out, "--format", "yaml"}, "[text json]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, nil, tc.args...)
			if code != ExitInvalid || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
	if files, _ := filepath.Glob(filepath.Join(out, "*")); len(files) != 0 {
		t.Fatalf("rejected commands wrote %v", files)
	}
}

// synth --faults all writes the ground truth next to the corpus, and
// retrace detect, run through the CLI over that directory, finds every
// planted fault at its file, line and seq, exits 3 for them, and reports
// nothing unplanted at warning or error.
func TestSynthFaultsAreWhatDetectFinds(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, nil, "synth", "--sessions", "120", "--out", dir, "--faults", "all", "--format", "json")
	if code != ExitOK || !strings.Contains(stderr, "the ground truth is in "+filepath.Join(dir, synth.FaultsFile)) {
		t.Fatalf("synth: exit %d, stderr %q", code, stderr)
	}
	var doc synthJSON
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, synth.FaultsFile))
	if err != nil {
		t.Fatal(err)
	}
	type place struct {
		detector, file string
		line           int
		seq            int64
		call           string
	}
	planted := map[place]bool{}
	kinds := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var f synth.Fault
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatalf("%s: %v: %s", synth.FaultsFile, err, l)
		}
		planted[place{f.Detector, f.File, f.Line, f.Seq, f.ToolUseID}] = true
		kinds[f.Detector] = true
	}
	if doc.Faults != len(planted) || len(kinds) != len(synth.Faults) {
		t.Fatalf("summary says %d faults, %s holds %d of %d kinds, want all %d", doc.Faults, synth.FaultsFile, len(planted), len(kinds), len(synth.Faults))
	}
	code, stdout, stderr = runCLI(t, nil, "detect", dir, "--format", "json")
	if code != ExitGate {
		t.Fatalf("detect: exit %d, want %d for the planted errors; stderr %q", code, ExitGate, stderr)
	}
	var rep detectors.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	found := map[place]bool{}
	for _, f := range rep.Findings {
		e := f.Evidence[0]
		p := place{f.Detector, filepath.Base(e.File), e.Line, e.Seq, f.ToolUseID}
		switch {
		case planted[p]:
			found[p] = true
		case f.Severity != detectors.SeverityInfo:
			t.Errorf("unplanted %s %s at %s:%d: %s", f.Severity, f.Detector, p.file, p.line, f.Message)
		}
	}
	for p := range planted {
		if !found[p] {
			t.Errorf("planted %s at %s:%d (seq %d) not found", p.detector, p.file, p.line, p.seq)
		}
	}
}

func TestSynthRejectsAnUnknownFaultWithExitTwo(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI(t, nil, "synth", "--sessions", "10", "--out", dir, "--faults", "lost_call,dead_defence")
	if code != ExitInvalid || !strings.Contains(stderr, `"dead_defence" is not a fault synth plants`) {
		t.Fatalf("exit %d, stderr %q; want 2 naming the unknown fault", code, stderr)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*")); len(files) != 0 {
		t.Fatalf("wrote %v for a refused command", files)
	}
}

func TestWrapListKeepsLinesWithinTheWidth(t *testing.T) {
	got := wrapList([]string{"lost_call", "unpaired_tool_use", "denial_loop", "x"}, 24, "  ")
	want := "  lost_call,\n  unpaired_tool_use,\n  denial_loop, x"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
