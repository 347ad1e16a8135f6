package diff

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/scenarios"
	"github.com/retrace-dev/retrace/stats"
)

// A gate is one --gate: a condition on the diff that fails the command
// (exit 3) or cannot be decided with the data given (exit 4). The
// grammar (the aggregate is metrics.Aggregate's):
//
//	gate       = aggregate comparison rhs | "no new detector" severity | "no regressed"
//	comparison = "<" | "<=" | ">" | ">="
//	rhs        = number [unit] | [number "*"] "base" [ ("+" | "-") number [unit] ]
//	severity   = "error" | "warning" | "info"
//
// A gate's aggregate is a pN, mean or rate. Spaces may stand between
// tokens, but not between a number and its unit.

// The kinds of gate.
const (
	GateMetric      = "metric"
	GateNoNew       = "no_new_detector"
	GateNoRegressed = "no_regressed"
)

// Gate is one parsed gate.
type Gate struct {
	// Kind is metric, no_new_detector or no_regressed.
	Kind string
	// Aggregate, Op and the right-hand side are a metric gate's.
	Aggregate *metrics.Aggregate
	Op        string
	// Base says the right-hand side is Factor*base + Offset; else it is
	// Limit. Offset and Limit are in the aggregate's unit; Number holds
	// the number as written, for String.
	Base   bool
	Factor float64
	Offset float64
	Limit  float64
	Number metrics.Number
	// Minus says the offset was written with "-".
	Minus bool
	// Severity is a no_new_detector gate's: findings of it or worse fail.
	Severity detectors.Severity
}

// String writes the gate in canonical form; it parses to an equal Gate.
func (g *Gate) String() string {
	switch g.Kind {
	case GateNoNew:
		return "no new detector " + string(g.Severity)
	case GateNoRegressed:
		return "no regressed"
	}
	rhs := g.Number.String()
	if g.Base {
		rhs = "base"
		if g.Factor != 1 {
			rhs = strconv.FormatFloat(g.Factor, 'f', -1, 64) + "*base"
		}
		if g.Number.Unit != "" || g.Number.Value != 0 {
			sign := "+"
			if g.Minus {
				sign = "-"
			}
			rhs += " " + sign + " " + g.Number.String()
		}
	}
	return g.Aggregate.String() + " " + g.Op + " " + rhs
}

// ParseGate parses one gate; the error is metrics.ExprErrors, each
// problem at its column.
func ParseGate(src string) (*Gate, error) {
	p := metrics.NewExprParser(src)
	g := &Gate{Factor: 1}
	if p.Tok.Kind == "name" && p.Tok.Text == "no" {
		p.Next()
		parseNo(p, g)
		if len(p.Errs) > 0 {
			return nil, p.Errs
		}
		return g, nil
	}
	g.Kind = GateMetric
	a := p.Aggregate()
	var num metrics.Number
	factorCol := 0
	if len(p.Errs) == 0 {
		op, ok := p.Expect("op", "a comparison: <, <=, > or >=")
		if ok && (op.Text == "==" || op.Text == "!=") {
			p.Errorf(op.Col, "a gate compares with <, <=, > or >=; %s cannot be decided from an interval", op.Text)
		}
		g.Op = op.Text
		if ok {
			num, factorCol = parseRHS(p, g)
		}
	}
	if len(p.Errs) == 0 && p.Tok.Kind != "eof" {
		p.Errorf(p.Tok.Col, "want the end of the gate, got %s", p.Tok.Describe())
	}
	if len(p.Errs) == 0 && p.CheckAggregate(a) {
		if a.Func != metrics.FuncRate && a.Func != metrics.FuncMean && a.Func.Quantile() == 0 {
			p.Errorf(1, "a gate compares a pN, mean or rate; %s cannot be compared across runs of different sizes", a.Func)
		}
		switch {
		case !g.Base:
			g.Limit, _ = p.ConvertNumber(a, num, true)
		case num.Col > 0:
			g.Offset, _ = p.ConvertNumber(a, num, false)
			if g.Minus {
				g.Offset = -g.Offset
			}
		}
		if g.Base && g.Factor <= 0 {
			p.Errorf(factorCol, "the factor of base must be above 0")
		}
	}
	if len(p.Errs) > 0 {
		return nil, p.Errs
	}
	g.Aggregate, g.Number = a, num
	return g, nil
}

