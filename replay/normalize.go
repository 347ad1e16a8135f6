package replay

import (
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// PathRewrite replaces Old with New in every compared string, so that a
// path that is only different because the replay ran elsewhere (the
// workspace root, a blob directory) reads the same on both sides.
type PathRewrite struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// Options tunes Compare.
type Options struct {
	// PathRewrites are applied to both sides before comparing, longest Old
	// first so that a nested directory wins over its parent.
	PathRewrites []PathRewrite
	// Volatile are extra patterns, such as `\d+\.\d+s` timings in test
	// output, whose matches are replaced by "<volatile>" on both sides.
	Volatile []*regexp.Regexp
	// MaxValueRunes bounds Divergence.Recorded and Replayed; 0 means 120.
	MaxValueRunes int
}

// volatileMark stands in for text matched by a volatile pattern.
const volatileMark = "<volatile>"

// normalizer holds the prepared Options; it is safe to share once built.
type normalizer struct {
	rewrites []PathRewrite
	volatile []*regexp.Regexp
	max      int
}

func newNormalizer(opts Options) *normalizer {
	rw := make([]PathRewrite, 0, len(opts.PathRewrites))
	for _, r := range opts.PathRewrites {
		// An empty Old would match between every pair of characters.
		if r.Old != "" && r.Old != r.New {
			rw = append(rw, r)
		}
	}
	sort.SliceStable(rw, func(i, j int) bool { return len(rw[i].Old) > len(rw[j].Old) })
	max := opts.MaxValueRunes
	if max <= 0 {
		max = 120
	}
	return &normalizer{rewrites: rw, volatile: opts.Volatile, max: max}
}

// text returns s with the path rewrites and volatile patterns applied.
func (n *normalizer) text(s string) string {
	for _, r := range n.rewrites {
		if strings.Contains(s, r.Old) {
			s = strings.ReplaceAll(s, r.Old, r.New)
		}
	}
	for _, re := range n.volatile {
		if re != nil {
			s = re.ReplaceAllLiteralString(s, volatileMark)
		}
	}
	return s
}

// short cuts s to the configured length so that reports stay readable;
// the full values are in the trajectories.
func (n *normalizer) short(s string) string {
	if utf8.RuneCountInString(s) <= n.max {
		return s
	}
	r := []rune(s)
	return string(r[:n.max]) + "…"
}
