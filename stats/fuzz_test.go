package stats

import (
	"encoding/binary"
	"math"
	"testing"
)

// FuzzCounts feeds arbitrary counts to every count-based function: none may
// panic or hang, p-values are NaN or in [0, 1], and valid intervals are
// ordered.
func FuzzCounts(f *testing.F) {
	f.Add(3, 4, 1, 4)
	f.Add(0, 0, 0, 0)
	f.Add(-1, 5, 7, 3)
	f.Add(100000, 100000, 0, 100000)
	f.Fuzz(func(t *testing.T, x1, n1, x2, n2 int) {
		// Keep the counts to what a corpus can hold so the exact test's
		// O(n) sum stays quick.
		const lim = 1 << 20
		if abs(x1) > lim || abs(n1) > lim || abs(x2) > lim || abs(n2) > lim {
			t.Skip()
		}
		for _, r := range []Test{Fisher(x1, n1, x2, n2), TwoProportions(x1, n1, x2, n2), McNemar(x1, x2),
			ClusteredTwoProportions([]Cluster{{x1, n1}, {x2, n2}}, []Cluster{{x2, n2}, {x1, n1}, {x1, n2}})} {
			if !math.IsNaN(r.P) && (r.P < 0 || r.P > 1) {
				t.Fatalf("%s p = %v", r.Name, r.P)
			}
		}
		for _, ci := range []Interval{Wilson(x1, n1, 0.95), Newcombe(x1, n1, x2, n2, 0.9),
			ClusteredNewcombe([]Cluster{{x1, n1}, {x2, n2}}, []Cluster{{x2, n2}, {x1, n1}}, 0.95)} {
			if ci.Valid() && ci.Lo > ci.Hi {
				t.Fatalf("interval %+v is reversed", ci)
			}
		}
	})
}

// FuzzSamples feeds arbitrary float samples (NaN and ±Inf included) to the
// sample-based functions.
func FuzzSamples(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 0.5)
	f.Add([]byte{}, 0.95)
	f.Fuzz(func(t *testing.T, raw []byte, q float64) {
		var vals []float64
		for len(raw) >= 8 {
			vals = append(vals, math.Float64frombits(binary.LittleEndian.Uint64(raw)))
			raw = raw[8:]
		}
		half := len(vals) / 2
		x, y := vals[:half], vals[half:]
		r := MannWhitney(x, y)
		if !math.IsNaN(r.P) && (r.P < 0 || r.P > 1) {
			t.Fatalf("Mann–Whitney p = %v", r.P)
		}
		if r := MannWhitneyClustered([][]float64{x, y}, [][]float64{y, x, nil}); !math.IsNaN(r.P) && (r.P < 0 || r.P > 1) {
			t.Fatalf("clustered Mann–Whitney p = %v", r.P)
		}
		Quantile(vals, q)
		BootstrapQuantileDiff(x, y, q, 20, 1, 0.9)
		BootstrapQuantileDiffClustered([][]float64{x, y}, [][]float64{y, x, nil}, q, 20, 1, 0.9)
		adj := Holm(vals)
		if len(adj) != len(vals) || len(BenjaminiHochberg(vals)) != len(vals) {
			t.Fatal("adjusted p-values lost entries")
		}
	})
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
