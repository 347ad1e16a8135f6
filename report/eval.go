package report

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/retrace-dev/retrace/results"
)

// order puts failures first: error, fail, flaky, inconclusive, then pass.
func verdictOrder(v results.Verdict) int {
	switch v {
	case results.VerdictError:
		return 0
	case results.VerdictFail:
		return 1
	case results.VerdictFlaky:
		return 2
	case results.VerdictInconclusive:
		return 3
	}
	return 4
}

// byVerdict returns the scenarios failures first, keeping file and name
// order within a verdict.
func scenariosByVerdict(r *results.Results) []results.ScenarioResult {
	out := slices.Clone(r.Scenarios)
	slices.SortStableFunc(out, func(a, b results.ScenarioResult) int { return verdictOrder(a.Verdict) - verdictOrder(b.Verdict) })
	return out
}

// runsLine says how the runs went and, when the runs alone do not
// explain the verdict, which thresholds decided it, so that a summary
// line never contradicts itself: "5/5 runs passed, threshold p95(read) <
// 2s failed".
func runsLine(s results.ScenarioResult) string {
	return fmt.Sprintf("%d/%d runs passed", s.Passed, len(s.Runs)) + passKNote(s) + thresholdsNote(s)
}

// passKNote gives pass^k and pass@k where they say more than the count
// of runs that passed: for a flaky scenario, and for any live one run
// several times: ", pass^k 0.6/0.3/0.1/0 pass@k 0.6/0.9/1/1 (k=1/2/4/5)".
func passKNote(s results.ScenarioResult) string {
	if len(s.PassK) == 0 || !s.Live && s.Verdict != results.VerdictFlaky {
		return ""
	}
	var ks, hats, ats []string
	for _, p := range s.PassK {
		ks = append(ks, strconv.Itoa(p.K))
		hats = append(hats, strconv.FormatFloat(math.Round(p.PassHat*100)/100, 'f', -1, 64))
		ats = append(ats, strconv.FormatFloat(math.Round(p.PassAt*100)/100, 'f', -1, 64))
	}
	return fmt.Sprintf(", pass^k %s pass@k %s (k=%s)", strings.Join(hats, "/"), strings.Join(ats, "/"), strings.Join(ks, "/"))
}

// thresholdsNote names the thresholds that failed or could not be
// decided: ", threshold p95(read) < 2s failed"; "" when none.
func thresholdsNote(s results.ScenarioResult) string {
	line := ""
	for _, v := range []results.Verdict{results.VerdictFail, results.VerdictInconclusive} {
		var names []string
		for _, t := range s.Thresholds {
			if t.Verdict == v {
				names = append(names, cmp.Or(t.Threshold, t.Expect))
			}
		}
		if len(names) == 0 {
			continue
		}
		word := "threshold"
		if len(names) > 1 {
			word = "thresholds"
		}
		what := "failed"
		if v == results.VerdictInconclusive {
			what = "inconclusive"
		}
		line += fmt.Sprintf(", %s %s %s", word, strings.Join(names, "; "), what)
	}
	return line
}

// EvalSummary is the one-line count of the verdicts.
func EvalSummary(r *results.Results) string {
	noun := "scenarios"
	if len(r.Scenarios) == 1 {
		noun = "scenario"
	}
	inconclusive := ""
	if n := r.Count(results.VerdictInconclusive); n > 0 {
		inconclusive = fmt.Sprintf(", %d inconclusive", n)
	}
	return fmt.Sprintf("%d %s: %d passed, %d failed, %d flaky%s, %d errors in %.1fs",
		len(r.Scenarios), noun, r.Count(results.VerdictPass), r.Count(results.VerdictFail), r.Count(results.VerdictFlaky), inconclusive, r.Count(results.VerdictError), r.DurationMs/1000)
}

