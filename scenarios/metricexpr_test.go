package scenarios

import (
	"errors"
	"strings"
	"testing"
)

func TestParseThresholdReadsEveryForm(t *testing.T) {
	cases := []struct {
		name, src, canonical string
		limit                float64
	}{
		{"a tool's percentile is its calls' durations, in milliseconds", "p95(bash) < 2s", "p95(duration, tool=bash) < 2s", 2000},
		{"milliseconds stay milliseconds", "p50(read)<=250ms", "p50(duration, tool=read) <= 250ms", 250},
		{"minutes are converted", "max(model_duration) < 1.5m", "max(model_duration) < 1.5m", 90000},
		{"a rate takes a fraction", "rate(failure, tool=bash) <= 0.1", "rate(failure, tool=bash) <= 0.1", 0.1},
		{"a rate takes a percentage", "rate(denied) < 5%", "rate(denied) < 5%", 0.05},
		{"a failure rate narrows by failure kind", "rate(failure, tool=bash, failure_kind=timeout) == 0", "rate(failure, tool=bash, failure_kind=timeout) == 0", 0},
		{"count takes an event type and filters", "count(tool_call, tool=read) >= 2", "count(tool_call, tool=read) >= 2", 2},
		{"count filters on any listed column", "count(defense_trigger, defense=loop_detection, action=warn) != 1", "count(defense_trigger, defense=loop_detection, action=warn) != 1", 1},
		{"mean of turns is a plain number", "mean(turns) <= 6", "mean(turns) <= 6", 6},
		{"tool calls per run filter by tool", "min(tool_calls, tool=read) > 0", "min(tool_calls, tool=read) > 0", 0},
		{"spaces are optional and tabs count as spaces", "\tp99( duration ,tool = grep )<3s ", "p99(duration, tool=grep) < 3s", 3000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			th, err := ParseThreshold(c.src)
			if err != nil {
				t.Fatalf("ParseThreshold(%q): %v", c.src, err)
			}
			if got := th.String(); got != c.canonical {
				t.Errorf("String() = %q, want %q", got, c.canonical)
			}
			if th.Limit != c.limit {
				t.Errorf("Limit = %v, want %v", th.Limit, c.limit)
			}
			again, err := ParseThreshold(th.String())
			if err != nil || again.String() != th.String() || again.Limit != th.Limit {
				t.Errorf("the canonical form does not parse back: %v, %+v", err, again)
			}
		})
	}
}

