package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The estimate is 4 ASCII characters or 2 others to a
// token, rounded up.
func TestEstimateTokensCountsScriptsDifferently(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"汉字", 1},
		{"汉字汉", 2},
		{strings.Repeat("x", 100000), 25000},
		{strings.Repeat("汉", 100000), 50000},
		{"é", 1},
	} {
		if got := EstimateTokens(c.in); got != c.want {
			t.Errorf("EstimateTokens(%.20q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func BenchmarkEstimateTokens(b *testing.B) {
	s := strings.Repeat("mixed text 汉字 ", 10000)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		EstimateTokens(s)
	}
}

// BenchmarkRuneCountBaseline is what the character limit costs on the
// same text, the baseline EstimateTokens is compared with.
func BenchmarkRuneCountBaseline(b *testing.B) {
	s := strings.Repeat("mixed text 汉字 ", 10000)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		_ = utf8.RuneCountInString(s)
	}
}
