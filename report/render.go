package report

import (
	"bufio"
	"embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
)

//go:embed templates/report.html.tmpl templates/diff.html.tmpl templates/style.css
var templates embed.FS

var page = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"num": func(n any) string { return thousands(toInt(n)) },
	"pct": percent,
	"ms":  formatMs,
	// findingsShown is how many findings of a detector the page shows.
	"findingsShown": func() int { return FindingsShown },
}).ParseFS(templates, "templates/report.html.tmpl"))

// view is what the template renders: the model and its charts.
type view struct {
	M          *Model
	CSS        template.CSS
	EndReasons template.HTML
	Funnel     template.HTML
	Latency    []latencyView
	Failures   template.HTML
	// Permissions and Defenses are bar charts.
	Permissions template.HTML
	Defenses    template.HTML
	Sessions    []sessionView
}

type latencyView struct {
	L     ToolLatency
	SVG   template.HTML
	Zeros int
}

type sessionView struct {
	D        SessionDetail
	Timeline template.HTML
}

// Render writes m as one self-contained HTML page to w.
func Render(w io.Writer, m *Model) error {
	css, err := templates.ReadFile("templates/style.css")
	if err != nil {
		return err
	}
	v := view{M: m, CSS: template.CSS(css)} // our own stylesheet, embedded.
	var bars []bar
	for _, r := range m.EndReasons {
		bars = append(bars, bar{Label: r.Reason, N: r.Sessions, Of: m.Summary.Sessions, OfName: "sessions", Class: reasonClass(r.Reason)})
	}
	v.EndReasons = barsSVG("how the sessions ended", bars)
	if len(m.Funnel) > 0 && m.Funnel[0].Tool == "(all)" {
		f := m.Funnel[0]
		v.Funnel = barsSVG("tool funnel", []bar{
			{Label: "calls", N: f.Calls, Of: f.Calls, OfName: "calls", Class: "b-blue"},
			{Label: "permission allowed", N: f.Allowed, Of: f.Calls, OfName: "calls", Class: "b-blue"},
			{Label: "permission denied", N: f.Denied, Of: f.Calls, OfName: "calls", Class: "b-red"},
			{Label: "executed", N: f.Executed, Of: f.Calls, OfName: "calls", Class: "b-blue"},
			{Label: "succeeded", N: f.Successes, Of: f.Executed, OfName: "executed", Class: "b-green"},
			{Label: "failed while running", N: f.ExecFailures, Of: f.Executed, OfName: "executed", Class: "b-amber"},
			{Label: "lost", N: f.Lost, Of: f.Calls, OfName: "calls", Class: "b-grey"},
		})
	}
	for _, l := range m.Latency {
		svg, err := latencySVG(l)
		if err != nil {
			return fmt.Errorf("report: latency chart of %s: %w", l.Tool, err)
		}
		zeros := 0
		for _, d := range l.Durations {
			if d <= 0 {
				zeros++
			}
		}
		v.Latency = append(v.Latency, latencyView{L: l, SVG: svg, Zeros: zeros})
	}
	kinds := map[string]int64{}
	var order []string
	for _, r := range m.FailureKinds {
		if _, ok := kinds[r.Kind]; !ok {
			order = append(order, r.Kind)
		}
		kinds[r.Kind] += r.Failures
	}
	bars = nil
	for _, k := range order {
		bars = append(bars, bar{Label: k, N: kinds[k], Of: m.Summary.Failures, OfName: "failures", Class: "b-amber"})
	}
	v.Failures = barsSVG("failure kinds", bars)
	p := m.Permissions
	bars = nil
	for _, a := range p.Allows {
		bars = append(bars, bar{Label: "allow by " + a.Name, N: a.N, Of: p.AllowsTotal, OfName: "allows", Class: "b-blue"})
	}
	bars = append(bars,
		bar{Label: "prompts", N: p.Prompts, Of: p.Events, OfName: "permission events", Class: "b-amber"},
		bar{Label: "denials", N: p.Denials, Of: p.Events, OfName: "permission events", Class: "b-red"})
	v.Permissions = barsSVG("permission funnel", bars)
	bars = nil
	for _, d := range m.Defenses {
		bars = append(bars, bar{Label: d.Defense, N: d.SessionsTriggered, Of: d.SessionsEnabled, OfName: "sessions enabled", Class: "b-red"})
	}
	v.Defenses = barsSVG("sessions in which each defense acted", bars)
	for _, d := range m.Detailed {
		v.Sessions = append(v.Sessions, sessionView{D: d, Timeline: timelineSVG(d)})
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := page.Execute(bw, v); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return bw.Flush()
}

func reasonClass(r string) string {
	switch r {
	case "end_turn", "stop_sequence":
		return "b-green"
	case "error", "(none)", "aborted", "stuck":
		return "b-red"
	}
	return "b-amber"
}

// thousands writes n with thin separators between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
