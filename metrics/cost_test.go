package metrics

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// costFixtures writes basic.jsonl (model scripted-1: 3100 input, 120
// output and 1100 cache-read tokens over two responses, as its
// session_end sums them) and a copy of
// it as another session of model other-1.
func costFixtures(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(validDir, "basic.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	other := strings.ReplaceAll(strings.ReplaceAll(string(src), "1a2b3c4d", "5e6f7a8b"), `"model":"scripted-1"`, `"model":"other-1"`)
	if err := os.WriteFile(a, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{a, b}
}

func costValue(t *testing.T, db *DB, src string) (n float64, v float64, ok bool) {
	t.Helper()
	a, err := ParseAggregate(src)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := db.Query(context.Background(), a.ValueSQL(""))
	if err != nil {
		t.Fatal(err)
	}
	n, _ = ValueNumber(tb.Rows[0][0])
	v, ok = ValueNumber(tb.Rows[0][1])
	return n, v, ok
}

func TestCostIsTheRecordedUsageAtTheModelsPrices(t *testing.T) {
	ctx := context.Background()
	db := open(t, Options{}, costFixtures(t)...)
	// Without prices, no session has a cost, and every model is unpriced.
	if _, _, ok := costValue(t, db, "sum(cost_usd)"); ok {
		t.Fatal("sum(cost_usd) has a value without prices")
	}
	if got := rows(t, db, UnpricedSQL("")); strings.Join(got, ";") != "other-1|2;scripted-1|2" {
		t.Fatalf("unpriced models %v, want both with their 2 responses", got)
	}
	// (3100*3 + 120*15 + 1100*0.3 + 0*3.75) / 1e6 = 0.01143 per session.
	p := Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	if err := db.SetPrices(ctx, Prices{"scripted-1": p, "other-1": {Input: 1, Output: 5}}); err != nil {
		t.Fatal(err)
	}
	other := (3100*1 + 120*5) / 1e6
	for src, want := range map[string]float64{
		"sum(cost_usd)":  0.01143 + other,
		"max(cost_usd)":  0.01143,
		"mean(cost_usd)": (0.01143 + other) / 2,
	} {
		n, v, ok := costValue(t, db, src)
		if !ok || n != 2 || math.Abs(v-want) > 1e-12 {
			t.Errorf("%s = %v over %v sessions (ok %v), want %v over 2", src, v, n, ok, want)
		}
	}
	if got := rows(t, db, UnpricedSQL("")); len(got) != 0 {
		t.Fatalf("unpriced models %v with every price given", got)
	}
	// One model's price missing: its session has no cost (never the
	// others' sum), and it is named.
	if err := db.SetPrices(ctx, Prices{"scripted-1": p}); err != nil {
		t.Fatal(err)
	}
	if n, v, _ := costValue(t, db, "sum(cost_usd)"); n != 1 || math.Abs(v-0.01143) > 1e-12 {
		t.Fatalf("sum(cost_usd) = %v over %v sessions, want 0.01143 over the 1 priced", v, n)
	}
	if got := rows(t, db, UnpricedSQL("session = '20261130-090000.000-5e6f7a8b'")); strings.Join(got, ";") != "other-1|2" {
		t.Fatalf("unpriced models %v, want other-1", got)
	}
	if got := rows(t, db, UnpricedSQL("session = '20261130-090000.000-1a2b3c4d'")); len(got) != 0 {
		t.Fatalf("the priced session has unpriced models %v", got)
	}
	// A negative price is refused.
	if err := db.SetPrices(ctx, Prices{"x": {Input: -1}}); err == nil {
		t.Fatal("a negative price was taken")
	}
}

func TestCostAggregatesParse(t *testing.T) {
	for src, want := range map[string]string{
		"sum(cost_usd)":            "",
		"p95(cost_usd)":            "",
		"sum(output_tokens)":       "",
		"rate(cost_usd)":           "rate counts",
		"sum(cost_usd, tool=bash)": "takes no filter",
		"total(cost_usd)":          "use p50, p90, p95, p99, mean, min, max, sum, rate or count",
	} {
		a, err := ParseAggregate(src)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", src, err)
		case want == "" && src == "sum(cost_usd)" && (a.Unit() != "usd" || !a.PerSession()):
			t.Errorf("%s: unit %q, per session %v", src, a.Unit(), a.PerSession())
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: error %v, want %q", src, err, want)
		}
	}
}