func TestParseThresholdRefusesWithTheColumnOfEveryProblem(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"an empty threshold wants a function", "", []string{"col 1: want a function such as p95, rate or count, got the end"}},
		{"an unknown function is named", "p42(bash) < 2s", []string{`col 1: unknown function "p42"`}},
		{"a missing parenthesis is found", "p95 bash < 2s", []string{`col 5: want "(" after p95, got name "bash"`}},
		{"an unclosed call is found", "p95(bash < 2s", []string{`col 10: want "," or ")", got "<"`}},
		{"a missing comparison is found", "p95(bash) 2s", []string{"col 11: want a comparison: <, <=, >, >=, == or !=, got number \"2\""}},
		{"a single equals sign is not a comparison", "mean(turns) = 3", []string{`col 13: want a comparison: <, <=, >, >=, == or !=, got "="`}},
		{"a missing number is found", "p95(bash) <", []string{"col 12: want a number to compare with, got the end"}},
		{"trailing text is refused", "mean(turns) < 3 and more", []string{`col 17: want the end of the threshold, got name "and"`}},
		{"a stray character is quoted", "mean(turns) < 3 €", []string{`col 17: want the end of the threshold, got "€"`}},
		{"a duration needs a unit", "p95(bash) < 2", []string{"col 13: a duration needs a unit: ms, s or m"}},
		{"a duration refuses another unit", "p95(bash) < 2h", []string{`col 14: unknown unit "h"`}},
		{"a rate above one is refused", "rate(failure) <= 2", []string{"col 18: a rate is at most 1"}},
		{"a plain number takes no unit", "count(tool_call) > 2s", []string{`count(tool_call) is a plain number; drop the unit "s"`}},
		{"an unknown rate subject is named", "rate(failures) < 0.1", []string{"col 6: rate(failures): rate counts failure, success"}},
		{"count wants an event type", "count(tool_calls) > 1", []string{"col 7: count(tool_calls): count takes an event type"}},
		{"every bad filter is listed, not only the first", "rate(failure, tol=bash, failure_kind=oops, tool=read, tool=grep) < 0.1",
			[]string{`col 15: rate(failure): unknown filter "tol"`, "col 25: failure_kind=oops is not a failure kind", "col 55: filter tool is given twice"}},
		{"a failure kind only narrows a failure rate", "rate(success, failure_kind=timeout) > 0.5", []string{`unknown filter "failure_kind"; the filters are tool`}},
		{"turns take no filter", "mean(turns, tool=bash) < 3", []string{"col 13: mean(turns) takes no filter, got tool="}},
		{"a filter wants a value", "count(tool_call, tool=) > 1", []string{`col 23: want the value of tool, got ")"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseThreshold(c.src)
			if err == nil {
				t.Fatalf("ParseThreshold(%q) parsed", c.src)
			}
			if !errors.Is(err, ErrThreshold) {
				t.Errorf("the error does not wrap ErrThreshold: %v", err)
			}
			var es ExprErrors
			if !errors.As(err, &es) || len(es) < len(c.want) {
				t.Errorf("got %d problems, want at least %d: %v", len(es), len(c.want), err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestABadThresholdIsRefusedAtItsFileLineAndColumn(t *testing.T) {
	src := `-- scenario.yaml --
name: bad_metrics
prompt: Say done.
model: {turns: [{content: [{text: Done.}]}]}
expect:
  metrics:
    - p95(bash) < 2
    - "rate(failure, tol=bash) <= 0.1"
    - {threshold: "mean(turns) <= 6", min_runs: 0}
    - {min_runs: 2}
    - 3
    - mean(turns) <= 6
`
	_, err := Parse([]byte(src), "bad.txtar")
	var pe *ProblemsError
	if !errors.As(err, &pe) {
		t.Fatalf("a bad threshold parsed: %v", err)
	}
	for _, w := range []string{
		`bad.txtar:7:19: expect.metrics[0]: "p95(bash) < 2": a duration needs a unit`,
		`bad.txtar:8:22: expect.metrics[1]: "rate(failure, tol=bash) <= 0.1": rate(failure): unknown filter "tol"`,
		"bad.txtar:9: expect.metrics[2].min_runs must be at least 1",
		"bad.txtar:10: expect.metrics[3]: no threshold",
		"bad.txtar:11: expect.metrics[4] must be a threshold",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the problems do not say %q:\n%v", w, err)
		}
	}
	if len(pe.Problems) != 5 {
		t.Errorf("%d problems, want 5:\n%v", len(pe.Problems), err)
	}
}

// FuzzParseThreshold feeds arbitrary text to ParseThreshold: it must
// never panic, every error must have a column within the text (or just
// past it), and what parses must print a canonical form that parses to
// itself.
func FuzzParseThreshold(f *testing.F) {
	for _, s := range []string{
		"p95(bash) < 2s", "rate(failure, tool=bash) <= 0.1", "count(tool_call, tool=read) >= 2", "mean(turns) <= 6",
		"rate(denied) < 5%", "max(model_duration) < 1.5m", "p99( duration ,tool = grep )<3s", "p95(bash) < 2", "€", "(((",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		th, err := ParseThreshold(src)
		if err != nil {
			var es ExprErrors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %v is not a list of problems", err)
			}
			for _, e := range es {
				if e.Col < 1 || e.Col > len(src)+1 {
					t.Fatalf("column %d outside %q: %v", e.Col, src, e)
				}
			}
			return
		}
		again, err := ParseThreshold(th.String())
		if err != nil {
			t.Fatalf("the canonical form %q of %q does not parse: %v", th.String(), src, err)
		}
		if again.String() != th.String() {
			t.Fatalf("the canonical form changes: %q then %q", th.String(), again.String())
		}
	})
}

func TestACanonicalThresholdKeepsTheNumberAsWritten(t *testing.T) {
	th, err := ParseThreshold("p95(bash) < 1.1s")
	if err != nil {
		t.Fatal(err)
	}
	if th.String() != "p95(duration, tool=bash) < 1.1s" {
		t.Errorf("String() = %q: the number drifted through the unit conversion", th.String())
	}
	if _, err := ParseThreshold("p95(bash) < " + strings.Repeat("9", 308) + "m"); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("a limit that overflows in milliseconds: %v", err)
	}
}

// FuzzParseMetrics feeds Parse scenarios whose expect.metrics is mutated:
// it must never panic, and every problem must name the file and a line,
// with a column only beside a line.
func FuzzParseMetrics(f *testing.F) {
	head := "-- scenario.yaml --\nprompt: Say done.\nmodel: {turns: [{content: [{text: Done.}]}]}\nexpect:\n  metrics:\n"
	for _, m := range []string{
		"    - p95(bash) < 2s\n    - \"rate(failure, tool=bash) <= 0.1\"\n",
		"    - {threshold: \"mean(turns) <= 6\", min_runs: 5}\n",
		"    - |\n      count(tool_call) > 1\n",
		"    - 'p50(read) < 1ms'\n    - [1]\n    - *a\n",
	} {
		f.Add(head + m)
	}
	f.Fuzz(func(t *testing.T, src string) {
		_, err := Parse([]byte(src), "m.txtar")
		var pe *ProblemsError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error %v is not a list of problems", err)
		}
		if pe == nil {
			return
		}
		for _, p := range pe.Problems {
			if p.File != "m.txtar" || p.Line < 0 || p.Col < 0 || (p.Col > 0 && p.Line == 0) {
				t.Fatalf("problem %+v", p)
			}
		}
	})
}
