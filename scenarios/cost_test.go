package scenarios

import (
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// costScenario reads a file and answers, at prices given per model.
const costScenario = `A cost threshold.
-- scenario.yaml --
name: cost
prompt: Read calc.go.
config:
  PRICES
model:
  turns:
    - content: [{tool_use: {name: read, input: {file_path: calc.go}}}]
    - content: [{text: Done.}]
expect:
  metrics:
    - THRESHOLD
-- workspace/calc.go --
package calc
`

func costSuite(t *testing.T, cases map[string][2]string) []*Scenario {
	t.Helper()
	var suite []*Scenario
	for name, c := range cases {
		src := strings.NewReplacer("name: cost", "name: "+name, "PRICES", c[0], "THRESHOLD", c[1]).Replace(costScenario)
		s, err := Parse([]byte(src), name+".txtar")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		suite = append(suite, s)
	}
	return suite
}

func TestACostThresholdPassesWithPricesAndIsInconclusiveWithout(t *testing.T) {
	priced := "prices: {mock-1: {input_per_mtok: 3, output_per_mtok: 15, cache_read_per_mtok: 0.3, cache_write_per_mtok: 3.75}}"
	cases := map[string][2]string{
		"priced":      {priced, `"sum(cost_usd) <= 0.05"`},
		"mean":        {priced, `"mean(cost_usd) > 0"`},
		"too_dear":    {priced, `"sum(cost_usd) < 0.0000001"`},
		"no_prices":   {"permissions: {mode: default}", `"sum(cost_usd) <= 0.05"`},
		"other_model": {"prices: {gpt-x: {input_per_mtok: 1, output_per_mtok: 1}}", `"sum(cost_usd) <= 0.05"`},
		"free":        {"prices: {mock-1: {input_per_mtok: 0, output_per_mtok: 0}}", `"sum(cost_usd) <= 0"`},
	}
	res := runSuite(t, costSuite(t, cases), Options{Repeat: 2})
	want := map[string]results.Verdict{"priced": results.VerdictPass, "mean": results.VerdictPass, "too_dear": results.VerdictFail, "no_prices": results.VerdictInconclusive,
		"other_model": results.VerdictInconclusive, "free": results.VerdictPass}
	for _, s := range res.Scenarios {
		if s.Verdict != want[s.Name] || len(s.Thresholds) != 1 {
			t.Errorf("%s: verdict %s, want %s:\n%s", s.Name, s.Verdict, want[s.Name], table(res))
			continue
		}
		got := s.Thresholds[0].Got
		switch s.Name {
		case "priced":
			if v := s.Thresholds[0].Value; v == nil || *v <= 0 || !strings.Contains(got, "sum of the costs in US dollars of 2 runs is 0.") {
				t.Errorf("priced: %q, value %v", got, v)
			}
		case "no_prices", "other_model":
			if !strings.Contains(got, "inconclusive: no price for mock-1 (4 responses) over 2 runs; give it in the scenario's config: prices:") {
				t.Errorf("%s: %q does not name the model without a price", s.Name, got)
			}
		}
	}
	if !strings.Contains(table(res), "INCONCLUSIVE no_prices  2/2 runs passed, threshold sum(cost_usd) <= 0.05 inconclusive") {
		t.Errorf("the summary does not say why no_prices is inconclusive:\n%s", table(res))
	}
}

func TestBadPricesAreRefusedWithTheScenario(t *testing.T) {
	for prices, want := range map[string]string{
		"prices: {mock-1: {input_per_mtok: -1}}": "prices.mock-1: a price is negative",
		"prices: {mock-1: {input: 1}}":           "input",
		"prices: {mock-1: 3}":                    "bad.txtar:6: config: cannot unmarshal",
	} {
		src := strings.NewReplacer("PRICES", prices, "THRESHOLD", `"sum(cost_usd) <= 1"`).Replace(costScenario)
		if _, err := Parse([]byte(src), "bad.txtar"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", prices, err, want)
		}
	}
	src := strings.NewReplacer("PRICES", "permissions: {mode: default}", "THRESHOLD", `"sum(cost_usd) <= 1$"`).Replace(costScenario)
	if _, err := Parse([]byte(src), "bad.txtar"); err == nil {
		t.Error("a cost with a unit was taken")
	}
}
