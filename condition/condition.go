package condition

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/stats"
)

// Use says where a condition is written, which decides what it may say.
type Use int

// The uses.
const (
	// Threshold is an eval scenario's expect.metrics entry: an aggregate
	// against a number.
	Threshold Use = iota
	// Gate is a retrace diff --gate: a pN, mean or rate against a number
	// or the base side, or one of the "no ..." forms.
	Gate
)

// word is how a use is named in messages.
func (u Use) word() string {
	if u == Gate {
		return "gate"
	}
	return "threshold"
}

// Kind is what a condition checks. The set is closed.
type Kind string

// The kinds.
const (
	// KindMetric compares an aggregate with a limit.
	KindMetric Kind = "metric"
	// KindNoNewDetector fails on new detector findings of a severity or
	// worse (a gate only).
	KindNoNewDetector Kind = "no_new_detector"
	// KindNoRegressed fails on any regressed row or scenario (a gate only).
	KindNoRegressed Kind = "no_regressed"
)

// Condition is one parsed threshold or gate.
type Condition struct {
	// Kind is what it checks.
	Kind Kind
	// Aggregate is what a metric condition compares; nil for the other
	// kinds. Its fields and methods (Func, Subject, ValueSQL, ...) are
	// the condition's.
	*metrics.Aggregate
	// Op is the comparison: <, <=, >, >=, == or !=.
	Op string
	// Base says the right-hand side is Factor*base + Offset; else it is
	// Limit. Offset and Limit are in the aggregate's unit (milliseconds
	// for a duration, a fraction for a rate).
	Base   bool
	Factor float64
	Offset float64
	Limit  float64
	// Number is the number as written (the limit, or the offset from
	// base), for String; Minus says the offset was written with "-".
	Number metrics.Number
	Minus  bool
	// Severity is a no-new-detector condition's: findings of it or worse
	// fail.
	Severity detectors.Severity
}

// String writes the condition in canonical form; it parses to an equal
// Condition.
func (c *Condition) String() string {
	switch c.Kind {
	case KindNoNewDetector:
		return "no new detector " + string(c.Severity)
	case KindNoRegressed:
		return "no regressed"
	}
	rhs := c.Number.String()
	if c.Base {
		rhs = "base"
		if c.Factor != 1 {
			rhs = strconv.FormatFloat(c.Factor, 'f', -1, 64) + "*base"
		}
		if c.Number.Unit != "" || c.Number.Value != 0 {
			sign := "+"
			if c.Minus {
				sign = "-"
			}
			rhs += " " + sign + " " + c.Number.String()
		}
	}
	return c.Aggregate.String() + " " + c.Op + " " + rhs
}

// Parse parses one condition written for use. A syntax error stops the
// parse; the meaning (function, subject, filters, units) is then checked
// in full, so that every such problem is listed. The error is
// metrics.ExprErrors, wrapping metrics.ErrExpr.
func Parse(src string, use Use) (*Condition, error) {
	p := metrics.NewExprParser(src)
	c := &Condition{Kind: KindMetric, Factor: 1}
	if use == Gate && p.Tok.Kind == "name" && p.Tok.Text == "no" {
		p.Next()
		parseNo(p, c)
		if len(p.Errs) > 0 {
			return nil, p.Errs
		}
		return c, nil
	}
	if use == Threshold && p.Tok.Kind == "name" && p.Tok.Text == "no" {
		p.Errorf(p.Tok.Col, `"no ..." is a gate of retrace diff (--gate), not a threshold`)
		return nil, p.Errs
	}
	a := p.Aggregate()
	var num metrics.Number
	factorCol := 0
	if len(p.Errs) == 0 {
		want := "a comparison: <, <=, >, >=, == or !="
		if use == Gate {
			want = "a comparison: <, <=, > or >="
		}
		op, ok := p.Expect("op", want)
		if ok && use == Gate && (op.Text == "==" || op.Text == "!=") {
			p.Errorf(op.Col, "a gate compares with <, <=, > or >=; %s cannot be decided from an interval", op.Text)
		}
		c.Op = op.Text
		switch {
		case ok && use == Gate:
			num, factorCol = parseRHS(p, c)
		case ok && p.Tok.Kind == "name" && p.Tok.Text == "base":
			p.Errorf(p.Tok.Col, "a threshold compares with a number; base is retrace diff's (--gate)")
		case ok:
			num, _ = p.Number("a number to compare with")
			if p.Tok.Kind == "*" {
				p.Errorf(p.Tok.Col, "a threshold compares with a number; k*base is retrace diff's (--gate)")
			}
		}
	}
	if len(p.Errs) == 0 && p.Tok.Kind != "eof" {
		p.Errorf(p.Tok.Col, "want the end of the %s, got %s", use.word(), p.Tok.Describe())
	}
	if len(p.Errs) == 0 && p.CheckAggregate(a) {
		if use == Gate && a.Func != metrics.FuncRate && a.Func != metrics.FuncMean && a.Func.Quantile() == 0 {
			p.Errorf(1, "a gate compares a pN, mean or rate; %s cannot be compared across runs of different sizes", a.Func)
		}
		switch {
		case !c.Base:
			c.Limit, _ = p.ConvertNumber(a, num, true)
		case num.Col > 0:
			c.Offset, _ = p.ConvertNumber(a, num, false)
			if c.Minus {
				c.Offset = -c.Offset
			}
		}
		if c.Base && c.Factor <= 0 {
			p.Errorf(factorCol, "the factor of base must be above 0")
		}
	}
	if len(p.Errs) > 0 {
		return nil, p.Errs
	}
	c.Aggregate, c.Number = a, num
	return c, nil
}

