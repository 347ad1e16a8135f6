package scenarios

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// junitResults runs a passing, a failing and a flaky scenario, and adds
// one retrace could not run (made by hand: a suite that parses cannot
// produce it short of a broken disk), so that the report holds every
// kind of testcase.
func junitResults(t *testing.T) *Results {
	t.Helper()
	var suite []*Scenario
	for _, src := range []struct{ name, data string }{
		{"pass.txtar", minimal},
		{"fail.txtar", strings.Replace(strings.Replace(minimal, "name: minimal", "name: failing", 1), "reason: end_turn", "reason: max_turns", 1)},
		{"flaky.txtar", flakyScenario},
	} {
		s, err := Parse([]byte(src.data), src.name)
		if err != nil {
			t.Fatal(err)
		}
		suite = append(suite, s)
	}
	res := runSuite(t, suite, Options{Repeat: 3})
	broken := ScenarioResult{Name: "broken_config", File: "error.txtar", Runs: []RunResult{{Repeat: 1, Error: "workspace: no space left on device"}}}
	broken.decide()
	res.Scenarios = append(res.Scenarios, broken)
	for _, v := range []Verdict{VerdictPass, VerdictFail, VerdictFlaky, VerdictError} {
		if res.Count(v) != 1 {
			t.Fatalf("want one scenario of each verdict:\n%s", table(res))
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
	if err := res.WriteJUnit(f, "retrace eval"); err != nil {
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
	os.WriteFile(bad, []byte(strings.Replace(string(data), ` tests="4"`, "", 1)), 0o644)
	if err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "surefire-test-report.xsd"), bad).Run(); err == nil {
		t.Fatal("a report without tests= validates: the schema check proves nothing")
	}
}

func TestTheJUnitReportHasEveryVerdict(t *testing.T) {
	res := junitResults(t)
	var b strings.Builder
	if err := res.WriteJUnit(&b, "retrace eval"); err != nil {
		t.Fatal(err)
	}
	var got junitSuite
	if err := xml.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatal(err)
	}
	if got.Tests != 4 || got.Failures != 2 || got.Errors != 1 || got.Skipped != 0 || len(got.Cases) != 4 {
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
	want := map[string]string{"minimal": "pass", "broken_config": "error:error", "flaky": "failure:flaky:flaky: 2 of 3 runs passed",
		"failing": "failure:expectation:expected fail.txtar:8: expect.outcome: the session ends with max_turns; got it ended with end_turn"}
	for k, v := range want {
		if kinds[k] != v {
			t.Errorf("testcase %s: %q, want %q", k, kinds[k], v)
		}
	}
}