// parseNo reads the rest of "no new detector SEVERITY" or "no regressed".
func parseNo(p *metrics.ExprParser, g *Gate) {
	w, ok := p.Expect("name", `"new detector" or "regressed" after no`)
	if !ok {
		return
	}
	switch w.Text {
	case "regressed":
		g.Kind = GateNoRegressed
	case "new":
		g.Kind = GateNoNew
		if d, ok := p.Expect("name", `"detector" after no new`); !ok {
			return
		} else if d.Text != "detector" {
			p.Errorf(d.Col, `want "detector" after no new, got %s`, d.Describe())
			return
		}
		s, ok := p.Expect("name", "a severity: error, warning or info")
		if !ok {
			return
		}
		sev, err := detectors.ParseSeverity(s.Text)
		if err != nil {
			p.Errorf(s.Col, "unknown severity %q: use error, warning or info", s.Text)
			return
		}
		g.Severity = sev
	default:
		p.Errorf(w.Col, `want "new detector" or "regressed" after no, got %s`, w.Describe())
		return
	}
	if p.Tok.Kind != "eof" {
		p.Errorf(p.Tok.Col, "want the end of the gate, got %s", p.Tok.Describe())
	}
}

// parseRHS reads number[unit] or [number "*"] base [± number[unit]].
func parseRHS(p *metrics.ExprParser, g *Gate) (metrics.Number, int) {
	factorCol := p.Tok.Col
	if p.Tok.Kind == "number" {
		n, ok := p.Number("a number, or an expression in base such as 1.2*base")
		if !ok {
			return n, 0
		}
		if p.Tok.Kind != "*" {
			return n, 0
		}
		if n.Unit != "" {
			p.Errorf(n.UnitCol, "the factor of base takes no unit")
			return n, 0
		}
		p.Next()
		g.Factor = n.Value
	}
	b, ok := p.Expect("name", "base, or a number")
	if !ok {
		return metrics.Number{}, 0
	}
	if b.Text != "base" {
		msg := fmt.Sprintf("want base, got %s", b.Describe())
		if strings.HasPrefix(b.Text, "base") {
			msg += "; put spaces around - (base - 5ms)"
		}
		p.Errorf(b.Col, "%s", msg)
		return metrics.Number{}, 0
	}
	g.Base = true
	if p.Tok.Kind != "+" && p.Tok.Kind != "-" {
		return metrics.Number{}, factorCol
	}
	g.Minus = p.Tok.Kind == "-"
	p.Next()
	n, _ := p.Number("a number after + or -")
	return n, factorCol
}