// parseNo reads the rest of "no new detector SEVERITY" or "no regressed".
func parseNo(p *metrics.ExprParser, c *Condition) {
	w, ok := p.Expect("name", `"new detector" or "regressed" after no`)
	if !ok {
		return
	}
	switch w.Text {
	case "regressed":
		c.Kind = KindNoRegressed
	case "new":
		c.Kind = KindNoNewDetector
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
		c.Severity = sev
	default:
		p.Errorf(w.Col, `want "new detector" or "regressed" after no, got %s`, w.Describe())
		return
	}
	if p.Tok.Kind != "eof" {
		p.Errorf(p.Tok.Col, "want the end of the gate, got %s", p.Tok.Describe())
	}
}

// parseRHS reads number[unit] or [number "*"] base [± number[unit]].
func parseRHS(p *metrics.ExprParser, c *Condition) (metrics.Number, int) {
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
		c.Factor = n.Value
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
	c.Base = true
	if p.Tok.Kind != "+" && p.Tok.Kind != "-" {
		return metrics.Number{}, factorCol
	}
	c.Minus = p.Tok.Kind == "-"
	p.Next()
	n, _ := p.Number("a number after + or -")
	return n, factorCol
}

// Status is what deciding a condition gives. The set is closed.
type Status string

// The statuses.
const (
	Pass         Status = "pass"
	Fail         Status = "fail"
	Inconclusive Status = "inconclusive"
)

// LimitAt returns the limit the compared value is held to when the base
// side's value is base: (Factor−1)·base + Offset against base (the value
// compared is then the difference candidate − base), else Limit.
func (c *Condition) LimitAt(base float64) float64 {
	if c.Base {
		return (c.Factor-1)*base + c.Offset
	}
	return c.Limit
}

// Holds compares v with limit by the condition's comparison.
func (c *Condition) Holds(v, limit float64) bool {
	switch c.Op {
	case "<":
		return v < limit
	case "<=":
		return v <= limit
	case ">":
		return v > limit
	case ">=":
		return v >= limit
	case "==":
		return v == limit
	}
	return v != limit
}

// Decide decides the condition on ci, an interval of the compared value
// (a single value is an interval from it to itself), against limit: pass
// when every value in the interval holds, fail when none does, else
// inconclusive. An interval with no samples behind it (not Valid) is
// inconclusive, never a pass.
func (c *Condition) Decide(ci stats.Interval, limit float64) Status {
	if !ci.Valid() {
		return Inconclusive
	}
	outside := limit < ci.Lo || limit > ci.Hi
	exact := ci.Lo == limit && ci.Hi == limit
	switch c.Op {
	case "==":
		return decided(exact, outside)
	case "!=":
		return decided(outside, exact)
	}
	// The other comparisons are monotonic: the ends decide.
	lo, hi := c.Holds(ci.Lo, limit), c.Holds(ci.Hi, limit)
	return decided(lo && hi, !lo && !hi)
}

// decided is Pass when pass, Fail when fail, else Inconclusive.
func decided(pass, fail bool) Status {
	switch {
	case pass:
		return Pass
	case fail:
		return Fail
	}
	return Inconclusive
}

// Point is the interval of one known value, for Decide.
func Point(v float64) stats.Interval { return stats.Interval{Lo: v, Hi: v, Level: 1} }
