package report

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// junitResults are results with a scenario of every verdict: one that
// passed, one flaky, one failed, one retrace could not run, one whose
// passing runs a threshold failed and one whose threshold could not be
// decided, so that the report holds every kind of testcase.
func junitResults(t *testing.T) *results.Results {
	t.Helper()
	res := handResults()
	threshold := func(name string, v results.Verdict, got string) results.ScenarioResult {
		s := results.ScenarioResult{Name: name, File: "suite/" + name + ".txtar", Runs: []results.RunResult{{Repeat: 1, DurationMs: 12}},
			Thresholds: []results.ThresholdResult{{Expect: "metric.txtar:14: expect.metrics[0]: p95(bash) < 1m", Threshold: "p95(duration, tool=bash) < 1m", Verdict: v, Got: got}}}
		s.Decide()
		return s
	}
	res.Scenarios = append(res.Scenarios,
		threshold("e_threshold", results.VerdictFail, "2m: over 20 bash calls"),
		threshold("f_undecided", results.VerdictInconclusive, "inconclusive: p95 needs at least 20 samples, there are 1"))
	for _, v := range []results.Verdict{results.VerdictPass, results.VerdictFail, results.VerdictFlaky, results.VerdictError, results.VerdictInconclusive} {
		if res.Count(v) == 0 {
			t.Fatalf("no scenario is %s", v)
		}
	}
	return res
}

func TestTheJUnitReportValidatesAgainstTheSurefireSchema(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		// .ci/run installs it, so CI never skips the schema check.
		if os.Getenv("CI") != "" {
			t.Fatal("xmllint (libxml2-utils) is not installed; .ci/run should have installed it")
		}
		t.Skip("xmllint (libxml2-utils) is not installed (apt-get install libxml2-utils); TestTheJUnitReportHasEveryVerdict checks the report's structure without it")
	}
	res := junitResults(t)
	file := filepath.Join(t.TempDir(), "report.xml")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteJUnit(f, res, "retrace eval"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "surefire-test-report.xsd"), file).CombinedOutput()
	if err != nil {
		data, _ := os.ReadFile(file)
		t.Fatalf("the report does not validate: %v\n%s\n%s", err, out, data)
	}
	// The check can fail: a report without the required tests attribute does not validate.
	data, _ := os.ReadFile(file)
	bad := filepath.Join(t.TempDir(), "bad.xml")
	os.WriteFile(bad, []byte(strings.Replace(string(data), ` tests="6"`, "", 1)), 0o644)
	if err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "surefire-test-report.xsd"), bad).Run(); err == nil {
		t.Fatal("a report without tests= validates: the schema check proves nothing")
	}
}

func TestTheJUnitReportHasEveryVerdict(t *testing.T) {
	res := junitResults(t)
	var b strings.Builder
	if err := WriteJUnit(&b, res, "retrace eval"); err != nil {
		t.Fatal(err)
	}
	var got junitSuite
	if err := xml.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatal(err)
	}
	if got.Tests != 6 || got.Failures != 4 || got.Errors != 1 || got.Skipped != 0 || len(got.Cases) != 6 {
		t.Fatalf("counts %+v", got)
	}
	// The schema's SUREFIRE_TIME: seconds, at most three decimals.
	timeRe := regexp.MustCompile(`^(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]{0,3})?$`)
	kinds := map[string]string{}
	for _, c := range got.Cases {
		if c.Name == "" || !timeRe.MatchString(c.Time) {
			t.Errorf("testcase %+v: no name, or a time the schema refuses", c)
		}
		switch {
		case c.Error != nil:
			kinds[c.Name] = "error:" + c.Error.Type
		case len(c.Failures) > 0:
			kinds[c.Name] = "failure:" + c.Failures[0].Type + ":" + c.Failures[0].Message
		default:
			kinds[c.Name] = "pass"
		}
	}
	want := map[string]string{"a_pass": "pass", "d_error": "error:error", "b_flaky": "failure:flaky:flaky: 1 of 2 runs passed",
		"c_fail":      "failure:expectation:expected x.txtar:9: expect.outcome: the session ends with end_turn; got it ended with max_turns",
		"e_threshold": "failure:expectation:expected metric.txtar:14: expect.metrics[0]: p95(bash) < 1m; got 2m: over 20 bash calls",
		"f_undecided": "failure:inconclusive:expected metric.txtar:14: expect.metrics[0]: p95(bash) < 1m; got inconclusive: p95 needs at least 20 samples, there are 1"}
	for k, v := range want {
		if kinds[k] != v {
			t.Errorf("testcase %s: %q, want %q", k, kinds[k], v)
		}
	}
}

// TestTheJUnitClassnameIsTheSuiteRelativePathWithDots checks that no
// classname holds the path of the machine that ran the suite: the suite
// path gives it, and results without one fall back to the file's name.
func TestTheJUnitClassnameIsTheSuiteRelativePathWithDots(t *testing.T) {
	res := &results.Results{Version: results.Version, Scenarios: []results.ScenarioResult{
		{Name: "nested", File: "/home/ci/work/suite/sub/dir/nested.txtar", SuitePath: "sub/dir/nested.txtar", Verdict: results.VerdictPass},
		{Name: "old", File: "/home/ci/work/suite/old.txtar", Verdict: results.VerdictPass},
		{Name: "builtin", File: "builtin/clean.txtar", SuitePath: "clean.txtar", Verdict: results.VerdictPass},
	}}
	var b strings.Builder
	if err := WriteJUnit(&b, res, "retrace eval"); err != nil {
		t.Fatal(err)
	}
	var got junitSuite
	if err := xml.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"nested": "sub.dir.nested", "old": "old", "builtin": "clean"}
	for _, c := range got.Cases {
		if c.Classname != want[c.Name] {
			t.Errorf("%s: classname %q, want %q", c.Name, c.Classname, want[c.Name])
		}
	}
}
