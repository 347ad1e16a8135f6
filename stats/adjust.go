package stats

import (
	"math"
	"slices"
)

// Holm returns Holm's step-down adjusted p-values, in the order of p: with
// the m p-values sorted ascending, the i-th (1-based) is adjusted to
// max over j <= i of min(1, (m − j + 1)·p_(j)). Rejecting where the
// adjusted value is below alpha controls the family-wise error rate (the
// chance of any false alarm) at alpha under any dependence between the
// tests. NaN entries stay NaN and do not count in m (R's p.adjust).
func Holm(p []float64) []float64 {
	order, out := sortedOrder(p)
	m := float64(len(order))
	running := 0.0
	for i, k := range order {
		v := math.Min(1, (m-float64(i))*p[k])
		running = math.Max(running, v)
		out[k] = running
	}
	return out
}

// BenjaminiHochberg returns the Benjamini–Hochberg adjusted p-values
// (q-values), in the order of p: with the m p-values sorted ascending, the
// i-th is adjusted to min over j >= i of min(1, m/j · p_(j)). Rejecting
// where the adjusted value is below alpha controls the false discovery
// rate (the expected share of false alarms among the alarms) at alpha for
// independent or positively dependent tests; it flags more than Holm when
// many metrics really changed. NaN entries stay NaN and do not count in m.
func BenjaminiHochberg(p []float64) []float64 {
	order, out := sortedOrder(p)
	m := float64(len(order))
	running := 1.0
	for i := len(order) - 1; i >= 0; i-- {
		k := order[i]
		v := math.Min(1, m/float64(i+1)*p[k])
		running = math.Min(running, v)
		out[k] = running
	}
	return out
}

// sortedOrder returns the indices of p's non-NaN entries by ascending p
// (stable), and an output slice of len(p) prefilled with NaN.
func sortedOrder(p []float64) ([]int, []float64) {
	out := make([]float64, len(p))
	order := make([]int, 0, len(p))
	for i, v := range p {
		out[i] = math.NaN()
		if !math.IsNaN(v) {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case p[a] < p[b]:
			return -1
		case p[a] > p[b]:
			return 1
		}
		return 0
	})
	return order, out
}