// check decides the gate on the result.
func (g *Gate) check(res *Result, b, c *side, opts Options) GateResult {
	gr := GateResult{Gate: g.String(), Status: GatePass}
	switch g.Kind {
	case GateNoNew:
		n := 0
		for _, f := range res.Findings.New {
			if f.Severity.Rank() >= g.Severity.Rank() {
				n++
			}
		}
		gr.Detail = fmt.Sprintf("%d new findings of severity %s or worse", n, g.Severity)
		if n > 0 {
			gr.Status = GateFail
		}
		return gr
	case GateNoRegressed:
		// Scenarios first: a scenario that broke is the plainest
		// regression there is, and needs no statistics when scripted.
		var names []string
		for _, n := range res.RegressedScenarios() {
			names = append(names, "scenario "+n)
		}
		for _, r := range res.Rows {
			if r.Verdict == VerdictRegressed {
				names = append(names, r.Metric)
			}
		}
		if res.Paired != nil && res.Paired.Verdict == VerdictRegressed {
			names = append(names, "paired scenarios (McNemar)")
		}
		undecided := 0
		if res.Scenarios != nil {
			undecided = res.Scenarios.Count(scenarios.ChangeInconclusive)
		}
		switch {
		case len(names) > 0:
			gr.Status = GateFail
			gr.Detail = fmt.Sprintf("%d regressed: %s", len(names), strings.Join(names, ", "))
		case undecided > 0:
			gr.Status = GateInconclusive
			gr.Detail = fmt.Sprintf("no row or scenario regressed, but %d live scenarios went from pass to fail within chance; more runs would decide", undecided)
		default:
			gr.Detail = "no row or scenario regressed"
		}
		return gr
	}
	name := g.Aggregate.String()
	var row *Row
	for i := range res.Rows {
		if res.Rows[i].Metric == name {
			row = &res.Rows[i]
		}
	}
	if row == nil {
		gr.Status = GateInconclusive
		gr.Detail = name + " has too little data"
		for _, s := range res.Skipped {
			if s.Metric == name {
				gr.Detail = name + " was skipped: " + s.Reason
			}
		}
		return gr
	}
	// The interval of what is compared, and the limit it is compared with.
	var ci stats.Interval
	var limit float64
	what := ""
	if g.Base {
		ci, limit = row.CI, (g.Factor-1)*row.Base+g.Offset
		what = fmt.Sprintf("the difference %s, interval [%s, %s], against %s (the gate at base %s)", FormatValue(*row, row.Diff),
			FormatValue(*row, ci.Lo), FormatValue(*row, ci.Hi), FormatValue(*row, limit), FormatValue(*row, row.Base))
	} else {
		ci, limit = candInterval(g.Aggregate, c.c.series[name], opts), g.Limit
		what = fmt.Sprintf("the candidate's %s, interval [%s, %s], against %s", FormatValue(*row, row.Cand),
			FormatValue(*row, ci.Lo), FormatValue(*row, ci.Hi), FormatValue(*row, limit))
	}
	below := g.Op == "<" || g.Op == "<="
	strict := g.Op == "<" || g.Op == ">"
	holds := func(v float64) bool {
		switch {
		case below && strict:
			return v < limit
		case below:
			return v <= limit
		case strict:
			return v > limit
		}
		return v >= limit
	}
	switch {
	case !ci.Valid():
		gr.Status = GateInconclusive
		gr.Detail = what + ": no interval"
		return gr
	case holds(ci.Lo) && holds(ci.Hi):
		gr.Detail = what + ": the whole interval holds"
	case !holds(ci.Lo) && !holds(ci.Hi):
		gr.Status = GateFail
		gr.Detail = what + ": the whole interval fails"
	default:
		gr.Status = GateInconclusive
		half, mid := (ci.Hi-ci.Lo)/2, (ci.Hi+ci.Lo)/2
		if d := math.Abs(mid - limit); d > 0 {
			// A half-width shrinks as 1/√n: n must grow by (h/d)².
			gr.MoreRuns = math.Ceil((half/d)*(half/d)*10) / 10
			gr.Detail = fmt.Sprintf("%s: the interval straddles the limit; about %.1f× the runs on each side would decide it", what, gr.MoreRuns)
		} else {
			gr.Detail = what + ": the interval is centred on the limit; no number of runs is sure to decide it"
		}
	}
	return gr
}

// candInterval is the interval of the candidate's value alone, for a gate
// against a constant: Wilson on the design-effect effective counts for a
// rate, the session bootstrap for a quantile or a mean.
func candInterval(a *metrics.Aggregate, s *series, opts Options) stats.Interval {
	level := 1 - opts.Alpha
	seed := seedOf(opts.Seed, "gate "+a.String())
	zero := [][]float64{{0}}
	switch {
	case a.Func == metrics.FuncRate:
		cs := clusters(s)
		h, n := s.sums()
		neff := stats.EffectiveN(cs)
		if n == 0 || math.IsNaN(neff) {
			return stats.Wilson(h, n, level)
		}
		ne := int(math.Round(neff))
		return stats.Wilson(int(math.Round(float64(h)/float64(n)*float64(ne))), ne, level)
	case a.Func.Quantile() > 0:
		_, ci := stats.BootstrapQuantileDiffClustered(zero, s.values, a.Func.Quantile(), opts.Resamples, seed, level)
		return ci
	}
	_, ci := bootstrapMeanDiff(zero, s.values, opts.Resamples, seed, level)
	return ci
}
