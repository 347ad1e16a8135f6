package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/results"
)

// metricScenario is a scenario whose model reads README.md twice and runs
// a bash command that fails, with the thresholds given.
func metricScenario(t testing.TB, repeat int, thresholds ...string) *Scenario {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `-- scenario.yaml --
name: metric
prompt: Read twice.
repeat: %d
config:
  permissions: {mode: bypass}
model:
  turns:
    - content: [{tool_use: {name: read, input: {file_path: README.md}}}, {tool_use: {name: bash, input: {command: "false"}}}]
    - content: [{tool_use: {name: read, input: {file_path: README.md}}}]
    - content: [{text: Done.}]
expect:
  metrics:
`, repeat)
	for _, th := range thresholds {
		fmt.Fprintf(&b, "    - %q\n", th)
	}
	b.WriteString("-- workspace/README.md --\nA project.\n")
	s, err := Parse([]byte(b.String()), "metric.txtar")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestThresholdsAreCheckedOverAllOfAScenariosRuns(t *testing.T) {
	cases := []struct {
		name, threshold string
		repeat          int
		verdict         results.Verdict
		got             string
	}{
		{"a count over every run passes", "count(tool_call, tool=read) >= 4", 2, results.VerdictPass, "4 tool_call events with tool=read over 2 runs"},
		{"a count the runs do not reach fails", "count(tool_call, tool=read) > 4", 2, results.VerdictFail, "4 tool_call events with tool=read over 2 runs"},
		{"a failure rate names its denominator", "rate(failure, tool=bash) <= 0.1", 2, results.VerdictFail, "1: 2 of 2 bash calls (the denominator) failed, over 2 runs"},
		{"a rate over all calls counts every tool", "rate(success) >= 60%", 1, results.VerdictPass, "0.6667: 2 of 3 tool calls (the denominator) succeeded, over 1 run"},
		{"a rate without calls has no denominator and is inconclusive", "rate(failure, tool=grep) < 0.5", 1, results.VerdictInconclusive, "no grep calls over 1 run, so the rate has no denominator"},
		{"the mean of turns is per run", "mean(turns) <= 3", 2, results.VerdictPass, "mean of the turns of 2 runs is 3"},
		{"the most calls of a tool in a run is per run", "max(tool_calls, tool=read) == 1", 1, results.VerdictFail, "max of the counts of read calls of 1 run is 2"},
		{"a percentile over too few samples is inconclusive", "p95(bash) < 1m", 2, results.VerdictInconclusive, "p95 needs at least 20 samples, and 2 runs gave 2 (bash call durations)"},
		{"a median over enough samples decides", "p50(read) < 1m", 1, results.VerdictPass, "p50 of 2 read call durations over 1 run is"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := runSuite(t, []*Scenario{metricScenario(t, c.repeat, c.threshold)}, Options{})
			s := res.Scenarios[0]
			if len(s.Thresholds) != 1 {
				t.Fatalf("%d threshold results:\n%s", len(s.Thresholds), table(res))
			}
			tr := s.Thresholds[0]
			if tr.Verdict != c.verdict || !strings.Contains(tr.Got, c.got) {
				t.Errorf("got %s %q, want %s %q", tr.Verdict, tr.Got, c.verdict, c.got)
			}
			if want := "metric.txtar:14: expect.metrics[0]: " + c.threshold; tr.Expect != want {
				t.Errorf("Expect = %q, want %q", tr.Expect, want)
			}
			if s.Verdict != c.verdict || s.Passed != c.repeat {
				t.Errorf("the scenario is %s with %d runs passed, want %s with %d:\n%s", s.Verdict, s.Passed, c.verdict, c.repeat, table(res))
			}
		})
	}
}

