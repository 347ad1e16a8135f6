package report

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"unicode/utf8"
)

// The charts drawn here are bars and lanes of rectangles: a plotting
// library would bring axes nobody reads, so they are written directly, each
// string from a trajectory through esc.

// esc escapes s for SVG text and attribute values.
func esc(s string) string { return html.EscapeString(s) }

// bar is one row of a bar chart: N of Of, where OfName names the
// denominator in the caption.
type bar struct {
	Label  string
	N, Of  int64
	OfName string
	Class  string
}

// barsSVG draws horizontal bars, each as wide as its N is of the largest
// Of, with "N · x% of OfName" beside it.
func barsSVG(title string, bars []bar) template.HTML {
	if len(bars) == 0 {
		return ""
	}
	const w, labelW, rowH, textW = 1000.0, 200.0, 26.0, 230.0
	var scale int64 = 1
	for _, b := range bars {
		scale = max(scale, b.Of, b.N)
	}
	h := rowH*float64(len(bars)) + 6
	var s strings.Builder
	fmt.Fprintf(&s, `<svg class="bars" viewBox="0 0 %.0f %.0f" role="img"><title>%s</title>`, w, h, esc(title))
	for i, b := range bars {
		y := 3 + rowH*float64(i)
		bw := (w - labelW - textW) * float64(b.N) / float64(scale)
		fmt.Fprintf(&s, `<text x="%.0f" y="%.1f" class="lbl" text-anchor="end">%s</text>`, labelW-8, y+17, esc(b.Label))
		fmt.Fprintf(&s, `<rect x="%.0f" y="%.1f" width="%.1f" height="%.0f" rx="3" class="track"/>`, labelW, y+4, w-labelW-textW, rowH-8)
		if b.N > 0 {
			fmt.Fprintf(&s, `<rect x="%.0f" y="%.1f" width="%.1f" height="%.0f" rx="3" class="%s"/>`, labelW, y+4, max(bw, 2), rowH-8, esc(cmpOr(b.Class, "b-blue")))
		}
		caption := fmt.Sprintf("%d", b.N)
		if b.OfName != "" {
			caption += " · " + percent(b.N, b.Of) + " of " + b.OfName
		}
		fmt.Fprintf(&s, `<text x="%.0f" y="%.1f" class="val">%s</text>`, w-textW+8, y+17, esc(caption))
	}
	s.WriteString(`</svg>`)
	return template.HTML(s.String()) // every string above went through esc.
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// percent writes n/of as a percentage, or "n/a" when of is 0.
func percent(n, of int64) string {
	if of == 0 {
		return "n/a"
	}
	p := 100 * float64(n) / float64(of)
	if p > 0 && p < 0.1 {
		return "<0.1%"
	}
	return trimZeros(fmt.Sprintf("%.1f", p)) + "%"
}

// The widths the timeline allows per character of its texts, in the
// SVG's units: a little more than system-ui's widest digits and lower
// case at the stylesheet's sizes (.cl 10.5px, .mt 10.5px bold, .ti
// 11.5px), so that a text never runs past the room made for it.
const (
	labelCharW = 6.5
	markCharW  = 7.5
	infoCharW  = 7.0
)

// timelineSVG draws a session's turns: per turn, a header line (the model
// call's duration and stop reason, then the defense triggers, reminders and
// user messages as marks) and the turn's tool calls as bars on lanes. Every
// turn shares the session's one time axis, from its first call's start to
// its last call's end, so that a bar's width is its duration at one scale
// across the session (a 31 µs call is a sliver next to a 526 ms one) and
// calls that ran in parallel sit on parallel lanes. A label is drawn only
// where it covers no bar and no other label: inside its bar when it fits,
// else beside it, else it is left to the bar's tooltip.
func timelineSVG(d SessionDetail) template.HTML {
	const w, gutter, headH, laneH = 960.0, 150.0, 22.0, 17.0
	area := w - gutter - 10
	var body strings.Builder
	y := 4.0
	start, end, first := int64(0), int64(0), true
	for _, t := range d.TurnList {
		for _, c := range t.Calls {
			cs := c.EndUs - int64(c.DurationMs*1000)
			if first || cs < start {
				start = cs
			}
			end, first = max(end, c.EndUs), false
		}
	}
	span := max(end-start, 1)
	xOf := func(us int64) float64 { return gutter + area*float64(us-start)/float64(span) }
	for _, t := range d.TurnList {
		lane, n := lanes(t.Calls)
		turnStart, turnEnd := int64(0), int64(0)
		for i, c := range t.Calls {
			cs := c.EndUs - int64(c.DurationMs*1000)
			if i == 0 || cs < turnStart {
				turnStart = cs
			}
			turnEnd = max(turnEnd, c.EndUs)
		}
		head := fmt.Sprintf("turn %d", t.N)
		rows := 0
		if len(t.Calls) > 0 {
			rows = n
		}
		fmt.Fprintf(&body, `<g class="turn"><rect x="0" y="%.1f" width="%.0f" height="%.0f" rx="4" class="turnbg"/>`, y, w, headH+laneH*float64(rows)+2)
		fmt.Fprintf(&body, `<a href="#%s"><text x="8" y="%.1f" class="th">%s</text></a>`, esc(cmpOr(t.Anchor, sessionAnchor(d.ID))), y+15, esc(head))
		info := "model " + formatMs(t.ModelMs)
		if t.StopReason != "" {
			info += " · " + t.StopReason
		}
		if len(t.Calls) > 0 {
			info += fmt.Sprintf(" · %d calls in %s", len(t.Calls), formatMs(float64(turnEnd-turnStart)/1000))
		}
		fmt.Fprintf(&body, `<text x="%.0f" y="%.1f" class="ti">%s</text>`, gutter, y+15, esc(info))
		// The marks go right to left, and stop before the info text.
		infoEnd := gutter + infoCharW*float64(utf8.RuneCountInString(info)) + 10
		mx := w - 10
		for i := len(t.Marks) - 1; i >= 0; i-- {
			mk := t.Marks[i]
			label := mk.Label
			if r := []rune(label); len(r) > 28 {
				label = string(r[:28]) + "…"
			}
			tw := markCharW*float64(utf8.RuneCountInString(label)) + 22
			mx -= tw
			if mx < infoEnd {
				break
			}
			link := cmpOr(mk.Anchor, t.Anchor)
			fmt.Fprintf(&body, `<a href="#%s"><rect x="%.1f" y="%.1f" width="%.1f" height="15" rx="7" class="mk-%s"><title>%s</title></rect><text x="%.1f" y="%.1f" class="mt">%s</text></a>`,
				esc(link), mx, y+3.5, tw-4, esc(mk.Kind), esc(mk.Kind+": "+mk.Label+" "+mk.Text), mx+9, y+14.5, esc(label))
		}
		y += headH
		if len(t.Calls) == 0 {
			y += 6
			body.WriteString(`</g>`)
			continue
		}
		// What is drawn on each lane, bars and then labels, so that a
		// label is drawn only where it covers nothing of its lane.
		type extent struct{ x0, x1 float64 }
		taken := make([][]extent, n)
		for i, c := range t.Calls {
			cs := c.EndUs - int64(c.DurationMs*1000)
			taken[lane[i]] = append(taken[lane[i]], extent{xOf(cs), max(xOf(c.EndUs), xOf(cs)+2)})
		}
		free := func(l int, a, b float64) bool {
			if a < gutter || b > w {
				return false
			}
			for _, sp := range taken[l] {
				if sp.x0 < b && a < sp.x1 {
					return false
				}
			}
			return true
		}
		for i, c := range t.Calls {
			cs := c.EndUs - int64(c.DurationMs*1000)
			x0, x1 := xOf(cs), xOf(c.EndUs)
			by := y + laneH*float64(lane[i])
			class := "c-" + c.Outcome
			if c.Permission == "deny" {
				class = "c-deny"
			}
			tip := fmt.Sprintf("%s · %s · %s", c.Tool, formatMs(c.DurationMs), c.Outcome)
			if c.FailureKind != "" {
				tip += " (" + c.FailureKind + ")"
			}
			switch {
			case !c.Ran:
				tip += " · did not run"
			case !c.Measured:
				tip += " · duration not measured"
			}
			if c.Prompted {
				tip += " · permission prompt"
				class += " prompted"
			}
			fmt.Fprintf(&body, `<a href="#%s"><rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" rx="2" class="%s"><title>%s</title></rect>`,
				esc(c.Anchor), x0, by+2, max(x1-x0, 2), laneH-4, esc(class), esc(tip))
			label := c.Tool + " " + formatMs(c.DurationMs)
			// Inside the bar when it fits, else beside it where there is room.
			tw := labelCharW * float64(utf8.RuneCountInString(label))
			right := max(x1, x0+2) + 4
			switch {
			case x1-x0 >= tw+10:
				fmt.Fprintf(&body, `<text x="%.1f" y="%.1f" class="cl in">%s</text></a>`, x0+5, by+12, esc(label))
			case free(lane[i], right, right+tw):
				taken[lane[i]] = append(taken[lane[i]], extent{right, right + tw})
				fmt.Fprintf(&body, `<text x="%.1f" y="%.1f" class="cl">%s</text></a>`, right, by+12, esc(label))
			case free(lane[i], x0-4-tw, x0-4):
				taken[lane[i]] = append(taken[lane[i]], extent{x0 - 4 - tw, x0 - 4})
				fmt.Fprintf(&body, `<text x="%.1f" y="%.1f" class="cl" text-anchor="end">%s</text></a>`, x0-4, by+12, esc(label))
			default:
				// No room: the bar's tooltip names it.
				body.WriteString(`</a>`)
			}
		}
		y += laneH*float64(n) + 6
		body.WriteString(`</g>`)
	}
	return template.HTML(fmt.Sprintf(`<svg class="timeline" viewBox="0 0 %.0f %.0f" role="img"><title>%s</title>%s</svg>`,
		w, y+2, esc("timeline of session "+d.ID), body.String())) // every string went through esc.
}
