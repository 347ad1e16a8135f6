package metrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseAggregateReadsEveryForm(t *testing.T) {
	cases := []struct{ name, src, canonical string }{
		{"a tool's name is its durations", "p95(bash)", "p95(duration, tool=bash)"},
		{"a failure rate among executed calls", "rate(failure, tool=bash, among=executed)", "rate(failure, tool=bash, among=executed)"},
		{"among=calls is the default and left out", "rate(failure, among=calls)", "rate(failure)"},
		{"completion is a rate of sessions", "rate(completed)", "rate(completed)"},
		{"defense triggers per session", "mean(defense_triggers)", "mean(defense_triggers)"},
		{"spaces are optional", " mean( turns ) ", "mean(turns)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := ParseAggregate(c.src)
			if err != nil {
				t.Fatalf("ParseAggregate(%q): %v", c.src, err)
			}
			if a.String() != c.canonical {
				t.Errorf("String() = %q, want %q", a.String(), c.canonical)
			}
		})
	}
	for src, want := range map[string]string{
		"rate(completed, tool=bash)":        "rate(completed) takes no filter",
		"rate(lost, among=executed)":        `unknown filter "among"`,
		"rate(failure, among=everything)":   "among=everything",
		"p95(bash) < 2s":                    "col 11: want the end of the aggregate",
		"mean(defense_triggers, tool=bash)": "takes no filter",
	} {
		_, err := ParseAggregate(src)
		if err == nil || !errors.Is(err, ErrExpr) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAggregate(%q) = %v, want an ErrExpr saying %q", src, err, want)
		}
	}
}

// TestAnAggregatesValueIsItsSamplesAggregated checks, over a synth corpus
// in the real DuckDB, that ValueSQL and SamplesSQL agree: a rate's
// numerator and denominator are the sums of its per-session hits and
// totals, among=executed counts only success and failure, a percentile is
// quantile_cont of the samples, and a per-session count has one sample
// per session.
func TestAnAggregatesValueIsItsSamplesAggregated(t *testing.T) {
	dir := t.TempDir()
	writeCorpus(t, dir, 30)
	db := open(t, Options{}, dir)
	ctx := context.Background()
	one := func(q string) []any {
		t.Helper()
		tab, err := db.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if len(tab.Rows) != 1 {
			t.Fatalf("%s: %d rows", q, len(tab.Rows))
		}
		return tab.Rows[0]
	}
	cond := "session IN (SELECT session FROM sessions ORDER BY session LIMIT 20)"
	for _, src := range []string{"rate(failure, tool=bash, among=executed)", "rate(failure)", "rate(completed)", "rate(prompted)"} {
		a, err := ParseAggregate(src)
		if err != nil {
			t.Fatal(err)
		}
		v := one(a.ValueSQL(cond))
		s := one("SELECT sum(total), sum(hits), count(*) FROM (" + a.SamplesSQL(cond) + ")")
		if fmt.Sprint(v[0]) != fmt.Sprint(s[0]) || fmt.Sprint(v[1]) != fmt.Sprint(s[1]) {
			t.Errorf("%s: value (den, num) %v, samples sum to %v", src, v, s)
		}
	}
	// The calls that ran, counted from the raw events: a success, a
	// failure inside the tool, or an abort after a measured start.
	exec := one(`SELECT count(*) FROM tool_calls c LEFT JOIN raw_tool_end e USING (session, tool_use_id)
WHERE c.tool = 'bash' AND (c.outcome = 'success' OR c.failure_kind IN ('tool_error', 'timeout', 'exception')
  OR (c.failure_kind = 'aborted' AND NOT coalesce(e.not_run, false) AND e.duration_ms > 0)) AND ` + cond)
	all := one("SELECT count(*) FROM tool_calls WHERE tool = 'bash' AND " + cond)
	a, _ := ParseAggregate("rate(failure, tool=bash, among=executed)")
	if v := one(a.ValueSQL(cond)); fmt.Sprint(v[0]) != fmt.Sprint(exec[0]) {
		t.Errorf("among=executed counts %v calls, the executed bash calls are %v (all: %v)", v[0], exec[0], all[0])
	}
	p95, _ := ParseAggregate("p95(read)")
	v := one(p95.ValueSQL(cond))
	q := one("SELECT count(duration_ms), round(quantile_cont(duration_ms, 0.95), 3) FROM tool_calls WHERE tool = 'read' AND duration_ms IS NOT NULL AND " + cond)
	if fmt.Sprint(v) != fmt.Sprint(q) {
		t.Errorf("p95(read) = %v, the latency view's own is %v", v, q)
	}
	for _, src := range []string{"mean(turns)", "mean(tool_calls, tool=read)", "mean(defense_triggers)", "count(tool_call, tool=read)"} {
		a, _ := ParseAggregate(src)
		if n := one("SELECT count(*), count(DISTINCT session) FROM (" + a.SamplesSQL(cond) + ")"); fmt.Sprint(n[0]) != "20" || fmt.Sprint(n[1]) != "20" {
			t.Errorf("%s: %v samples of sessions, want one for each of 20", src, n)
		}
	}
}

// FuzzParseAggregate: never a panic, every error at a column of the text
// (or just past it), and a canonical form that parses to itself.
func FuzzParseAggregate(f *testing.F) {
	for _, s := range []string{"p95(bash)", "rate(failure, tool=bash, among=executed)", "rate(completed)", "count(tool_call, tool=read)", "mean(turns", "(", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		a, err := ParseAggregate(src)
		if err != nil {
			var es ExprErrors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %v is not a list of problems", err)
			}
			for _, e := range es {
				if e.Col < 1 || e.Col > len(src)+1 {
					t.Fatalf("column %d outside %q", e.Col, src)
				}
			}
			return
		}
		again, err := ParseAggregate(a.String())
		if err != nil || again.String() != a.String() {
			t.Fatalf("%q: canonical %q parses to %v, %v", src, a.String(), again, err)
		}
	})
}
