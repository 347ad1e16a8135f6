package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/retrace-dev/retrace/detectors"
)

// WriteJSON writes the result as one indented JSON document.
func WriteJSON(w io.Writer, r *Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// header says what was compared and how, in one paragraph.
func header(r *Result) string {
	return fmt.Sprintf("base: %s (%d sessions, %d tool calls)\ncandidate: %s (%d sessions, %d tool calls)\n"+
		"alpha %g, %s correction over %d rows; rates: Newcombe interval and two-proportion test (Fisher for small counts), widened by the design effect of sessions; "+
		"distributions: %d-resample session bootstrap (seed %d) and Mann–Whitney U over sessions\n",
		r.Base.Label, r.Base.Sessions, r.Base.ToolCalls, r.Cand.Label, r.Cand.Sessions, r.Cand.ToolCalls,
		r.Alpha, correctionName(r.Correction), len(r.Rows), r.Resamples, r.Seed)
}

func correctionName(c string) string {
	if c == CorrectionBH {
		return "Benjamini–Hochberg"
	}
	return "Holm"
}

// Counts returns how many rows have each verdict.
func (r *Result) Counts() map[Verdict]int {
	n := map[Verdict]int{}
	for _, row := range r.Rows {
		n[row.Verdict]++
	}
	return n
}

// byVerdict returns the rows in the order a reader acts on them:
// regressed, improved, inconclusive, unchanged, each in row order.
func byVerdict(rows []Row) []Row {
	var out []Row
	for _, v := range []Verdict{VerdictRegressed, VerdictImproved, VerdictInconclusive, VerdictUnchanged} {
		for _, r := range rows {
			if r.Verdict == v {
				out = append(out, r)
			}
		}
	}
	return out
}

func cells(r Row) []string {
	return []string{r.Metric, FormatValue(r, r.Base), FormatValue(r, r.Cand), FormatValue(r, r.Diff),
		fmt.Sprintf("[%s, %s]", FormatValue(r, r.CI.Lo), FormatValue(r, r.CI.Hi)),
		fmt.Sprintf("%.3g", r.PAdjusted), string(r.Verdict), fmt.Sprintf("%d/%d %s", r.BaseN, r.CandN, r.Denominator), r.Test.Name}
}

var columns = []string{"metric", "base", "cand", "diff", "ci", "p_adj", "verdict", "n (base/cand)", "test"}

// WriteTable writes the result for a terminal: the header, the
// scenarios that changed (regressed first), every row (regressed
// first), the skipped rows, the paired comparison, the findings, the
// gates and the calibration.
func WriteTable(w io.Writer, r *Result) error {
	var b strings.Builder
	b.WriteString(header(r))
	if r.Scenarios != nil {
		if err := r.Scenarios.WriteTable(&b); err != nil {
			return err
		}
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(columns, "\t"))
	for _, row := range byVerdict(r.Rows) {
		fmt.Fprintln(tw, strings.Join(cells(row), "\t"))
	}
	tw.Flush()
	writeRest(&b, r, false)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the result for a pull-request comment: a summary,
// the regressions, then the improvements, then everything in a collapsed
// <details>.
func WriteMarkdown(w io.Writer, r *Result) error {
	var b strings.Builder
	n := r.Counts()
	scen := ""
	if r.Scenarios != nil {
		scen = fmt.Sprintf("regressed scenarios: %d; metrics: ", len(r.RegressedScenarios()))
	}
	fmt.Fprintf(&b, "## retrace diff: %s%d regressed, %d improved, %d inconclusive, %d unchanged\n\n",
		scen, n[VerdictRegressed], n[VerdictImproved], n[VerdictInconclusive], n[VerdictUnchanged])
	for _, line := range strings.Split(strings.TrimSpace(header(r)), "\n") {
		fmt.Fprintf(&b, "%s  \n", md(line))
	}
	if r.Scenarios != nil && len(r.Scenarios.Changes) > 0 {
		b.WriteString("### Scenarios\n")
		if err := r.Scenarios.WriteMarkdown(&b); err != nil {
			return err
		}
	}
	b.WriteString("\n")
	table := func(rows []Row) {
		b.WriteString("| " + strings.Join(columns, " | ") + " |\n|" + strings.Repeat(" --- |", len(columns)) + "\n")
		for _, row := range rows {
			cs := cells(row)
			for i := range cs {
				cs[i] = md(cs[i])
			}
			b.WriteString("| " + strings.Join(cs, " | ") + " |\n")
		}
		b.WriteString("\n")
	}
	for _, v := range []Verdict{VerdictRegressed, VerdictImproved} {
		var rows []Row
		for _, row := range r.Rows {
			if row.Verdict == v {
				rows = append(rows, row)
			}
		}
		if len(rows) > 0 {
			fmt.Fprintf(&b, "### %s\n\n", strings.ToUpper(string(v[:1]))+string(v[1:]))
			table(rows)
		}
	}
	var rest strings.Builder
	writeRest(&rest, r, true)
	if s := rest.String(); strings.TrimSpace(s) != "" {
		b.WriteString(s)
		b.WriteString("\n")
	}
	b.WriteString("<details><summary>All rows</summary>\n\n")
	table(byVerdict(r.Rows))
	b.WriteString("</details>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// md escapes a table cell.
func md(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// writeRest writes what follows the rows.
func writeRest(b *strings.Builder, r *Result, markdown bool) {
	head := func(s string) {
		if markdown {
			fmt.Fprintf(b, "### %s\n\n", s)
		} else {
			fmt.Fprintf(b, "\n%s:\n", s)
		}
	}
	item := func(format string, args ...any) {
		if markdown {
			b.WriteString("- ")
		} else {
			b.WriteString("  ")
		}
		fmt.Fprintf(b, format+"\n", args...)
	}
	if len(r.Skipped) > 0 && !markdown {
		head(fmt.Sprintf("skipped %d rows with too little data", len(r.Skipped)))
		for _, s := range r.Skipped {
			item("%s: %s", s.Metric, s.Reason)
		}
	}
	if p := r.Paired; p != nil {
		head("paired eval results")
		item("%d scenarios in both; pass→fail %d, fail→pass %d; %s p=%.3g: %s", p.Scenarios, p.PassFail, p.FailPass, p.Test.Name, p.Test.P, p.Verdict)
		for _, f := range p.Flips {
			item("%s: %s → %s", f.Scenario, f.From, f.To)
		}
	}
	if len(r.Findings.New)+len(r.Findings.Resolved) > 0 {
		head(fmt.Sprintf("findings: %d new, %d resolved", len(r.Findings.New), len(r.Findings.Resolved)))
		for _, x := range []struct {
			what string
			fs   []findingLine
		}{{"new", lines(r.Findings.New)}, {"resolved", lines(r.Findings.Resolved)}} {
			for i, f := range x.fs {
				if i == 20 {
					item("… %d more %s findings (--format json lists all)", len(x.fs)-20, x.what)
					break
				}
				item("%s %s", x.what, f)
			}
		}
	}
	if len(r.Gates) > 0 {
		head("gates")
		for _, g := range r.Gates {
			item("%s: %s — %s", g.Status, g.Gate, g.Detail)
		}
	}
	if c := r.Calibration; c != nil {
		head(fmt.Sprintf("A/A calibration: %d random halves of the base (seed %d)", c.Splits, c.Seed))
		item("family-wise false-alarm rate %.3g (%d of %d splits had any regressed or improved row), alpha %g", c.FamilyRate, c.FamilyAlarms, c.Splits, c.Alpha)
		for _, cr := range c.Rows {
			if cr.Alarms > 0 {
				item("%s: %d of %d splits (%.3g)", cr.Metric, cr.Alarms, cr.Splits, cr.Rate)
			}
		}
	}
}

type findingLine string

func lines(fs []detectors.Finding) []findingLine {
	out := make([]findingLine, len(fs))
	for i, f := range fs {
		ev := ""
		if len(f.Evidence) > 0 {
			ev = fmt.Sprintf(" at %s:%d (seq %d)", f.Evidence[0].File, f.Evidence[0].Line, f.Evidence[0].Seq)
		}
		out[i] = findingLine(fmt.Sprintf("%s %s%s: %s", f.Severity, f.Detector, ev, f.Message))
	}
	return out
}
