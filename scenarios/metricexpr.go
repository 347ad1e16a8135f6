package scenarios

import (
	"fmt"
	"strconv"

	"github.com/retrace-dev/retrace/metrics"
)

// A threshold is one line of expect.metrics: an aggregate over a
// scenario's runs, a comparison and a number. The aggregate is the
// metrics package's (metrics.ParseAggregate), the one retrace diff's rows
// and gates name. The grammar (doc.go says what each function and subject
// means):
//
//	threshold  = aggregate comparison number [unit]
//	aggregate  = function "(" subject { "," key "=" value } ")"
//	function   = "p50" | "p90" | "p95" | "p99" | "mean" | "min" | "max" | "rate" | "count"
//	comparison = "<" | "<=" | ">" | ">=" | "==" | "!="
//	number     = digit { digit } [ "." digit { digit } ]
//	unit       = "ms" | "s" | "m"   (a duration)   | "%"   (a rate)
//	subject, key, value = a name: a letter or _ then letters, digits, _ . : -
//
// Spaces may stand between tokens, but not between a number and its unit.

// Func is a threshold's aggregate function.
type Func = metrics.Func

// Threshold is one parsed metric threshold.
type Threshold struct {
	metrics.Aggregate
	Op string
	// Limit is the number compared with, in the aggregate's unit:
	// milliseconds for a duration, a fraction for a rate.
	Limit float64
	// Number is the number as written, in Unit; Unit is the unit as
	// written ("" when none).
	Number float64
	Unit   string
}

// ThresholdFilter is one key=value of an aggregate.
type ThresholdFilter = metrics.Filter

// filter returns the value of key, or "".
func (t *Threshold) filter(key string) string { return t.Filter(key) }

// isDuration reports whether the aggregate is a time in milliseconds.
func (t *Threshold) isDuration() bool { return t.IsDuration() }

// String writes the threshold back in canonical form; it parses to an
// equal Threshold.
func (t *Threshold) String() string {
	return fmt.Sprintf("%s %s %s%s", t.Aggregate.String(), t.Op, strconv.FormatFloat(t.Number, 'f', -1, 64), t.Unit)
}

// holds compares a value with the limit.
func (t *Threshold) holds(v float64) bool {
	switch t.Op {
	case "<":
		return v < t.Limit
	case "<=":
		return v <= t.Limit
	case ">":
		return v > t.Limit
	case ">=":
		return v >= t.Limit
	case "==":
		return v == t.Limit
	}
	return v != t.Limit
}

// ExprError is one thing wrong in a threshold, at a column of it (from 1).
type ExprError = metrics.ExprError

// ExprErrors lists every problem of one threshold.
type ExprErrors = metrics.ExprErrors

// ErrThreshold is wrapped by the errors of ParseThreshold: it is the
// metrics package's error of a bad expression.
var ErrThreshold = metrics.ErrExpr

// ParseThreshold parses one threshold. A syntax error stops the parse;
// the meaning (function, subject, filters, unit) is then checked in
// full, so that every such problem is listed. The error is ExprErrors.
func ParseThreshold(src string) (*Threshold, error) {
	p := metrics.NewExprParser(src)
	t := &Threshold{}
	a := p.Aggregate()
	var num metrics.Number
	if len(p.Errs) == 0 {
		if op, ok := p.Expect("op", "a comparison: <, <=, >, >=, == or !="); ok {
			t.Op = op.Text
			if num, ok = p.Number("a number to compare with"); ok && p.Tok.Kind != "eof" {
				p.Errorf(p.Tok.Col, "want the end of the threshold, got %s", p.Tok.Describe())
			}
		}
	}
	if len(p.Errs) == 0 {
		if p.CheckAggregate(a) {
			t.Limit, _ = p.ConvertNumber(a, num, true)
		}
	}
	if len(p.Errs) > 0 {
		return nil, p.Errs
	}
	t.Aggregate, t.Number, t.Unit = *a, num.Value, num.Unit
	return t, nil
}

// countKeys are the columns of the events view count() may filter on.
var countKeys = metrics.CountKeys()