func TestTooFewRunsForMinRunsIsInconclusiveAndSaysSo(t *testing.T) {
	s := metricScenario(t, 1, "mean(turns) <= 6")
	s.Expect.Metrics[0].MinRuns = 3
	res := runSuite(t, []*Scenario{s}, Options{})
	if res.Worst() != results.VerdictInconclusive {
		t.Fatalf("worst is %s:\n%s", res.Worst(), table(res))
	}
	out := table(res)
	for _, w := range []string{"INCONCLUSIVE metric  1/1 runs passed", "min_runs is 3 and 1 run recorded a session", ", 1 inconclusive, 0 errors"} {
		if !strings.Contains(out, w) {
			t.Errorf("the summary does not say %q:\n%s", w, out)
		}
	}
	res = runSuite(t, []*Scenario{s}, Options{Repeat: 3})
	if res.Worst() != results.VerdictPass {
		t.Errorf("three runs do not decide:\n%s", table(res))
	}
}

// TestAPercentileIsTheOneRetraceMetricsReports runs a scenario often
// enough for a p95 and checks that the threshold's value is the latency
// metric's over the same recordings.
func TestAPercentileIsTheOneRetraceMetricsReports(t *testing.T) {
	out := t.TempDir()
	res := runSuite(t, []*Scenario{metricScenario(t, 10, "p95(read) < 1m", "p50(bash) < 1m")}, Options{Out: out})
	s := res.Scenarios[0]
	if s.Verdict != results.VerdictPass {
		t.Fatalf("the scenario does not pass:\n%s", table(res))
	}
	ctx := context.Background()
	db, err := metrics.Open(ctx, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files, _ := filepath.Glob(filepath.Join(out, "runs", "*.jsonl"))
	if len(files) != 10 {
		t.Fatalf("%d recordings, want 10", len(files))
	}
	if _, err := db.Load(ctx, files...); err != nil {
		t.Fatal(err)
	}
	lat, err := db.Metric(ctx, "latency")
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, c := range lat.Columns {
		col[c] = i
	}
	want := map[string]float64{}
	for _, row := range lat.Rows {
		p95, _ := metrics.ValueNumber(row[col["p95_ms"]])
		p50, _ := metrics.ValueNumber(row[col["p50_ms"]])
		want[fmt.Sprint(row[col["tool"]])+" p95"], want[fmt.Sprint(row[col["tool"]])+" p50"] = p95, p50
	}
	for i, key := range []string{"read p95", "bash p50"} {
		tr := s.Thresholds[i]
		if tr.Value == nil || *tr.Value != want[key] {
			t.Errorf("%s: the threshold has %v, retrace metrics latency %v (%s)", key, tr.Value, want[key], tr.Got)
		}
	}
}

func TestAVerdictWeighsTheRunsAndTheThresholds(t *testing.T) {
	pass, fail := results.RunResult{}, results.RunResult{Failures: []results.Failure{{Expect: "x"}}}
	th := func(v results.Verdict) results.ThresholdResult { return results.ThresholdResult{Verdict: v} }
	cases := []struct {
		name       string
		runs       []results.RunResult
		thresholds []results.ThresholdResult
		want       results.Verdict
	}{
		{"passing runs and thresholds pass", []results.RunResult{pass, pass}, []results.ThresholdResult{th(results.VerdictPass)}, results.VerdictPass},
		{"a failed threshold fails runs that passed", []results.RunResult{pass, pass}, []results.ThresholdResult{th(results.VerdictPass), th(results.VerdictFail)}, results.VerdictFail},
		{"a failed threshold fails flaky runs: it is decided", []results.RunResult{pass, fail}, []results.ThresholdResult{th(results.VerdictFail)}, results.VerdictFail},
		{"an undecided threshold over passing runs is inconclusive", []results.RunResult{pass}, []results.ThresholdResult{th(results.VerdictInconclusive)}, results.VerdictInconclusive},
		{"flaky runs stay flaky beside an undecided threshold", []results.RunResult{pass, fail}, []results.ThresholdResult{th(results.VerdictInconclusive)}, results.VerdictFlaky},
		{"failed runs fail beside an undecided threshold", []results.RunResult{fail}, []results.ThresholdResult{th(results.VerdictInconclusive)}, results.VerdictFail},
		{"a run retrace could not run is an error whatever the thresholds", []results.RunResult{{Error: "boom"}}, []results.ThresholdResult{th(results.VerdictFail)}, results.VerdictError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := results.ScenarioResult{Runs: c.runs, Thresholds: c.thresholds}
			s.Decide()
			if s.Verdict != c.want {
				t.Errorf("verdict %s, want %s", s.Verdict, c.want)
			}
		})
	}
}

