package metrics

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// What a session cost is its recorded usage at its model's prices: the
// model_costs view (views.sql) is the one definition, per model response,
// that the cost_usd aggregate (sum(cost_usd) <= 0.05 in an eval
// threshold) reads. The prices are the caller's (SetPrices), per model id
// as session_start records it; a response of a model without a price has
// cost_usd NULL, and a session with one such response has no cost: a
// threshold over it is inconclusive, never a pass at an assumed price.

// SubjectCostUSD is a session's cost in US dollars: the sum of its model
// responses' cost_usd (model_costs), NULL when one has no price.
const SubjectCostUSD = "cost_usd"

// Price is one model's prices in US dollars per million tokens.
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// Prices maps a model id, as session_start records it, to its prices.
type Prices map[string]Price

// SetPrices replaces the prices cost_usd charges at. A negative or
// non-finite price is refused.
func (db *DB) SetPrices(ctx context.Context, prices Prices) error {
	var rows []string
	for _, model := range slices.Sorted(maps.Keys(prices)) {
		p := prices[model]
		vals := []float64{p.Input, p.Output, p.CacheRead, p.CacheWrite}
		nums := make([]string, len(vals))
		for i, v := range vals {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("metrics: the price of %s: %v is not a price in US dollars per million tokens", model, v)
			}
			nums[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		rows = append(rows, fmt.Sprintf("(%s, %s)", quoteString(model), strings.Join(nums, ", ")))
	}
	q := "DELETE FROM prices"
	if len(rows) > 0 {
		q += ";\nINSERT INTO prices VALUES " + strings.Join(rows, ", ")
	}
	if _, err := db.Query(ctx, q); err != nil {
		return fmt.Errorf("metrics: set the prices: %w", err)
	}
	return nil
}

// UnpricedSQL returns the query of the models without a price among the
// sessions cond keeps (an SQL condition on a session column; "" for all),
// with their responses: the rows (model, responses), model NULL for
// sessions that recorded none.
func UnpricedSQL(cond string) string {
	if cond == "" {
		cond = "true"
	}
	return fmt.Sprintf("SELECT model, count(*) AS responses FROM model_costs WHERE (%s) AND cost_usd IS NULL GROUP BY model ORDER BY model", cond)
}
