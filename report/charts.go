package report

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"image/color"
	"math"
	"regexp"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The palette, shared by the CSS and the charts.
var (
	colorInk     = color.RGBA{0x33, 0x3d, 0x4d, 0xff}
	colorBlue    = color.RGBA{0x3b, 0x6e, 0xd6, 0xff}
	colorBlueBg  = color.RGBA{0x9d, 0xb8, 0xee, 0xff}
	colorAmber   = color.RGBA{0xd9, 0x8b, 0x1a, 0xff}
	colorRed     = color.RGBA{0xd0, 0x45, 0x3b, 0xff}
	colorGridRGB = color.RGBA{0xe4, 0xe8, 0xee, 0xff}
)

// binsPerDecade is the resolution of the latency histograms.
const binsPerDecade = 5

// latencySVG draws one tool's measured durations as a histogram on a log
// scale with p50 and p95 marked, with gonum/plot's SVG backend. Durations
// of 0 ms (calls that did not run) have no place on a log scale; the
// caption counts them.
func latencySVG(l ToolLatency) (template.HTML, error) {
	var logs []float64
	for _, d := range l.Durations {
		if d > 0 {
			logs = append(logs, math.Log10(d))
		}
	}
	if len(logs) == 0 {
		return "", nil
	}
	lo, hi := math.Floor(logs[0]), math.Ceil(logs[len(logs)-1])
	if hi <= lo {
		hi = lo + 1
	}
	n := int(math.Round((hi - lo) * binsPerDecade))
	bins := make([]plotter.HistogramBin, n)
	for i := range bins {
		bins[i].Min = lo + float64(i)/binsPerDecade
		bins[i].Max = lo + float64(i+1)/binsPerDecade
	}
	for _, v := range logs {
		i := min(int((v-lo)*binsPerDecade), n-1)
		bins[i].Weight++
	}
	ymax := 0.0
	for _, b := range bins {
		ymax = max(ymax, b.Weight)
	}
	p := plot.New()
	p.X.Label.Text = "duration (log scale)"
	p.Y.Label.Text = "calls"
	p.X.Min, p.X.Max = lo, hi
	p.Y.Min, p.Y.Max = 0, ymax*1.15
	p.X.Tick.Marker = logTicks{}
	p.Add(plotter.NewGrid())
	h := &plotter.Histogram{Bins: bins, Width: 1.0 / binsPerDecade, FillColor: colorBlueBg, LineStyle: draw.LineStyle{Color: colorBlue, Width: vg.Points(0.5)}}
	p.Add(h)
	for _, q := range []struct {
		ms    float64
		name  string
		color color.Color
		dash  []vg.Length
	}{{l.P50, "p50", colorInk, nil}, {l.P95, "p95", colorRed, []vg.Length{vg.Points(3), vg.Points(2)}}} {
		if q.ms <= 0 {
			continue
		}
		x := math.Log10(q.ms)
		line, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: ymax * 1.15}})
		if err != nil {
			return "", err
		}
		line.LineStyle = draw.LineStyle{Color: q.color, Width: vg.Points(1.5), Dashes: q.dash}
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s %s", q.name, formatMs(q.ms)), line)
	}
	p.Legend.Top = true
	styleText(p)
	wt, err := p.WriterTo(5*vg.Inch, 2.4*vg.Inch, "svg")
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return "", err
	}
	return inlineSVG(buf.String(), "latency of "+l.Tool), nil
}

// styleText sets every text of p in a sans-serif face and the ink color.
func styleText(p *plot.Plot) {
	for _, ts := range []*text{
		{&p.Title.TextStyle.Font.Variant, &p.Title.TextStyle.Color},
		{&p.X.Label.TextStyle.Font.Variant, &p.X.Label.TextStyle.Color},
		{&p.Y.Label.TextStyle.Font.Variant, &p.Y.Label.TextStyle.Color},
		{&p.X.Tick.Label.Font.Variant, &p.X.Tick.Label.Color},
		{&p.Y.Tick.Label.Font.Variant, &p.Y.Tick.Label.Color},
		{&p.Legend.TextStyle.Font.Variant, &p.Legend.TextStyle.Color},
	} {
		*ts.variant, *ts.color = "Sans", colorInk
	}
	p.X.Label.TextStyle.Font.Size = vg.Points(10)
	p.Y.Label.TextStyle.Font.Size = vg.Points(10)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.X.LineStyle.Color, p.Y.LineStyle.Color = colorGridRGB, colorGridRGB
}

// text points at a text style's face variant and color.
type text struct {
	variant *font.Variant
	color   *color.Color
}

// logTicks labels a log10 axis with the durations of its decades.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Ceil(lo); e <= hi; e++ {
		ts = append(ts, plot.Tick{Value: e, Label: formatMs(math.Pow(10, e))})
		for k := 2.0; k < 10 && e+math.Log10(k) < hi; k++ {
			ts = append(ts, plot.Tick{Value: e + math.Log10(k)})
		}
	}
	return ts
}

// formatMs writes a duration in ms in the unit that reads best.
func formatMs(ms float64) string {
	switch {
	case ms >= 60000:
		return fmt.Sprintf("%.1f min", ms/60000)
	case ms >= 1000:
		return trimZeros(fmt.Sprintf("%.2f", ms/1000)) + " s"
	case ms >= 1:
		return trimZeros(fmt.Sprintf("%.2f", ms)) + " ms"
	case ms >= 0.001:
		return trimZeros(fmt.Sprintf("%.3f", ms*1000)) + " µs"
	case ms == 0:
		return "0 ms"
	}
	return fmt.Sprintf("%.3g ms", ms)
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

var (
	svgProlog = regexp.MustCompile(`(?s)^.*?<svg `)
	svgSize   = regexp.MustCompile(`^<svg width="[^"]*" height="[^"]*"`)
	svgNS     = regexp.MustCompile(`\s*xmlns(:xlink)?="[^"]*"`)
	svgFamily = regexp.MustCompile(`font-family:[^;"]*;`)
)

// inlineSVG makes an SVG document from gonum/plot fit for inlining in the
// page: the XML prolog and comment go, and so do the namespace
// declarations (inline SVG in HTML needs none, and the page holds no URL),
// the fixed size gives way to the viewBox so the chart scales with the
// page, the fonts become the page's, and title names it for screen
// readers. gonum/plot escapes the text it draws.
func inlineSVG(doc, title string) template.HTML {
	doc = svgProlog.ReplaceAllString(doc, "<svg ")
	doc = svgSize.ReplaceAllString(doc, `<svg class="chart" role="img"`)
	doc = svgNS.ReplaceAllString(doc, "")
	doc = svgFamily.ReplaceAllString(doc, "font-family:system-ui,sans-serif;")
	if i := strings.Index(doc, ">"); i > 0 {
		doc = doc[:i+1] + "<title>" + html.EscapeString(title) + "</title>" + doc[i+1:]
	}
	return template.HTML(doc) // built from gonum/plot's escaped output and our escaped title.
}