func TestAFailedThresholdPointsAtTheTrajectoryLineThatShowsIt(t *testing.T) {
	cases := []struct {
		name, threshold, event string
	}{
		{"a failure rate too high points at a failure", "rate(failure, tool=bash) <= 0.1", `"type":"tool_failure"`},
		{"a success rate too low points at a call that did not succeed", "rate(success) > 0.9", `"tool":"bash"`},
		{"a count points at the first event counted", "count(tool_call, tool=read) > 3", `"type":"tool_call"`},
		{"a duration points at the slowest call's end", "max(bash) < 0.001ms", `"type":"tool_end"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := runSuite(t, []*Scenario{metricScenario(t, 1, c.threshold)}, Options{Out: t.TempDir()})
			tr := res.Scenarios[0].Thresholds[0]
			if tr.Verdict != results.VerdictFail {
				t.Fatalf("the threshold did not fail: %+v", tr)
			}
			file, no, ok := strings.Cut(tr.At, ".jsonl:")
			if !ok {
				t.Fatalf("At = %q, want FILE.jsonl:LINE", tr.At)
			}
			data, err := os.ReadFile(file + ".jsonl")
			if err != nil {
				t.Fatal(err)
			}
			n, _ := strconv.Atoi(no)
			lines := strings.Split(string(data), "\n")
			if n < 1 || n > len(lines) || !strings.Contains(lines[n-1], c.event) {
				t.Errorf("line %d does not hold %s: %q", n, c.event, lines[max(min(n, len(lines))-1, 0)])
			}
		})
	}
}

// TestEveryCountFilterIsAColumnOfTheEventsView checks that each key
// count() accepts is a column the query can filter on, so that no
// threshold the parser accepts fails in DuckDB.
func TestEveryCountFilterIsAColumnOfTheEventsView(t *testing.T) {
	var ths []string
	for _, k := range countKeys {
		v := "x"
		if k == "failure_kind" {
			v = "timeout"
		}
		ths = append(ths, "count(tool_call, "+k+"="+v+") == 0")
	}
	res := runSuite(t, []*Scenario{metricScenario(t, 1, ths...)}, Options{})
	for i, tr := range res.Scenarios[0].Thresholds {
		if tr.Verdict != results.VerdictPass {
			t.Errorf("%s: %s %s", countKeys[i], tr.Verdict, tr.Got)
		}
	}
}

// TestAThresholdResultSaysWhatWasExpectedAndWhatCame runs a scenario
// whose threshold fails and one whose threshold is inconclusive: each
// result names the threshold where it is written and says the value (or
// why there is none), the words every renderer of results prints.
func TestAThresholdResultSaysWhatWasExpectedAndWhatCame(t *testing.T) {
	failing := metricScenario(t, 1, "rate(failure, tool=bash) <= 0.1")
	undecided := metricScenario(t, 1, "p95(bash) < 1m")
	undecided.Name, undecided.File = "undecided", "undecided.txtar"
	res := runSuite(t, []*Scenario{failing, undecided}, Options{})
	got := map[string]results.ThresholdResult{}
	for _, s := range res.Scenarios {
		if len(s.Thresholds) != 1 {
			t.Fatalf("%s: thresholds %+v, want one", s.Name, s.Thresholds)
		}
		got[s.Name] = s.Thresholds[0]
	}
	if tr := got[failing.Name]; tr.Verdict != results.VerdictFail ||
		tr.Expect != "metric.txtar:14: expect.metrics[0]: rate(failure, tool=bash) <= 0.1" ||
		tr.Got != "1: 1 of 1 bash calls (the denominator) failed, over 1 run" {
		t.Errorf("failing threshold: %+v", tr)
	}
	if tr := got["undecided"]; tr.Verdict != results.VerdictInconclusive ||
		tr.Expect != "metric.txtar:14: expect.metrics[0]: p95(bash) < 1m" ||
		!strings.HasPrefix(tr.Got, "inconclusive: p95 needs at least 20 samples") {
		t.Errorf("undecided threshold: %+v", tr)
	}
}
