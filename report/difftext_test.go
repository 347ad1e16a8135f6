package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/retrace-dev/retrace/diff"
	"github.com/retrace-dev/retrace/results"
)

// TestTheDiffMarkdownPutsRegressionsFirst checks the pull-request form:
// the regressions, then the improvements, then every row in a collapsed
// <details>, with the correction named.
func TestTheDiffMarkdownPutsRegressionsFirst(t *testing.T) {
	var b bytes.Buffer
	if err := WriteDiffMarkdown(&b, sampleDiff()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	reg, imp, det := strings.Index(out, "### Regressed"), strings.Index(out, "### Improved"), strings.Index(out, "<details>")
	row := strings.Index(out, "| rate(failure, tool=bash, among=executed) |")
	if reg < 0 || imp < 0 || det < 0 || row < 0 || !(reg < row && row < imp && imp < det) || !strings.Contains(out, "Holm") {
		t.Errorf("the markdown does not list the regressions first, then the improvements, then <details>:\n%s", out)
	}
}

// TestEveryDiffFormatReportsThePairedTest checks that the table, the
// Markdown and the JSON all name McNemar's test and the scenario that
// flipped.
func TestEveryDiffFormatReportsThePairedTest(t *testing.T) {
	res := sampleDiff()
	for name, w := range map[string]func(*bytes.Buffer) error{
		"table":    func(b *bytes.Buffer) error { return WriteDiffTable(b, res) },
		"markdown": func(b *bytes.Buffer) error { return WriteDiffMarkdown(b, res) },
		"json":     func(b *bytes.Buffer) error { return WriteDiffJSON(b, res) },
	} {
		var b bytes.Buffer
		if err := w(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "McNemar") || !strings.Contains(b.String(), "clean") {
			t.Errorf("%s does not report McNemar and name the flipped scenario:\n%s", name, b.String())
		}
	}
}

// TestTheDiffTableListsARegressedScenarioBeforeTheRows checks that a
// scenario that regressed since the base is the first thing a reader of
// the terminal sees.
func TestTheDiffTableListsARegressedScenarioBeforeTheRows(t *testing.T) {
	base := &results.Results{Scenarios: []results.ScenarioResult{{Name: "a", Verdict: results.VerdictPass}, {Name: "b", Verdict: results.VerdictPass}}}
	cand := &results.Results{Scenarios: []results.ScenarioResult{{Name: "a", Verdict: results.VerdictPass}, {Name: "b", Verdict: results.VerdictFail}}}
	res := sampleDiff()
	res.Scenarios = results.Compare(base, cand, "base", 0)
	var b strings.Builder
	if err := WriteDiffTable(&b, res); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if i, j := strings.Index(out, "REGRESSED b"), strings.Index(out, "rate(failure"); i < 0 || j < 0 || i > j {
		t.Errorf("the regressed scenario is not listed before the rows:\n%s", out)
	}
}

// TestTheDiffTableFitsACILogAndSummarisesTheUnchanged checks the terminal
// form: no line wider than MaxWidth, and the unchanged rows named on one
// line instead of listed.
func TestTheDiffTableFitsACILogAndSummarisesTheUnchanged(t *testing.T) {
	res := sampleDiff()
	res.Rows[0].Metric = "rate(failure, tool=" + strings.Repeat("mcp__server__tool", 8) + ", among=executed)"
	res.Rows[0].Denominator = strings.Repeat("executed calls of a tool with a long name ", 3)
	res.Findings.New[0].Message = strings.Repeat("a finding's message that says a great deal ", 6)
	res.Gates[0].Detail = strings.Repeat("the candidate's interval against the bound ", 4)
	var b strings.Builder
	if err := WriteDiffTable(&b, res); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range strings.Split(out, "\n") {
		if w := twwidth.Width(line); w > MaxWidth {
			t.Errorf("a line %d columns wide:\n%s", w, line)
		}
	}
	if !strings.Contains(out, "1 row unchanged: rate(prompted)") || strings.Contains(out, "\nrate(prompted) ") {
		t.Errorf("the unchanged row is not summarised on one line:\n%s", out)
	}
	if !strings.Contains(out, "\n    a great deal a finding") {
		t.Errorf("the long finding is not wrapped under its text:\n%s", out)
	}
	if !strings.Contains(out, "rate(failure, tool=mcp__server__") || !strings.Contains(out, "…") {
		t.Errorf("the long metric is not cut with an ellipsis:\n%s", out)
	}
}

// TestACalibrationThatComparedNothingSaysSo checks the A/A calibration of a
// base too small to split: no row had the data to be compared in any half,
// and "false-alarm rate 0" would read as a clean calibration when nothing
// was measured. Both the table and the Markdown say so instead.
func TestACalibrationThatComparedNothingSaysSo(t *testing.T) {
	res := sampleDiff()
	res.Calibration = &diff.Calibration{Splits: 5, Seed: 1, Alpha: 0.05}
	for name, w := range map[string]func(*bytes.Buffer) error{
		"table":    func(b *bytes.Buffer) error { return WriteDiffTable(b, res) },
		"markdown": func(b *bytes.Buffer) error { return WriteDiffMarkdown(b, res) },
	} {
		var b bytes.Buffer
		if err := w(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if strings.Contains(out, "false-alarm rate 0") || !strings.Contains(out, "no row had enough data") {
			t.Errorf("%s reports a calibration that compared nothing as a rate:\n%s", name, out)
		}
	}
}

// TestMarkdownShowsAModelsTextAsText checks the forms meant for a pull
// request comment or a CI job summary: a model's text in a finding, a
// tool name, a reply quoted in a failure, must show as the text it is,
// never as an image, a link or HTML of the page that shows them.
func TestMarkdownShowsAModelsTextAsText(t *testing.T) {
	const evil = `<img src=https://evil.example/x.png> [click](https://evil.example)`
	res := sampleDiff()
	res.Findings.New[0].Message = "turn 1 calls " + evil
	res.Rows[0].Metric = "rate(failure, tool=" + evil + ", among=executed)"
	res.Gates[0].Detail = evil
	res.Paired.Flips[0].Scenario = evil
	var d bytes.Buffer
	if err := WriteDiffMarkdown(&d, res); err != nil {
		t.Fatal(err)
	}
	ev := &results.Results{Scenarios: []results.ScenarioResult{{Name: "reply", File: "s/reply.txtar", Verdict: results.VerdictFail,
		Runs: []results.RunResult{{Repeat: 1, Failures: []results.Failure{{Expect: "s/reply.txtar:8: expect.reply", Got: `"` + evil + `"`}}}}}}}
	var e bytes.Buffer
	if err := WriteEvalMarkdown(&e, ev); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"diff": d.String(), "eval": e.String()} {
		// What is left once the escaped characters are taken out is what
		// would render.
		bare := strings.NewReplacer(`\<`, "", `\>`, "", `\[`, "", `\]`, "").Replace(out)
		if strings.Contains(bare, "<img") || strings.Contains(bare, "](https://evil") || strings.Contains(bare, "[click") {
			t.Errorf("the %s markdown renders a model's text as markup:\n%s", name, out)
		}
		if !strings.Contains(out, "evil.example") {
			t.Errorf("the %s markdown lost the text:\n%s", name, out)
		}
	}
}

// TestTheDiffTableKeepsRowsApart checks that the table's rows stay
// distinguishable in a CI log: rows of four tools once all read
// "rate(failure…", the metric cut to make room for the test's name. The
// test and the denominator go first (the header names the tests; markdown
// and json keep both); the metric is cut only after them.
func TestTheDiffTableKeepsRowsApart(t *testing.T) {
	res := sampleDiff()
	row := res.Rows[0]
	res.Rows = nil
	for _, tool := range []string{"bash", "edit", "mcp__github__get_pull_request", "mcp__github__create_issue"} {
		r := row
		r.Metric = "rate(failure, tool=" + tool + ", among=executed)"
		r.Denominator = tool + " calls that ran"
		r.Test.Name = "two-proportion z test (Rao–Scott design-effect corrected)"
		r.Base, r.Cand, r.Diff = 0.2036, 0.2535, 0.0499
		r.CI.Lo, r.CI.Hi = 0.0339, 0.066
		r.PAdjusted = 5.65e-08
		res.Rows = append(res.Rows, r)
	}
	// A distribution row's numbers are the widest: they leave the metric
	// least room.
	d := row
	d.Metric, d.Kind, d.Unit, d.Denominator = "p95(duration, tool=mcp__github__search_issues)", diff.KindDistribution, "ms", "measured mcp__github__search_issues calls"
	d.Base, d.Cand, d.Diff, d.CI.Lo, d.CI.Hi, d.PAdjusted, d.Verdict = 0.633, 0.1541, -0.4789, -2.669, 0.07192, 6.82e-07, diff.VerdictInconclusive
	d.Test.Name = "Mann–Whitney U (normal approximation, tie-corrected) over sessions' own values"
	res.Rows = append(res.Rows, d)
	var b strings.Builder
	if err := WriteDiffTable(&b, res); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range strings.Split(out, "\n") {
		if w := twwidth.Width(line); w > MaxWidth {
			t.Errorf("a line %d columns wide:\n%s", w, line)
		}
	}
	for _, want := range []string{"\nrate(failure, tool=bash, among=executed) ", "\nrate(failure, tool=edit, among=executed) ",
		"\nrate(failure, tool=mcp__github__get_pu", "\nrate(failure, tool=mcp__github__create_i", "\np95(duration, tool=mcp__github__search_i"} {
		if !strings.Contains(out, want) {
			t.Errorf("no row starts %q: the rows cannot be told apart:\n%s", strings.TrimPrefix(want, "\n"), out)
		}
	}
}
