package scenarios

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/retrace-dev/retrace/condition"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/results"
)

// MetricExpect is one threshold of expect.metrics, checked once over all
// of a scenario's runs after they ran.
type MetricExpect struct {
	Place
	// Source is the threshold as written.
	Source    string
	Threshold *Threshold
	// MinRuns is the fewest runs that recorded a session the threshold
	// decides on; with fewer it is inconclusive.
	MinRuns int
}

// metrics reads expect.metrics: a list of thresholds, each a string or a
// mapping {threshold: STRING, min_runs: N}.
func (p *parser) metrics(n *yaml.Node) []MetricExpect {
	if n.Kind != yaml.SequenceNode {
		p.at(n, `expect.metrics must be a list of thresholds, e.g. ["p95(bash) < 2s", "rate(failure, tool=bash) <= 0.1"]`)
		return nil
	}
	var out []MetricExpect
	for i, c := range n.Content {
		where := fmt.Sprintf("expect.metrics[%d]", i)
		m := MetricExpect{Place: p.place(c, where), MinRuns: 1}
		src := c
		if c.Kind == yaml.MappingNode {
			src = nil
			for _, f := range p.fields(c, where, "threshold", "min_runs") {
				switch f.name {
				case "threshold":
					src = f.val
				case "min_runs":
					if m.MinRuns = p.integer(f.val, where+".min_runs"); m.MinRuns < 1 {
						p.at(f.val, "%s.min_runs must be at least 1", where)
					}
				}
			}
			if src == nil {
				p.at(c, "%s: no threshold: give {threshold: \"mean(turns) <= 6\", min_runs: 5}", where)
				continue
			}
		}
		if src.Kind != yaml.ScalarNode || src.Tag != "!!str" {
			p.at(src, "%s must be a threshold such as \"p95(bash) < 2s\" (a string), or {threshold: ..., min_runs: N}", where)
			continue
		}
		m.Source = src.Value
		t, err := ParseThreshold(src.Value)
		if es, ok := err.(ExprErrors); ok {
			for _, e := range es {
				p.problems = append(p.problems, Problem{File: p.file, Line: src.Line, Col: scalarCol(src, e.Col), Msg: fmt.Sprintf("%s: %q: %s", where, src.Value, e.Msg)})
			}
			continue
		}
		m.Threshold = t
		out = append(out, m)
	}
	return out
}

// scalarCol is the column in the file of column col of a scalar's value:
// past the opening quote of a quoted one. A value over several lines, or
// with escapes, is located at its start.
func scalarCol(n *yaml.Node, col int) int {
	switch n.Style {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		return n.Column + col
	case yaml.LiteralStyle, yaml.FoldedStyle:
		return n.Column
	}
	return n.Column + col - 1
}

// thresholds checks each metric threshold over its scenario's runs in
// the suite's one database of recordings (runner.recordings), with the metrics package's views, so that the numbers are the
// ones retrace metrics reports.
func (r *runner) thresholds(ctx context.Context, suite []*Scenario, res *results.Results) error {
	need := false
	for _, s := range suite {
		need = need || len(s.Expect.Metrics) > 0
	}
	if !need {
		return nil
	}
	db, err := r.recordings(ctx, suite, res)
	if err != nil {
		return err
	}
	if db == nil {
		// No run recorded anything: every threshold is inconclusive.
		for i, s := range suite {
			for _, m := range s.Expect.Metrics {
				res.Scenarios[i].Thresholds = append(res.Scenarios[i].Thresholds, results.ThresholdResult{
					Expect: m.Place.String() + ": " + m.Source, Threshold: m.Threshold.String(), Verdict: results.VerdictInconclusive,
					Got: "inconclusive: no run recorded a session",
				})
			}
		}
		return nil
	}
	for i, s := range suite {
		var sessions []string
		for _, run := range res.Scenarios[i].Runs {
			if run.Session != "" && run.Error == "" {
				sessions = append(sessions, run.Session)
			}
		}
		if costs(s) {
			// The prices are the scenario's: set for its thresholds alone.
			if err := db.SetPrices(ctx, prices(s)); err != nil {
				return fmt.Errorf("eval: %s: %w", s.File, err)
			}
		}
		for _, m := range s.Expect.Metrics {
			tr, err := evalThreshold(ctx, db, m, sessions)
			if err != nil {
				return fmt.Errorf("eval: %s: %w", m.Place, err)
			}
			res.Scenarios[i].Thresholds = append(res.Scenarios[i].Thresholds, tr)
		}
	}
	return nil
}

// costs reports whether a threshold of s is over cost_usd.
func costs(s *Scenario) bool {
	for _, m := range s.Expect.Metrics {
		if m.Threshold.Subject == metrics.SubjectCostUSD {
			return true
		}
	}
	return false
}

// prices are the prices cost_usd charges a run of s at: the prices:
// section of its trusted configuration (config:), per model.
func prices(s *Scenario) metrics.Prices {
	out := metrics.Prices{}
	for model, p := range baseConfig(s).Prices {
		out[model] = metrics.Price{Input: p.Input, Output: p.Output, CacheRead: p.CacheRead, CacheWrite: p.CacheWrite}
	}
	return out
}

