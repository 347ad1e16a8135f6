package scenarios

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/metrics"
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
		verdict         Verdict
		got             string
	}{
		{"a count over every run passes", "count(tool_call, tool=read) >= 4", 2, VerdictPass, "4 tool_call events with tool=read over 2 runs"},
		{"a count the runs do not reach fails", "count(tool_call, tool=read) > 4", 2, VerdictFail, "4 tool_call events with tool=read over 2 runs"},
		{"a failure rate names its denominator", "rate(failure, tool=bash) <= 0.1", 2, VerdictFail, "1: 2 of 2 bash calls (the denominator) failed, over 2 runs"},
		{"a rate over all calls counts every tool", "rate(success) >= 60%", 1, VerdictPass, "0.6667: 2 of 3 tool calls (the denominator) succeeded, over 1 run"},
		{"a rate without calls has no denominator and is inconclusive", "rate(failure, tool=grep) < 0.5", 1, VerdictInconclusive, "no grep calls over 1 run, so the rate has no denominator"},
		{"the mean of turns is per run", "mean(turns) <= 3", 2, VerdictPass, "mean of the turns of 2 runs is 3"},
		{"the most calls of a tool in a run is per run", "max(tool_calls, tool=read) == 1", 1, VerdictFail, "max of the counts of read calls of 1 run is 2"},
		{"a percentile over too few samples is inconclusive", "p95(bash) < 1m", 2, VerdictInconclusive, "p95 needs at least 20 samples, and 2 runs gave 2 (bash call durations)"},
		{"a median over enough samples decides", "p50(read) < 1m", 1, VerdictPass, "p50 of 2 read call durations over 1 run is"},
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
	if res.Worst() != VerdictInconclusive {
		t.Fatalf("worst is %s:\n%s", res.Worst(), table(res))
	}
	out := table(res)
	for _, w := range []string{"INCONCLUSIVE metric  1/1 runs passed", "min_runs is 3 and 1 run recorded a session", ", 1 inconclusive, 0 errors"} {
		if !strings.Contains(out, w) {
			t.Errorf("the summary does not say %q:\n%s", w, out)
		}
	}
	res = runSuite(t, []*Scenario{s}, Options{Repeat: 3})
	if res.Worst() != VerdictPass {
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
	if s.Verdict != VerdictPass {
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
	pass, fail := RunResult{}, RunResult{Failures: []Failure{{Expect: "x"}}}
	th := func(v Verdict) ThresholdResult { return ThresholdResult{Verdict: v} }
	cases := []struct {
		name       string
		runs       []RunResult
		thresholds []ThresholdResult
		want       Verdict
	}{
		{"passing runs and thresholds pass", []RunResult{pass, pass}, []ThresholdResult{th(VerdictPass)}, VerdictPass},
		{"a failed threshold fails runs that passed", []RunResult{pass, pass}, []ThresholdResult{th(VerdictPass), th(VerdictFail)}, VerdictFail},
		{"a failed threshold fails flaky runs: it is decided", []RunResult{pass, fail}, []ThresholdResult{th(VerdictFail)}, VerdictFail},
		{"an undecided threshold over passing runs is inconclusive", []RunResult{pass}, []ThresholdResult{th(VerdictInconclusive)}, VerdictInconclusive},
		{"flaky runs stay flaky beside an undecided threshold", []RunResult{pass, fail}, []ThresholdResult{th(VerdictInconclusive)}, VerdictFlaky},
		{"failed runs fail beside an undecided threshold", []RunResult{fail}, []ThresholdResult{th(VerdictInconclusive)}, VerdictFail},
		{"a run retrace could not run is an error whatever the thresholds", []RunResult{{Error: "boom"}}, []ThresholdResult{th(VerdictFail)}, VerdictError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ScenarioResult{Runs: c.runs, Thresholds: c.thresholds}
			s.decide()
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
			if tr.Verdict != VerdictFail {
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
		if tr.Verdict != VerdictPass {
			t.Errorf("%s: %s %s", countKeys[i], tr.Verdict, tr.Got)
		}
	}
}

// TestAJUnitReportWithThresholdsValidates writes the JUnit report of a
// scenario whose threshold fails and one whose threshold is inconclusive,
// and validates it against the Surefire schema: both are failures, of
// types expectation and inconclusive, naming the threshold.
func TestAJUnitReportWithThresholdsValidates(t *testing.T) {
	failing := metricScenario(t, 1, "rate(failure, tool=bash) <= 0.1")
	undecided := metricScenario(t, 1, "p95(bash) < 1m")
	undecided.Name, undecided.File = "undecided", "undecided.txtar"
	res := runSuite(t, []*Scenario{failing, undecided}, Options{})
	var b strings.Builder
	if err := res.WriteJUnit(&b, "retrace eval"); err != nil {
		t.Fatal(err)
	}
	report := b.String()
	for _, w := range []string{
		`<failure message="expected metric.txtar:14: expect.metrics[0]: rate(failure, tool=bash) &lt;= 0.1; got 1: 1 of 1 bash calls (the denominator) failed, over 1 run" type="expectation">`,
		`<failure message="expected metric.txtar:14: expect.metrics[0]: p95(bash) &lt; 1m; got inconclusive: p95 needs at least 20 samples`,
		`type="inconclusive"`,
	} {
		if !strings.Contains(report, w) {
			t.Errorf("the report does not hold %q:\n%s", w, report)
		}
	}
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("xmllint (libxml2-utils) is not installed; .ci/run should have installed it")
		}
		t.Skip("xmllint (libxml2-utils) is not installed; the report's content is checked above")
	}
	file := filepath.Join(t.TempDir(), "report.xml")
	if err := os.WriteFile(file, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "surefire-test-report.xsd"), file).CombinedOutput(); err != nil {
		t.Fatalf("the report does not validate: %v\n%s\n%s", err, out, report)
	}
}
