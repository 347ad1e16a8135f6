package scenarios

import (
	"github.com/retrace-dev/retrace/condition"
	"github.com/retrace-dev/retrace/metrics"
)

// A threshold is one line of expect.metrics: an aggregate over a
// scenario's runs, a comparison and a number. It is a condition of
// package condition, written for condition.Threshold: the grammar and its
// decision are the ones retrace diff's gates use, documented there (and
// in docs/conditions.md); doc.go says what each function and subject
// means over a scenario's runs.

// Func is a threshold's aggregate function.
type Func = metrics.Func

// Threshold is one parsed metric threshold: a condition whose limit is a
// number (Limit, in the aggregate's unit: milliseconds for a duration, a
// fraction for a rate).
type Threshold struct {
	*condition.Condition
}

// ThresholdFilter is one key=value of an aggregate.
type ThresholdFilter = metrics.Filter

// filter returns the value of key, or "".
func (t *Threshold) filter(key string) string { return t.Filter(key) }

// isDuration reports whether the aggregate is a time in milliseconds.
func (t *Threshold) isDuration() bool { return t.IsDuration() }

// decide decides the threshold on a value computed over the runs.
func (t *Threshold) decide(v float64) condition.Status {
	return t.Decide(condition.Point(v), t.Limit)
}

// ExprError is one thing wrong in a threshold, at a column of it (from 1).
type ExprError = metrics.ExprError

// ExprErrors lists every problem of one threshold.
type ExprErrors = metrics.ExprErrors

// ErrThreshold is wrapped by the errors of ParseThreshold: it is the
// metrics package's error of a bad expression.
var ErrThreshold = metrics.ErrExpr

// ParseThreshold parses one threshold (condition.Parse for
// condition.Threshold). The error is ExprErrors, every problem at its
// column.
func ParseThreshold(src string) (*Threshold, error) {
	c, err := condition.Parse(src, condition.Threshold)
	if err != nil {
		return nil, err
	}
	return &Threshold{Condition: c}, nil
}

// countKeys are the columns of the events view count() may filter on.
var countKeys = metrics.CountKeys()
