package diff

import (
	"context"
	"fmt"
	"slices"

	"github.com/retrace-dev/retrace/metrics"
)

// corpus is one side's sessions and, per metric, its samples grouped by
// session, so that a comparison can resample whole sessions and an A/A
// split can cut a side in halves without asking the database again.
type corpus struct {
	sessions []string
	index    map[string]int
	// series holds each metric's samples, by its canonical text.
	series map[string]*series
}

// series is one metric's samples on one side, by session index.
type series struct {
	// hits and total are a rate's numerator and denominator per session.
	hits, total []int
	// values are the samples of a distribution or mean per session.
	values [][]float64
}

// newCorpus lists the sessions of db that cond keeps.
func newCorpus(ctx context.Context, db *metrics.DB, cond string) (*corpus, error) {
	q := "SELECT session FROM sessions"
	if cond != "" {
		q += " WHERE " + cond
	}
	tab, err := db.Query(ctx, q+" ORDER BY session")
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	c := &corpus{index: map[string]int{}, series: map[string]*series{}}
	for _, r := range tab.Rows {
		s := fmt.Sprint(r[0])
		c.index[s] = len(c.sessions)
		c.sessions = append(c.sessions, s)
	}
	return c, nil
}

// add reads the samples of a into the corpus.
func (c *corpus) add(ctx context.Context, db *metrics.DB, cond string, a *metrics.Aggregate) error {
	key := a.String()
	if _, ok := c.series[key]; ok {
		return nil
	}
	tab, err := db.Query(ctx, a.SamplesSQL(cond))
	if err != nil {
		return fmt.Errorf("samples of %s: %w", key, err)
	}
	s := &series{}
	n := len(c.sessions)
	if a.Func == metrics.FuncRate {
		s.hits, s.total = make([]int, n), make([]int, n)
	} else {
		s.values = make([][]float64, n)
	}
	for _, r := range tab.Rows {
		i, ok := c.index[fmt.Sprint(r[0])]
		if !ok {
			continue
		}
		if a.Func == metrics.FuncRate {
			h, _ := metrics.ValueNumber(r[1])
			t, _ := metrics.ValueNumber(r[2])
			s.hits[i] += int(h)
			s.total[i] += int(t)
			continue
		}
		if v, ok := metrics.ValueNumber(r[1]); ok {
			s.values[i] = append(s.values[i], v)
		}
	}
	c.series[key] = s
	return nil
}

// subset returns the series restricted to the sessions idx.
func (s *series) subset(idx []int) *series {
	out := &series{}
	if s.hits != nil {
		out.hits, out.total = make([]int, len(idx)), make([]int, len(idx))
		for j, i := range idx {
			out.hits[j], out.total[j] = s.hits[i], s.total[i]
		}
		return out
	}
	out.values = make([][]float64, len(idx))
	for j, i := range idx {
		out.values[j] = s.values[i]
	}
	return out
}

// sums returns a rate's numerator and denominator over all sessions.
func (s *series) sums() (hits, total int) {
	for i := range s.hits {
		hits += s.hits[i]
		total += s.total[i]
	}
	return hits, total
}

// flat returns every sample, sessions in order.
func (s *series) flat() []float64 {
	var out []float64
	for _, v := range s.values {
		out = append(out, v...)
	}
	return out
}

// sessionsWith counts the sessions that gave a sample (or, for a rate,
// had calls in the denominator).
func (s *series) sessionsWith() int {
	n := 0
	if s.hits != nil {
		for _, t := range s.total {
			if t > 0 {
				n++
			}
		}
		return n
	}
	for _, v := range s.values {
		if len(v) > 0 {
			n++
		}
	}
	return n
}

// distinct returns the sorted distinct non-empty strings of a column.
func distinct(ctx context.Context, db *metrics.DB, q string) ([]string, error) {
	tab, err := db.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range tab.Rows {
		if r[0] == nil {
			continue
		}
		if s := fmt.Sprint(r[0]); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out, nil
}
