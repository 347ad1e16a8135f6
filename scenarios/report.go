package scenarios

import (
	"cmp"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// order puts failures first: error, fail, flaky, inconclusive, then pass.
func order(v Verdict) int {
	switch v {
	case VerdictError:
		return 0
	case VerdictFail:
		return 1
	case VerdictFlaky:
		return 2
	case VerdictInconclusive:
		return 3
	}
	return 4
}

// byVerdict returns the scenarios failures first, keeping file and name
// order within a verdict.
func (r *Results) byVerdict() []ScenarioResult {
	out := slices.Clone(r.Scenarios)
	slices.SortStableFunc(out, func(a, b ScenarioResult) int { return order(a.Verdict) - order(b.Verdict) })
	return out
}

// runsLine says how the runs went and, when the runs alone do not
// explain the verdict, which thresholds decided it, so that a summary
// line never contradicts itself: "5/5 runs passed, threshold p95(read) <
// 2s failed".
func (s ScenarioResult) runsLine() string {
	return fmt.Sprintf("%d/%d runs passed", s.Passed, len(s.Runs)) + s.passKNote() + s.thresholdsNote()
}

// passKNote gives pass^k and pass@k where they say more than the count
// of runs that passed: for a flaky scenario, and for any live one run
// several times: ", pass^k 0.6/0.3/0.1/0 pass@k 0.6/0.9/1/1 (k=1/2/4/5)".
func (s ScenarioResult) passKNote() string {
	if len(s.PassK) == 0 || !s.Live && s.Verdict != VerdictFlaky {
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
func (s ScenarioResult) thresholdsNote() string {
	line := ""
	for _, v := range []Verdict{VerdictFail, VerdictInconclusive} {
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
		if v == VerdictInconclusive {
			what = "inconclusive"
		}
		line += fmt.Sprintf(", %s %s %s", word, strings.Join(names, "; "), what)
	}
	return line
}

// Summary is the one-line count of the verdicts.
func (r *Results) Summary() string {
	noun := "scenarios"
	if len(r.Scenarios) == 1 {
		noun = "scenario"
	}
	inconclusive := ""
	if n := r.Count(VerdictInconclusive); n > 0 {
		inconclusive = fmt.Sprintf(", %d inconclusive", n)
	}
	return fmt.Sprintf("%d %s: %d passed, %d failed, %d flaky%s, %d errors in %.1fs",
		len(r.Scenarios), noun, r.Count(VerdictPass), r.Count(VerdictFail), r.Count(VerdictFlaky), inconclusive, r.Count(VerdictError), r.DurationMs/1000)
}

// WriteTable writes the human summary: failures first, each failed run
// with the expectation, what happened and the trajectory line that shows
// it, then one line per passing scenario and the counts.
func (r *Results) WriteTable(w io.Writer) error {
	var b strings.Builder
	for _, s := range r.byVerdict() {
		fmt.Fprintf(&b, "%-5s %s  %s  (%s)\n", strings.ToUpper(string(s.Verdict)), s.Name, s.runsLine(), s.File)
		if s.Verdict == VerdictPass {
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
			if t.Verdict != VerdictPass {
				fmt.Fprintf(&b, "      expected: %s\n      got:      %s\n", t.Expect, t.Got)
				if t.At != "" {
					fmt.Fprintf(&b, "      at:       %s\n", t.At)
				}
			}
		}
	}
	b.WriteString(r.Summary() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the summary as a Markdown table (for a CI job
// summary), failures first, with their failures listed below it.
func (r *Results) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| verdict | scenario | runs passed | file |\n|---|---|---|---|\n")
	scen := r.byVerdict()
	for _, s := range scen {
		fmt.Fprintf(&b, "| %s | %s | %d/%d%s | %s |\n", s.Verdict, md(s.Name), s.Passed, len(s.Runs), md(s.thresholdsNote()), md(s.File))
	}
	for _, s := range scen {
		if s.Verdict == VerdictPass {
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
			if t.Verdict != VerdictPass {
				fmt.Fprintf(&b, "- threshold: expected %s; got %s", md(t.Expect), md(t.Got))
				if t.At != "" {
					fmt.Fprintf(&b, " (`%s`)", t.At)
				}
				b.WriteString("\n")
			}
		}
	}
	b.WriteString("\n" + r.Summary() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func md(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "*", `\*`, "_", `\_`).Replace(s)
}

// WriteJSON writes the results as indented JSON, which ReadResults and
// Merge read back.
func (r *Results) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

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

// seconds formats milliseconds as Surefire's time: seconds with at most
// three decimals.
func seconds(ms float64) string { return fmt.Sprintf("%.3f", max(ms, 0)/1000) }

// WriteJUnit writes the results as a JUnit XML report (the Surefire
// schema Jenkins, GitLab and GitHub Actions' test reporters read): a
// failed scenario is a failure of type expectation, a flaky one a failure
// of type flaky, one retrace could not run an error.
func (r *Results) WriteJUnit(w io.Writer, suiteName string) error {
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
		jc := junitCase{Name: s.Name, Classname: "retrace.eval." + strings.TrimSuffix(s.File, ".txtar"), Time: seconds(total), SystemOut: text.String()}
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
				if t.Verdict != VerdictPass {
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
		case VerdictError:
			msg, txt := detail()
			jc.Error = &junitProblem{Message: msg, Type: "error", Text: txt}
			js.Errors++
		case VerdictFail:
			msg, txt := detail()
			jc.Failures = []junitProblem{{Message: msg, Type: "expectation", Text: txt}}
			js.Failures++
		case VerdictFlaky:
			_, txt := detail()
			jc.Failures = []junitProblem{{Message: fmt.Sprintf("flaky: %d of %d runs passed", s.Passed, len(s.Runs)), Type: "flaky", Text: txt}}
			js.Failures++
		case VerdictInconclusive:
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
