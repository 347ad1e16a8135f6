package trajectory

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestEveryValidFixtureHasNoProblems(t *testing.T) {
	files, err := Expand("testdata/valid")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 6 {
		t.Fatalf("found %d valid fixtures, want at least 6", len(files))
	}
	for _, f := range files {
		rep, err := ValidateFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Problems {
			t.Errorf("%v", p)
		}
		if rep.Events == 0 {
			t.Errorf("%s: decoded no events", f)
		}
	}
}

func TestTornLastLineIsAWarningAndKeepsTheEventsBeforeIt(t *testing.T) {
	rep, err := ValidateFile("testdata/valid/torn_last_line.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 || rep.Events != 10 {
		t.Fatalf("got %d problems and %d events, want 0 and 10", len(rep.Problems), rep.Events)
	}
	if len(rep.Warnings) == 0 || !strings.Contains(rep.Warnings[0].String(), "torn_last_line.jsonl:11: warning: last line is torn") {
		t.Fatalf("warnings = %v, want the torn line 11 first", rep.Warnings)
	}
}

// Each invalid fixture breaks one rule; the first problem reported must be
// that rule, at that line.
func TestEveryInvalidFixtureNamesItsProblemAtItsLine(t *testing.T) {
	tests := []struct {
		file string
		line int
		// want is the violation kind or the sentinel of the first problem.
		kind     ViolationKind
		sentinel error
		text     string
	}{
		{file: "seq_gap", line: 5, kind: ViolationSeq, text: "seq jumps from 4 to 6"},
		{file: "seq_repeated", line: 6, kind: ViolationSeq, text: "seq 5 after 5"},
		{file: "missing_seq", line: 4, sentinel: ErrMissingField, text: `field "seq"`},
		{file: "malformed_json", line: 5, sentinel: ErrMalformed, text: "invalid JSON"},
		{file: "unknown_version", line: 1, sentinel: ErrUnsupportedVersion, text: "got 9"},
		{file: "unknown_event_type", line: 5, sentinel: ErrUnknownValue, text: `"permission_maybe"`},
		{file: "unknown_failure_kind", line: 6, sentinel: ErrUnknownValue, text: `"crashed"`},
		{file: "unknown_field", line: 7, sentinel: ErrMalformed, text: `field "duration"`},
		{file: "missing_session_start", line: 1, kind: ViolationSessionStart, text: "first event is model_request"},
		{file: "event_after_session_end", line: 12, kind: ViolationSessionEnd, text: "after session_end"},
		{file: "lost_call", line: 4, kind: ViolationOutcome, text: "the call was lost"},
		{file: "double_outcome", line: 7, kind: ViolationOutcome, text: "already has an outcome"},
		{file: "missing_tool_end", line: 4, kind: ViolationToolEnd, text: "never got a tool_end"},
		{file: "missing_tool_result", line: 8, kind: ViolationToolResult, text: "got no tool_result before the next model_request"},
		{file: "orphan_tool_result", line: 8, kind: ViolationToolResult, text: "toolu_99"},
		{file: "label_is_a_path", line: 6, sentinel: ErrMalformed, text: "want a label"},
		{file: "totals_mismatch", line: 11, kind: ViolationTotals, text: "counts 3 tool calls"},
		{file: "torn_middle_line", line: 4, sentinel: ErrMalformed, text: "invalid JSON"},
		{file: "denied_call_with_duration", line: 8, kind: ViolationRan, text: "a call that did not run has no duration"},
		{file: "error_code_carries_data", line: 18, kind: ViolationErrorCode, text: `"exit:1:20261130-091500" of toolu_14 is outside the closed format`},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "invalid", tt.file+".jsonl")
			rep, err := ValidateFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Problems) == 0 {
				t.Fatalf("%s: no problem reported", path)
			}
			first := rep.Problems[0]
			wantPrefix := path + ":" + strconv.Itoa(tt.line) + ": "
			if !strings.HasPrefix(first.Error(), wantPrefix) || !strings.Contains(first.Error(), tt.text) {
				t.Fatalf("first problem = %q, want prefix %q containing %q", first, wantPrefix, tt.text)
			}
			var v Violation
			switch {
			case tt.sentinel != nil && !errors.Is(first, tt.sentinel):
				t.Fatalf("first problem %q does not wrap %v", first, tt.sentinel)
			case tt.kind != "" && (!errors.As(first, &v) || v.Kind != tt.kind):
				t.Fatalf("first problem %q is not a %s violation", first, tt.kind)
			}
		})
	}
	files, _ := filepath.Glob("testdata/invalid/*.jsonl")
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".jsonl"); !covered[name] {
			t.Errorf("invalid fixture %s has no expectation in this test", name)
		}
	}
}