// WriteEvalTable writes the human summary of eval results: failures first, each failed run
// with the expectation, what happened and the trajectory line that shows
// it, then one line per passing scenario and the counts.
func WriteEvalTable(w io.Writer, r *results.Results) error {
	var b strings.Builder
	for _, s := range scenariosByVerdict(r) {
		head := fmt.Sprintf("%-5s %s  %s", strings.ToUpper(string(s.Verdict)), s.Name, runsLine(s))
		if line := head + "  (" + s.File + ")"; twwidth.Width(line) <= MaxWidth {
			b.WriteString(line + "\n")
		} else {
			// The path goes under a long line, so that it fits a CI log.
			fmt.Fprintf(&b, "%s\n      (%s)\n", head, s.File)
		}
		if s.Verdict == results.VerdictPass {
			continue
		}
		for _, run := range s.Runs {
			if run.Passed {
				continue
			}
			prefix := "      "
			if len(s.Runs) > 1 {
				fmt.Fprintf(&b, "      run %d:\n", run.Repeat)
				prefix += "  "
			}
			if run.Error != "" {
				fmt.Fprintf(&b, "%sretrace could not run it: %s\n", prefix, run.Error)
			}
			for _, f := range run.Failures {
				fmt.Fprintf(&b, "%sexpected: %s\n%sgot:      %s\n", prefix, f.Expect, prefix, f.Got)
				if f.At != "" {
					fmt.Fprintf(&b, "%sat:       %s\n", prefix, f.At)
				}
			}
		}
		for _, t := range s.Thresholds {
			if t.Verdict != results.VerdictPass {
				fmt.Fprintf(&b, "      expected: %s\n      got:      %s\n", t.Expect, t.Got)
				if t.At != "" {
					fmt.Fprintf(&b, "      at:       %s\n", t.At)
				}
			}
		}
	}
	b.WriteString(EvalSummary(r) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteEvalMarkdown writes the summary of eval results as a Markdown table (for a CI job
// summary), failures first, with their failures listed below it.
func WriteEvalMarkdown(w io.Writer, r *results.Results) error {
	var b strings.Builder
	b.WriteString("| verdict | scenario | runs passed | file |\n|---|---|---|---|\n")
	scen := scenariosByVerdict(r)
	for _, s := range scen {
		fmt.Fprintf(&b, "| %s | %s | %d/%d%s | %s |\n", s.Verdict, md(s.Name), s.Passed, len(s.Runs), md(thresholdsNote(s)), md(s.File))
	}
	for _, s := range scen {
		if s.Verdict == results.VerdictPass {
			continue
		}
		fmt.Fprintf(&b, "\n**%s** (%s)\n\n", md(s.Name), s.Verdict)
		for _, run := range s.Runs {
			if run.Error != "" {
				fmt.Fprintf(&b, "- run %d: retrace could not run it: %s\n", run.Repeat, md(run.Error))
			}
			for _, f := range run.Failures {
				fmt.Fprintf(&b, "- run %d: expected %s; got %s", run.Repeat, md(f.Expect), md(f.Got))
				if f.At != "" {
					fmt.Fprintf(&b, " (`%s`)", f.At)
				}
				b.WriteString("\n")
			}
		}
		for _, t := range s.Thresholds {
			if t.Verdict != results.VerdictPass {
				fmt.Fprintf(&b, "- threshold: expected %s; got %s", md(t.Expect), md(t.Got))
				if t.At != "" {
					fmt.Fprintf(&b, " (`%s`)", t.At)
				}
				b.WriteString("\n")
			}
		}
	}
	b.WriteString("\n" + EvalSummary(r) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// md escapes text for a line or cell of the eval's Markdown: a failure
// quotes the model's reply and a tool's output, which must show as text,
// never as an image or a link in a CI job summary.
func md(s string) string {
	return mdEmphasis.Replace(MarkdownText(s))
}

var mdEmphasis = strings.NewReplacer("*", `\*`, "_", `\_`)

// junitSuite and the types below are the Surefire/Jenkins test report
// format (testdata/surefire-test-report.xsd): one testsuite, a testcase
// per scenario.
type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Time     string      `xml:"time,attr"`
	Tests    int         `xml:"tests,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string         `xml:"name,attr"`
	Classname string         `xml:"classname,attr"`
	Time      string         `xml:"time,attr"`
	Failures  []junitProblem `xml:"failure"`
	Error     *junitProblem  `xml:"error"`
	SystemOut string         `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// junitClassname is a scenario's JUnit classname: its suite-relative
// path without .txtar, with dots for the separators (sub/x.txtar is
// sub.x), so that a CI's test report groups scenarios by directory and
// shows no path of the machine that ran them. Results written before the
// suite path was recorded fall back to the file's base name, never to an
// absolute path.
func junitClassname(s results.ScenarioResult) string {
	p := s.SuitePath
	if p == "" {
		p = path.Base(filepath.ToSlash(s.File))
	}
	p = strings.TrimSuffix(strings.TrimPrefix(path.Clean("/"+p), "/"), ".txtar")
	return strings.ReplaceAll(p, "/", ".")
}

// seconds formats milliseconds as Surefire's time: seconds with at most
// three decimals.
func seconds(ms float64) string { return fmt.Sprintf("%.3f", max(ms, 0)/1000) }

// WriteJUnit writes eval results as a JUnit XML report (the Surefire
// schema Jenkins, GitLab and GitHub Actions' test reporters read): a
// failed scenario is a failure of type expectation, a flaky one a failure
// of type flaky, one retrace could not run an error.
func WriteJUnit(w io.Writer, r *results.Results, suiteName string) error {
	js := junitSuite{Name: suiteName, Time: seconds(r.DurationMs), Tests: len(r.Scenarios)}
	for _, s := range r.Scenarios {
		total := 0.0
		var text strings.Builder
		for _, run := range s.Runs {
			total += run.DurationMs
			if run.Trajectory != "" {
				fmt.Fprintf(&text, "run %d: %s\n", run.Repeat, run.Trajectory)
			}
		}
		jc := junitCase{Name: s.Name, Classname: junitClassname(s), Time: seconds(total), SystemOut: text.String()}
		detail := func() (string, string) {
			var b strings.Builder
			first := ""
			for _, run := range s.Runs {
				if run.Error != "" {
					fmt.Fprintf(&b, "run %d: retrace could not run it: %s\n", run.Repeat, run.Error)
					first = cmp.Or(first, run.Error)
				}
				for _, f := range run.Failures {
					fmt.Fprintf(&b, "run %d: expected %s\n  got %s\n", run.Repeat, f.Expect, f.Got)
					if f.At != "" {
						fmt.Fprintf(&b, "  at %s\n", f.At)
					}
					first = cmp.Or(first, "expected "+f.Expect+"; got "+f.Got)
				}
			}
			for _, t := range s.Thresholds {
				if t.Verdict != results.VerdictPass {
					fmt.Fprintf(&b, "threshold: expected %s\n  got %s\n", t.Expect, t.Got)
					if t.At != "" {
						fmt.Fprintf(&b, "  at %s\n", t.At)
					}
					first = cmp.Or(first, "expected "+t.Expect+"; got "+t.Got)
				}
			}
			return first, b.String()
		}
		switch s.Verdict {
		case results.VerdictError:
			msg, txt := detail()
			jc.Error = &junitProblem{Message: msg, Type: "error", Text: txt}
			js.Errors++
		case results.VerdictFail:
			msg, txt := detail()
			jc.Failures = []junitProblem{{Message: msg, Type: "expectation", Text: txt}}
			js.Failures++
		case results.VerdictFlaky:
			_, txt := detail()
			jc.Failures = []junitProblem{{Message: fmt.Sprintf("flaky: %d of %d runs passed", s.Passed, len(s.Runs)), Type: "flaky", Text: txt}}
			js.Failures++
		case results.VerdictInconclusive:
			// Not a pass: too few runs to decide is reported, like flaky,
			// as a failure of its own type.
			msg, txt := detail()
			jc.Failures = []junitProblem{{Message: msg, Type: "inconclusive", Text: txt}}
			js.Failures++
		}
		js.Cases = append(js.Cases, jc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(js); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// ComparisonSummary is the one-line count of the changes since a baseline.
func ComparisonSummary(c *results.Comparison) string {
	inconclusive := ""
	if n := c.Count(results.ChangeInconclusive); n > 0 {
		inconclusive = fmt.Sprintf(", %d inconclusive", n)
	}
	return fmt.Sprintf("since the baseline %s: %d regressed%s, %d fixed, %d changed, %d new, %d removed, %d unchanged",
		c.Baseline, c.Count(results.ChangeRegressed), inconclusive, c.Count(results.ChangeFixed), c.Count(results.ChangeChanged), c.Count(results.ChangeNew), c.Count(results.ChangeRemoved), c.Unchanged)
}

// verdicts says a change's verdicts: "pass -> fail", "new: pass".
func changeVerdicts(s results.ScenarioChange) string {
	switch s.Change {
	case results.ChangeNew:
		return "now " + string(s.After)
	case results.ChangeRemoved:
		return "was " + string(s.Before)
	}
	return string(s.Before) + " -> " + string(s.After)
}

// WriteComparisonTable writes the changes since a baseline, regressions first, one a line, then the
// counts, after a blank line that sets them apart from the summary.
func WriteComparisonTable(w io.Writer, c *results.Comparison) error {
	var b strings.Builder
	b.WriteString("\n")
	for _, s := range c.Changes {
		fmt.Fprintf(&b, "%-9s %s  %s  (%s)\n", strings.ToUpper(string(s.Change)), s.Name, changeVerdicts(s), s.File)
		if s.Detail != "" {
			fmt.Fprintf(&b, "          %s\n", s.Detail)
		}
	}
	b.WriteString(strings.ToUpper(ComparisonSummary(c)[:1]) + ComparisonSummary(c)[1:] + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteComparisonMarkdown writes the changes since a baseline as a Markdown table.
func WriteComparisonMarkdown(w io.Writer, c *results.Comparison) error {
	var b strings.Builder
	if len(c.Changes) > 0 {
		b.WriteString("\n| change | scenario | verdicts | file |\n|---|---|---|---|\n")
		for _, s := range c.Changes {
			v := changeVerdicts(s)
			if s.Detail != "" {
				v += "; " + s.Detail
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", s.Change, md(s.Name), md(v), md(s.File))
		}
	}
	b.WriteString("\n" + md(strings.ToUpper(ComparisonSummary(c)[:1])+ComparisonSummary(c)[1:]) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}
