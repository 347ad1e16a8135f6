package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/diff"
)

// WriteDiffJSON writes a diff result as one indented JSON document.
func WriteDiffJSON(w io.Writer, r *diff.Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// header says what was compared and how, in one paragraph.
func diffHeader(r *diff.Result) string {
	return fmt.Sprintf("base: %s (%d sessions, %d tool calls)\ncandidate: %s (%d sessions, %d tool calls)\n"+
		"alpha %g, %s correction over %d rows; rates: Newcombe interval and two-proportion test (Fisher for small counts), widened by the design effect of sessions; "+
		"distributions: %d-resample session bootstrap (seed %d) and Mann–Whitney U over sessions\n",
		r.Base.Label, r.Base.Sessions, r.Base.ToolCalls, r.Cand.Label, r.Cand.Sessions, r.Cand.ToolCalls,
		r.Alpha, correctionName(r.Correction), len(r.Rows), r.Resamples, r.Seed)
}

func correctionName(c string) string {
	if c == diff.CorrectionBH {
		return "Benjamini–Hochberg"
	}
	return "Holm"
}

// tableWidth is the width of a table of these cells with pad columns
// between them, nothing cut.
func tableWidth(header []string, rows [][]string, pad int) int {
	total := 0
	for _, w := range columnWidths(header, rows) {
		total += w + pad
	}
	return total
}

// rowsByVerdict returns the rows in the order a reader acts on them:
// regressed, improved, inconclusive, unchanged, each in row order.
func rowsByVerdict(rows []diff.Row) []diff.Row {
	var out []diff.Row
	for _, v := range []diff.Verdict{diff.VerdictRegressed, diff.VerdictImproved, diff.VerdictInconclusive, diff.VerdictUnchanged} {
		for _, r := range rows {
			if r.Verdict == v {
				out = append(out, r)
			}
		}
	}
	return out
}

func diffCells(r diff.Row) []string {
	return []string{r.Metric, diff.FormatValue(r, r.Base), diff.FormatValue(r, r.Cand), diff.FormatValue(r, r.Diff),
		fmt.Sprintf("[%s, %s]", diff.FormatValue(r, r.CI.Lo), diff.FormatValue(r, r.CI.Hi)),
		fmt.Sprintf("%.3g", r.PAdjusted), string(r.Verdict), fmt.Sprintf("%d/%d %s", r.BaseN, r.CandN, r.Denominator), r.Test.Name}
}

var diffColumns = []string{"metric", "base", "cand", "diff", "ci", "p_adj", "verdict", "n (base/cand)", "test"}

// WriteDiffTable writes a diff result for a terminal: the header, the
// scenarios that changed (regressed first), the rows that changed or
// could not be decided (regressed first) and one line naming the
// unchanged ones, the skipped rows, the paired comparison, the findings, the
// gates and the calibration.
func WriteDiffTable(w io.Writer, r *diff.Result) error {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(diffHeader(r), "\n"), "\n") {
		b.WriteString(wrap("", line, MaxWidth, "  "))
	}
	if r.Scenarios != nil {
		if err := WriteComparisonTable(&b, r.Scenarios); err != nil {
			return err
		}
	}
	b.WriteString("\n")
	// The rows with something to say are listed; the unchanged ones, most
	// rows of a quiet change, are one line (json and markdown list all).
	var rows [][]string
	var unchanged []string
	for _, row := range rowsByVerdict(r.Rows) {
		if row.Verdict == diff.VerdictUnchanged {
			unchanged = append(unchanged, row.Metric)
			continue
		}
		rows = append(rows, diffCells(row))
	}
	if len(rows) > 0 {
		// Numbers, intervals and verdicts are never cut. The metric is
		// what tells the rows apart, so to fit a CI log the test's name
		// (the header names the tests) and then the denominator are left
		// out before it is cut; markdown and json keep them all.
		header := slices.Clone(diffColumns)
		cut := []int{2, 0, 0, 0, 0, 0, 0, 1, 1} // the metric last
		var left []string
		for len(header) > 7 && tableWidth(header, rows, 2) > MaxWidth {
			last := len(header) - 1
			left = append(left, header[last])
			header, cut = header[:last], cut[:last]
			for i := range rows {
				rows[i] = rows[i][:last]
			}
		}
		fitColumns(header, rows, cut, MaxWidth, 2, 0)
		tab := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tab, strings.Join(header, "\t"))
		for _, cells := range rows {
			fmt.Fprintln(tab, strings.Join(cells, "\t"))
		}
		tab.Flush()
		if len(left) > 0 {
			slices.Reverse(left)
			b.WriteString("(left out to fit: " + strings.Join(left, ", ") + "; --format markdown or json has them)\n")
		}
	}
	if len(unchanged) > 0 {
		b.WriteString(ellipsis(fmt.Sprintf("%s unchanged: %s", plural(len(unchanged), "row"), strings.Join(unchanged, ", ")), MaxWidth) + "\n")
	}
	writeDiffRest(&b, r, false)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteDiffMarkdown writes a diff result for a pull-request comment: a summary,
