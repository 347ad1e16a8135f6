package condition

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/stats"
)

// Both syntaxes that existed before there was one grammar, the eval
// thresholds' and the diff gates', still parse, each where it was
// written, to the same canonical forms.
func TestBothOldSyntaxesParse(t *testing.T) {
	cases := []struct {
		use            Use
		src, canonical string
	}{
		// Thresholds, as eval scenarios write them.
		{Threshold, "p95(bash) < 2s", "p95(duration, tool=bash) < 2s"},
		{Threshold, "p50(read)<=250ms", "p50(duration, tool=read) <= 250ms"},
		{Threshold, "max(model_duration) < 1.5m", "max(model_duration) < 1.5m"},
		{Threshold, "rate(failure, tool=bash) <= 0.1", "rate(failure, tool=bash) <= 0.1"},
		{Threshold, "rate(denied) < 5%", "rate(denied) < 5%"},
		{Threshold, "count(tool_call, tool=read) >= 2", "count(tool_call, tool=read) >= 2"},
		{Threshold, "count(defense_trigger, defense=loop_detection, action=warn) != 1", "count(defense_trigger, defense=loop_detection, action=warn) != 1"},
		{Threshold, "mean(turns) == 6", "mean(turns) == 6"},
		{Threshold, "min(tool_calls, tool=read) > 0", "min(tool_calls, tool=read) > 0"},
		// Gates, as retrace diff --gate writes them.
		{Gate, "p95(bash) <= 1.2*base", "p95(duration, tool=bash) <= 1.2*base"},
		{Gate, "rate(failure) <= base + 0.02", "rate(failure) <= base + 0.02"},
		{Gate, "rate(failure, among=executed) <= base+2%", "rate(failure, among=executed) <= base + 2%"},
		{Gate, "mean(turns) <= base", "mean(turns) <= base"},
		{Gate, "p50(read) > base - 5ms", "p50(duration, tool=read) > base - 5ms"},
		{Gate, "p95(model_duration) < 2s", "p95(model_duration) < 2s"},
		{Gate, "rate(failure) < 90%", "rate(failure) < 90%"},
		{Gate, "no new detector warning", "no new detector warning"},
		{Gate, "no  regressed", "no regressed"},
	}
	for _, c := range cases {
		got, err := Parse(c.src, c.use)
		if err != nil {
			t.Errorf("%s %q: %v", c.use.word(), c.src, err)
			continue
		}
		if got.String() != c.canonical {
			t.Errorf("%s %q: %q, want %q", c.use.word(), c.src, got.String(), c.canonical)
		}
		again, err := Parse(got.String(), c.use)
		if err != nil || again.String() != got.String() || again.Limit != got.Limit || again.Offset != got.Offset {
			t.Errorf("%s %q: the canonical form does not parse back: %v", c.use.word(), c.src, err)
		}
	}
}

// What one use may say and the other may not is refused with why.
func TestEachUseRefusesWhatItCannotDecide(t *testing.T) {
	cases := []struct {
		use       Use
		src, want string
	}{
		{Threshold, "p95(bash) <= 1.2*base", "col 17: a threshold compares with a number; k*base is retrace diff's (--gate)"},
		{Threshold, "p95(bash) <= base", "col 14: a threshold compares with a number; base is retrace diff's (--gate)"},
		{Threshold, "no regressed", `col 1: "no ..." is a gate of retrace diff (--gate), not a threshold`},
		{Gate, "p95(bash) == base", "a gate compares with <, <=, > or >="},
		{Gate, "count(tool_call) <= base", "a gate compares a pN, mean or rate"},
		{Threshold, "mean(turns) < 3 and more", `col 17: want the end of the threshold, got name "and"`},
		{Gate, "mean(turns) < 3 and more", `col 17: want the end of the gate, got name "and"`},
	}
	for _, c := range cases {
		_, err := Parse(c.src, c.use)
		if err == nil || !errors.Is(err, metrics.ErrExpr) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want it refused saying %q", c.use.word(), c.src, err, c.want)
		}
	}
}

func TestDecideNeedsTheWholeIntervalAndNeverPassesWithoutSamples(t *testing.T) {
	iv := func(lo, hi float64) stats.Interval { return stats.Interval{Lo: lo, Hi: hi, Level: 0.95} }
	none := stats.Interval{Lo: math.NaN(), Hi: math.NaN()}
	cases := []struct {
		src   string
		ci    stats.Interval
		limit float64
		want  Status
	}{
		{"p95(bash) < 2s", Point(1500), 2000, Pass},
		{"p95(bash) < 2s", Point(2000), 2000, Fail},
		{"p95(bash) < 2s", iv(1500, 2500), 2000, Inconclusive},
		{"p95(bash) < 2s", iv(2100, 2500), 2000, Fail},
		{"p95(bash) < 1ms", none, 1, Inconclusive},
		{"mean(turns) >= 3", Point(3), 3, Pass},
		{"mean(turns) == 3", Point(3), 3, Pass},
		{"mean(turns) == 3", iv(2, 4), 3, Inconclusive},
		{"mean(turns) == 3", iv(4, 5), 3, Fail},
		{"mean(turns) != 3", iv(4, 5), 3, Pass},
		{"mean(turns) != 3", Point(3), 3, Fail},
		{"mean(turns) != 3", none, 3, Inconclusive},
	}
	for _, c := range cases {
		cond, err := Parse(c.src, Threshold)
		if err != nil {
			t.Fatal(err)
		}
		if got := cond.Decide(c.ci, c.limit); got != c.want {
			t.Errorf("%s over [%g, %g] against %g: %s, want %s", c.src, c.ci.Lo, c.ci.Hi, c.limit, got, c.want)
		}
	}
	g, err := Parse("p95(bash) <= 1.2*base + 5ms", Gate)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.LimitAt(100); math.Abs(got-25) > 1e-9 {
		t.Errorf("LimitAt(100) = %g, want 0.2*100 + 5 = 25", got)
	}
}

// FuzzParse: no input makes Parse panic or hang, for either use, and what
// parses writes a canonical form that parses back to itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"p95(bash) < 2s", "rate(failure, tool=bash) <= 10%", "count(tool_call) >= 2", "mean(turns) != 3",
		"p95(bash) <= 1.2*base", "rate(failure) <= base - 2%", "no new detector error", "no regressed", "p95(bash) <= 0*base", "", "(", "no", "rate(x, y=) < 1e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		for _, use := range []Use{Threshold, Gate} {
			c, err := Parse(src, use)
			if err != nil {
				var es metrics.ExprErrors
				if !errors.As(err, &es) || len(es) == 0 {
					t.Fatalf("%q: an error that lists no problem: %v", src, err)
				}
				continue
			}
			again, err := Parse(c.String(), use)
			if err != nil {
				t.Fatalf("%q parsed as %q, which does not parse: %v", src, c.String(), err)
			}
			if again.String() != c.String() {
				t.Fatalf("%q: canonical %q parses to %q", src, c.String(), again.String())
			}
		}
	})
}