// unpriced says which models of the runs have no price, or "" when
// every one has: a cost over them is unknown, so the threshold is
// inconclusive.
func unpriced(ctx context.Context, db *metrics.DB, sessions []string) (string, error) {
	tab, err := db.Query(ctx, metrics.UnpricedSQL(inSessions("session", sessions)))
	if err != nil || len(tab.Rows) == 0 {
		return "", err
	}
	var names []string
	for _, row := range tab.Rows {
		model := "(none recorded)"
		if row[0] != nil {
			model = fmt.Sprint(row[0])
		}
		n, _ := metrics.ValueNumber(row[1])
		word := "responses"
		if n == 1 {
			word = "response"
		}
		names = append(names, fmt.Sprintf("%s (%g %s)", model, n, word))
	}
	return strings.Join(names, ", "), nil
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// inSessions is the SQL condition that keeps the rows of sessions.
func inSessions(col string, sessions []string) string {
	q := make([]string, len(sessions))
	for i, s := range sessions {
		q[i] = sqlString(s)
	}
	return col + " IN (" + strings.Join(q, ", ") + ")"
}

// rateVerb says what the calls rate(subject) counts did.
var rateVerb = map[string]string{
	"failure": "failed", "success": "succeeded", "lost": "were lost (neither tool_success nor tool_failure)",
	"truncated": "had their output truncated", "spilled": "spilled their output to a blob",
	"denied": "were denied permission", "prompted": "needed a permission prompt",
}

// calls names the tool calls a threshold is over: "bash calls".
func calls(t *Threshold) string {
	if tool := t.filter("tool"); tool != "" {
		return tool + " calls"
	}
	return "tool calls"
}

// samples names what an aggregate is computed over, for messages.
func samples(t *Threshold) string {
	switch t.Subject {
	case metrics.SubjectDuration:
		return strings.TrimSuffix(calls(t), "s") + " durations"
	case metrics.SubjectModelDuration:
		return "model response durations"
	case metrics.SubjectContextTokens:
		return "model responses' context tokens"
	case metrics.SubjectOutputTokens:
		return "model responses' output tokens"
	case metrics.SubjectTurns:
		return "turns"
	case metrics.SubjectCostUSD:
		return "costs in US dollars"
	}
	return "counts of " + calls(t)
}

// perRun reports whether the threshold aggregates one number per run.
func perRun(t *Threshold) bool {
	return t.Subject == metrics.SubjectTurns || t.Subject == metrics.SubjectToolCalls || t.Subject == metrics.SubjectCostUSD
}

func runsOf(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}

// formatValue writes a value in the threshold's unit.
func formatValue(t *Threshold, v float64) string {
	switch {
	case t.isDuration() && v >= 1000:
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "s"
	case t.isDuration():
		return strconv.FormatFloat(v, 'f', -1, 64) + "ms"
	case t.Func == metrics.FuncRate || t.Func == metrics.FuncMean:
		return strconv.FormatFloat(math.Round(v*1e4)/1e4, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// evalThreshold checks m over the runs that recorded sessions.
func evalThreshold(ctx context.Context, db *metrics.DB, m MetricExpect, sessions []string) (results.ThresholdResult, error) {
	t := m.Threshold
	tr := results.ThresholdResult{Expect: m.Place.String() + ": " + m.Source, Threshold: t.String(), Verdict: results.VerdictInconclusive}
	runs := runsOf(len(sessions))
	if len(sessions) < m.MinRuns {
		tr.Got = fmt.Sprintf("inconclusive: min_runs is %d and %s recorded a session; run it more (--repeat or repeat:)", m.MinRuns, runs)
		return tr, nil
	}
	if len(sessions) == 0 {
		tr.Got = "inconclusive: no run recorded a session"
		return tr, nil
	}
	if t.Subject == metrics.SubjectCostUSD {
		missing, err := unpriced(ctx, db, sessions)
		if err != nil {
			return tr, err
		}
		if missing != "" {
			tr.Got = fmt.Sprintf("inconclusive: no price for %s over %s; give it in the scenario's config: prices: {MODEL: {input_per_mtok: ..., output_per_mtok: ...}}", missing, runs)
			return tr, nil
		}
	}
	q := t.ValueSQL(inSessions("session", sessions))
	tab, err := db.Query(ctx, q)
	if err != nil {
		return tr, err
	}
	if len(tab.Rows) != 1 {
		return tr, fmt.Errorf("threshold query returned %d rows", len(tab.Rows))
	}
	row := tab.Rows[0]
	var v float64
	switch t.Func {
	case metrics.FuncCount:
		v, _ = metrics.ValueNumber(row[0])
		filters := ""
		for _, f := range t.Filters {
			filters += fmt.Sprintf(" with %s=%s", f.Key, f.Value)
		}
		tr.Got = fmt.Sprintf("%s %s events%s over %s", formatValue(t, v), t.Subject, filters, runs)
	case metrics.FuncRate:
		den, _ := metrics.ValueNumber(row[0])
		num, _ := metrics.ValueNumber(row[1])
		if den == 0 {
			tr.Got = fmt.Sprintf("inconclusive: no %s over %s, so the rate has no denominator", calls(t), runs)
			return tr, nil
		}
		v = num / den
		what := ""
		if k := t.filter("failure_kind"); k != "" {
			what = " with " + k
		}
		tr.Got = fmt.Sprintf("%s: %g of %g %s (the denominator) %s%s, over %s", formatValue(t, v), num, den, calls(t), rateVerb[t.Subject], what, runs)
	default:
		n, _ := metrics.ValueNumber(row[0])
		if n == 0 && t.Subject == metrics.SubjectDuration {
			// A call that did not run has no duration: the threshold
			// cannot pass for calls that never ran (all denied, say).
			tr.Got = fmt.Sprintf("inconclusive: no %s ran over %s, so there is no duration to compare", strings.TrimSuffix(calls(t), "s"), runs)
			return tr, nil
		}
		if n == 0 {
			tr.Got = fmt.Sprintf("inconclusive: no %s over %s", samples(t), runs)
			return tr, nil
		}
		if int(n) < t.Func.MinSamples() {
			tr.Got = fmt.Sprintf("inconclusive: %s needs at least %d samples, and %s gave %g (%s); run it more (--repeat or repeat:)", t.Func, t.Func.MinSamples(), runs, n, samples(t))
			return tr, nil
		}
		var ok bool
		if v, ok = metrics.ValueNumber(row[1]); !ok {
			tr.Got = fmt.Sprintf("inconclusive: no %s over %s", samples(t), runs)
			return tr, nil
		}
		tr.Got = fmt.Sprintf("%s of %g %s over %s is %s", t.Func, n, samples(t), runs, formatValue(t, v))
		if perRun(t) {
			tr.Got = fmt.Sprintf("%s of the %s of %s is %s", t.Func, samples(t), runs, formatValue(t, v))
		}
	}
	tr.Value = &v
	tr.Verdict = results.VerdictFail
	if t.decide(v) == condition.Pass {
		tr.Verdict = results.VerdictPass
		return tr, nil
	}
	at, err := thresholdAt(ctx, db, t, sessions)
	tr.At = at
	return tr, err
}

// thresholdAt finds the trajectory line that shows a failed threshold:
// the first call a rate counts (its tool_failure for a failure rate; for
// a rate too low, the first call it does not count), the first event a
// count counts, or the tool_end of the slowest call; "" for the
// aggregates of runs and model responses.
func thresholdAt(ctx context.Context, db *metrics.DB, t *Threshold, sessions []string) (string, error) {
	if t.PerSession() {
		return "", nil
	}
	where := inSessions("session", sessions)
	if v := t.filter("tool"); v != "" {
		where += " AND tool = " + sqlString(v)
	}
	var q string
	switch {
	case t.Func == metrics.FuncRate:
		typ, cond := "tool_call", t.RateCond()
		switch {
		case t.Op == ">" || t.Op == ">=":
			// Too low a rate shows in a call it did not count.
			cond = "NOT coalesce(" + cond + ", false)"
		case t.Subject == "failure":
			typ = "tool_failure"
		}
		q = fmt.Sprintf(`SELECT e.file, e.line FROM events e JOIN (SELECT session, tool_use_id FROM tool_calls WHERE %s AND %s) c
ON e.session = c.session AND e.tool_use_id = c.tool_use_id WHERE e.type = %s ORDER BY e.session, e.seq LIMIT 1`, where, cond, sqlString(typ))
	case t.Func == metrics.FuncCount:
		conds := inSessions("session", sessions)
		for _, f := range t.Filters {
			conds += fmt.Sprintf(" AND %s = %s", f.Key, sqlString(f.Value))
		}
		q = fmt.Sprintf("SELECT file, line FROM events WHERE %s AND type = %s ORDER BY session, seq LIMIT 1", conds, sqlString(t.Subject))
	case t.Subject == metrics.SubjectDuration:
		q = fmt.Sprintf(`SELECT e.file, e.line FROM events e JOIN (SELECT session, tool_use_id, duration_ms FROM tool_calls WHERE %s AND duration_ms IS NOT NULL) c
ON e.session = c.session AND e.tool_use_id = c.tool_use_id WHERE e.type = 'tool_end' ORDER BY c.duration_ms DESC, e.session, e.seq LIMIT 1`, where)
	default:
		return "", nil
	}
	tab, err := db.Query(ctx, q)
	if err != nil || len(tab.Rows) == 0 {
		return "", err
	}
	line, ok := metrics.ValueNumber(tab.Rows[0][1])
	if !ok {
		return fmt.Sprint(tab.Rows[0][0]), nil
	}
	return fmt.Sprintf("%v:%d", tab.Rows[0][0], int(line)), nil
}
