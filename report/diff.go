package report

import (
	"bufio"
	"cmp"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/retrace-dev/retrace/diff"
)

var diffPage = template.Must(template.New("diff.html.tmpl").Funcs(template.FuncMap{
	"num":    func(n any) string { return thousands(toInt(n)) },
	"value":  diff.FormatValue,
	"pvalue": formatP,
}).ParseFS(templates, "templates/diff.html.tmpl"))

// diffView is what the diff template renders.
type diffView struct {
	Title string
	R     *diff.Result
	CSS   template.CSS
	// Rows are the result's rows, regressed first, each with its interval
	// drawn.
	Rows   []diffRowView
	Counts map[string]int
	// RegressedScenarios names the scenarios that regressed, which the
	// header counts before any metric.
	RegressedScenarios []string
	// Correction names the multiple-testing correction in words.
	Correction string
}

type diffRowView struct {
	diff.Row
	Chart template.HTML
}

// RenderDiff writes a diff of base and candidate (retrace diff's result)
// as one self-contained HTML page: the two sides side by side for every
// metric, with the difference, its interval drawn against the smallest
// change that matters, the test, the adjusted p and the verdict;
// regressions first, then improvements.
func RenderDiff(w io.Writer, r *diff.Result, title string) error {
	css, err := templates.ReadFile("templates/style.css")
	if err != nil {
		return err
	}
	v := diffView{Title: cmp.Or(title, "retrace diff"), R: r, CSS: template.CSS(css), Counts: map[string]int{}, // our own stylesheet.
		Correction: map[string]string{"bh": "Benjamini–Hochberg"}[r.Correction]}
	v.RegressedScenarios = r.RegressedScenarios()
	for verdict, n := range r.Counts() {
		v.Counts[string(verdict)] = n
	}
	if v.Correction == "" {
		v.Correction = "Holm"
	}
	for _, verdict := range []diff.Verdict{diff.VerdictRegressed, diff.VerdictImproved, diff.VerdictInconclusive, diff.VerdictUnchanged} {
		for _, row := range r.Rows {
			if row.Verdict == verdict {
				v.Rows = append(v.Rows, diffRowView{Row: row, Chart: intervalSVG(row)})
			}
		}
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := diffPage.Execute(bw, v); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return bw.Flush()
}

// formatP writes a p-value with three significant digits.
func formatP(p float64) string {
	if math.IsNaN(p) {
		return "n/a"
	}
	if p < 0.001 {
		return "<0.001"
	}
	return fmt.Sprintf("%.3g", p)
}

// intervalSVG draws a row's difference and its confidence interval on an
// axis centred on zero, with the band of changes too small to matter
// (±MinEffect) shaded: a verdict can be read off the picture.
func intervalSVG(r diff.Row) template.HTML {
	const w, h, pad = 260.0, 22.0, 8.0
	band := r.MinEffect
	if r.Relative {
		band = r.MinEffect * math.Abs(r.Base)
	}
	if !r.CI.Valid() || math.IsNaN(r.Diff) {
		return template.HTML(`<svg class="ci" viewBox="0 0 260 22" role="img"><title>no interval</title><text x="130" y="15" text-anchor="middle" class="na">no interval</text></svg>`)
	}
	m := math.Max(math.Max(math.Abs(r.CI.Lo), math.Abs(r.CI.Hi)), math.Max(band, math.Abs(r.Diff)))
	if m == 0 || math.IsInf(m, 0) {
		m = 1
	}
	m *= 1.1
	x := func(v float64) float64 { return w/2 + (w/2-pad)*v/m }
	var s strings.Builder
	fmt.Fprintf(&s, `<svg class="ci" viewBox="0 0 %.0f %.0f" role="img"><title>%s</title>`, w, h,
		esc(fmt.Sprintf("diff %s, interval [%s, %s], smallest change that matters ±%s",
			diff.FormatValue(r, r.Diff), diff.FormatValue(r, r.CI.Lo), diff.FormatValue(r, r.CI.Hi), diff.FormatValue(r, band))))
	if band > 0 {
		fmt.Fprintf(&s, `<rect x="%.1f" y="2" width="%.1f" height="%.0f" class="band"/>`, x(-band), x(band)-x(-band), h-4)
	}
	fmt.Fprintf(&s, `<line x1="%.1f" x2="%.1f" y1="1" y2="%.0f" class="zero"/>`, x(0), x(0), h-1)
	class := "v-" + string(r.Verdict)
	fmt.Fprintf(&s, `<line x1="%.1f" x2="%.1f" y1="11" y2="11" class="iv %s"/>`, x(r.CI.Lo), x(r.CI.Hi), esc(class))
	fmt.Fprintf(&s, `<circle cx="%.1f" cy="11" r="4" class="pt %s"/></svg>`, x(r.Diff), esc(class))
	return template.HTML(s.String()) // numbers and escaped text only.
}