// the regressions, then the improvements, then everything in a collapsed
// <details>.
func WriteDiffMarkdown(w io.Writer, r *diff.Result) error {
	var b strings.Builder
	n := r.Counts()
	scen := ""
	if r.Scenarios != nil {
		scen = fmt.Sprintf("regressed scenarios: %d; metrics: ", len(r.RegressedScenarios()))
	}
	fmt.Fprintf(&b, "## retrace diff: %s%d regressed, %d improved, %d inconclusive, %d unchanged\n\n",
		scen, n[diff.VerdictRegressed], n[diff.VerdictImproved], n[diff.VerdictInconclusive], n[diff.VerdictUnchanged])
	for _, line := range strings.Split(strings.TrimSpace(diffHeader(r)), "\n") {
		fmt.Fprintf(&b, "%s  \n", cellMD(line))
	}
	if r.Scenarios != nil && len(r.Scenarios.Changes) > 0 {
		b.WriteString("### Scenarios\n")
		if err := WriteComparisonMarkdown(&b, r.Scenarios); err != nil {
			return err
		}
	}
	b.WriteString("\n")
	table := func(rows []diff.Row) {
		b.WriteString("| " + strings.Join(diffColumns, " | ") + " |\n|" + strings.Repeat(" --- |", len(diffColumns)) + "\n")
		for _, row := range rows {
			cs := diffCells(row)
			for i := range cs {
				cs[i] = cellMD(cs[i])
			}
			b.WriteString("| " + strings.Join(cs, " | ") + " |\n")
		}
		b.WriteString("\n")
	}
	for _, v := range []diff.Verdict{diff.VerdictRegressed, diff.VerdictImproved} {
		var rows []diff.Row
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
	writeDiffRest(&rest, r, true)
	if s := rest.String(); strings.TrimSpace(s) != "" {
		b.WriteString(s)
		b.WriteString("\n")
	}
	b.WriteString("<details><summary>All rows</summary>\n\n")
	table(rowsByVerdict(r.Rows))
	b.WriteString("</details>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// cellMD escapes a diff table cell or line: a metric names a tool and a
// finding quotes a model, so their text must not render as markup.
func cellMD(s string) string { return MarkdownText(s) }

// writeRest writes what follows the rows.
func writeDiffRest(b *strings.Builder, r *diff.Result, markdown bool) {
	head := func(s string) {
		if markdown {
			fmt.Fprintf(b, "### %s\n\n", s)
		} else {
			fmt.Fprintf(b, "\n%s:\n", s)
		}
	}
	// A terminal item wraps at MaxWidth, its later lines indented under
	// its text; Markdown leaves wrapping to whatever shows it.
	item := func(format string, args ...any) {
		if markdown {
			b.WriteString("- " + cellMD(fmt.Sprintf(format, args...)) + "\n")
			return
		}
		b.WriteString(wrap("  ", fmt.Sprintf(format, args...), MaxWidth, "    "))
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
		}{{"new", findingLines(r.Findings.New)}, {"resolved", findingLines(r.Findings.Resolved)}} {
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
		if len(c.Rows) == 0 {
			// No split compared any row: a rate of 0 would read as a
			// clean calibration when nothing was measured.
			item("no row had enough data in half of the base to be compared: the calibration measured nothing (a larger base would)")
			return
		}
		item("family-wise false-alarm rate %.3g (%d of %d splits had any regressed or improved row), alpha %g", c.FamilyRate, c.FamilyAlarms, c.Splits, c.Alpha)
		for _, cr := range c.Rows {
			if cr.Alarms > 0 {
				item("%s: %d of %d splits (%.3g)", cr.Metric, cr.Alarms, cr.Splits, cr.Rate)
			}
		}
	}
}

type findingLine string

func findingLines(fs []detectors.Finding) []findingLine {
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
