package diff

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/stats"
)

// ErrOptions is wrapped by the errors of bad Options.
var ErrOptions = errors.New("invalid diff options")

// The corrections for many rows.
const (
	CorrectionHolm = "holm"
	CorrectionBH   = "bh"
)

// Defaults of Options.
const (
	DefaultAlpha     = 0.05
	DefaultResamples = 2000
	// DefaultSeed seeds the bootstrap and the A/A splits when the user
	// names no seed: retrace diff and the diff report both start from it,
	// so that the same runs give the same intervals on the terminal and
	// on the page.
	DefaultSeed uint64 = 1
	// DefaultMinEffectRate is a rate's smallest change that matters: one
	// percentage point, absolute.
	DefaultMinEffectRate = 0.01
	// DefaultMinEffectRelative is a distribution's or a mean's: 10% of
	// the base value.
	DefaultMinEffectRelative = 0.10
	// DefaultAAResamples caps the bootstrap resamples of each A/A split:
	// the splits estimate a false-alarm rate, and 200 of them at the full
	// resamples cost minutes.
	DefaultAAResamples = 200
)

// Options are the knobs of Compare.
type Options struct {
	// Alpha is the significance level; 0 means DefaultAlpha.
	Alpha float64
	// Correction is holm (default) or bh.
	Correction string
	// Resamples and Seed drive the bootstrap intervals; 0 resamples
	// means DefaultResamples.
	Resamples int
	Seed      uint64
	// MinEffectRate (absolute) and MinEffectRelative (of the base value)
	// are the smallest changes that matter; 0 means the defaults.
	MinEffectRate     float64
	MinEffectRelative float64
	// Extra are aggregates to compare besides the default rows (a gate's).
	Extra []*metrics.Aggregate
	// Gates are checked on the result.
	Gates []*Gate
	// AA, when above 0, runs that many A/A splits of the base.
	AA int
	// Progress, when set, is told what is being done, one line at a time.
	Progress func(string)
	// Count, when set, is told how far the long parts have come: done of
	// total items of phase "metrics" (rows compared) and then "A/A splits".
	// Calls come one at a time.
	Count func(phase string, done, total int)
	// callLevel treats every call as independent (plain Newcombe and
	// two-proportion test, the plain bootstrap, Mann–Whitney over the
	// pooled samples): only for the calibration test that shows why the
	// default treats sessions as the unit.
	callLevel bool
}

func (o Options) normalized() (Options, error) {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if !(o.Alpha > 0 && o.Alpha < 1) {
		return o, fmt.Errorf("%w: alpha %g: give a level between 0 and 1, such as 0.05", ErrOptions, o.Alpha)
	}
	if o.Correction == "" {
		o.Correction = CorrectionHolm
	}
	if o.Correction != CorrectionHolm && o.Correction != CorrectionBH {
		return o, fmt.Errorf("%w: correction %q: use holm or bh", ErrOptions, o.Correction)
	}
	if o.Resamples == 0 {
		o.Resamples = DefaultResamples
	}
	if o.Resamples < 100 {
		return o, fmt.Errorf("%w: %d resamples: give at least 100 (default %d)", ErrOptions, o.Resamples, DefaultResamples)
	}
	if o.MinEffectRate == 0 {
		o.MinEffectRate = DefaultMinEffectRate
	}
	if o.MinEffectRelative == 0 {
		o.MinEffectRelative = DefaultMinEffectRelative
	}
	if o.MinEffectRate < 0 || o.MinEffectRelative < 0 {
		return o, fmt.Errorf("%w: a minimum effect is at least 0", ErrOptions)
	}
	if o.AA < 0 {
		return o, fmt.Errorf("%w: --aa %d: give a number of splits, such as 200", ErrOptions, o.AA)
	}
	return o, nil
}

// Input is one side of a diff: a loaded database, the condition keeping
// the side's sessions in it, the detectors' findings over it and, for an
// eval --out directory, its results.
type Input struct {
	Side Side
	DB   *metrics.DB
	// Cond is an SQL condition on the sessions view ("" keeps all).
	Cond string
	// Report is what the detectors found over DB (all of its sessions;
	// Compare keeps the side's).
	Report detectors.Report
	// Results are the eval results of the side, nil when none.
	Results *results.Results
}

// spec is one row to compute.
type spec struct {
	name   string
	agg    *metrics.Aggregate // nil for a detector's row
	det    string             // the detector of a sessions_with row
	kind   Kind
	better Better
	denom  string
}

// side is one input with its samples read.
type side struct {
	in       Input
	c        *corpus
	findings []detectors.Finding
}

// Compare compares cand against base: every default row (doc.go), the
// detectors' rows, the extra aggregates, the paired eval results, the new
// and resolved findings, the gates and, with opts.AA, the calibration.
func Compare(ctx context.Context, base, cand Input, opts Options) (*Result, error) {
	opts, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	progress := func(format string, args ...any) {
		if opts.Progress != nil {
			opts.Progress(fmt.Sprintf(format, args...))
		}
	}
	// The two sides are read at once when each has a database of its
	// own: most of the reading is DuckDB planning, which uses one core per
	// query. Under selectors both sides share one database (and its one
	// connection), so they are read one after the other.
	sides := []*side{nil, nil}
	err = onBothSides(base.DB != cand.DB, func(i int) error {
		in, name := base, "base"
		if i == 1 {
			in, name = cand, "candidate"
		}
		s, err := readSide(ctx, in)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		sides[i] = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	b, c := sides[0], sides[1]
	for i, s := range sides {
		if len(s.c.sessions) > 0 {
			continue
		}
		// An empty side compares nothing and would pass every gate: a
		// label misspelt in CI would go green forever.
		name, why := "base", ""
		if i == 1 {
			name = "candidate"
		}
		if s.in.Cond != "" {
			why = ": no session of the runs carries this label (labels come from retrace run|eval --tag KEY=VALUE)"
		}
		return nil, fmt.Errorf("%w: the %s, %s, has no session%s", ErrSide, name, s.in.Side.Label, why)
	}
	if err := sharedSessions(b, c); err != nil {
		return nil, err
	}
	extra := slices.Clone(opts.Extra)
	for _, g := range opts.Gates {
		if g.Aggregate != nil {
			extra = append(extra, g.Aggregate)
		}
	}
	specs, err := defaultSpecs(ctx, b, c, base.Report.Detectors, extra)
	if err != nil {
		return nil, err
	}
	err = onBothSides(base.DB != cand.DB, func(i int) error {
		for _, sp := range specs {
			if err := sides[i].addSpec(ctx, sp); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res := &Result{
		Base: b.describe(), Cand: c.describe(), Alpha: opts.Alpha, Correction: opts.Correction,
		Resamples: opts.Resamples, Seed: int64(opts.Seed), Clustered: true,
	}
	progress("diff: comparing %d metrics (%d bootstrap resamples each distribution)", len(specs), opts.Resamples)
	res.Rows, res.Skipped = compareAll(specs, b.c, c.c, nil, nil, opts, opts.Resamples)
	res.Findings = diffFindings(ctx, b, c)
	if base.Results != nil && cand.Results != nil {
		// The scenarios' verdict is eval --baseline's, by the same
		// function; McNemar's test adds the suite-wide view.
		res.Scenarios = results.Compare(base.Results, cand.Results, base.Side.Label, opts.Alpha)
		res.Paired = pair(base.Results, cand.Results, opts.Alpha)
	}
	for _, g := range opts.Gates {
		res.Gates = append(res.Gates, checkGate(g, res, b, c, opts))
	}
	if opts.AA > 0 {
		progress("diff: A/A calibration over %d splits of the base", opts.AA)
		res.Calibration = calibrate(specs, b.c, opts)
	}
	return res, nil
}

// onBothSides calls f(0) for the base and f(1) for the candidate, at once
// when parallel is set, and returns both errors, the base's first.
func onBothSides(parallel bool, f func(i int) error) error {
	if !parallel {
		if err := f(0); err != nil {
			return err
		}
		return f(1)
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs[0], errs[1])
}

// readSide lists the side's sessions and keeps its findings.
func readSide(ctx context.Context, in Input) (*side, error) {
	c, err := newCorpus(ctx, in.DB, in.Cond)
	if err != nil {
		return nil, err
	}
	s := &side{in: in, c: c}
	for _, f := range in.Report.Findings {
		if _, ok := c.index[f.Session]; ok {
			s.findings = append(s.findings, f)
		}
	}
	return s, nil
}

// describe fills in the side's counts.
func (s *side) describe() Side {
	d := s.in.Side
	d.Sessions = len(s.c.sessions)
	if calls, ok := s.c.series["rate(lost)"]; ok {
		_, d.ToolCalls = calls.sums()
	}
	return d
}

// addSpec reads the samples of one row.
func (s *side) addSpec(ctx context.Context, sp spec) error {
	if sp.agg != nil {
		return s.c.add(ctx, s.in.DB, s.in.Cond, sp.agg)
	}
	n := len(s.c.sessions)
	ser := &series{hits: make([]int, n), total: make([]int, n)}
	for i := range ser.total {
		ser.total[i] = 1
	}
	for _, f := range s.findings {
		if f.Detector == sp.det {
			ser.hits[s.c.index[f.Session]] = 1
		}
	}
	s.c.series[sp.name] = ser
	return nil
}

// mustAggregate parses an aggregate the code writes.
func mustAggregate(src string) *metrics.Aggregate {
	a, err := metrics.ParseAggregate(src)
	if err != nil {
		panic(fmt.Sprintf("diff: built-in aggregate %q: %v", src, err))
	}
	return a
}

// specOf makes the row of an aggregate: its kind, better direction and
// denominator.
func specOf(a *metrics.Aggregate) spec {
	sp := spec{name: a.String(), agg: a, better: BetterLower}
	calls := "tool calls"
	if t := a.Filter("tool"); t != "" {
		calls = t + " calls"
	}
	switch {
	case a.Func == metrics.FuncRate && a.Subject == metrics.RateCompleted:
		// The denominator is every session; the numerator, those that
		// ended with end_turn, is what the row's name says.
		sp.kind, sp.better, sp.denom = KindRate, BetterHigher, "sessions"
	case a.Func == metrics.FuncRate:
		sp.kind = KindRate
		sp.denom = calls
		if a.Filter("among") == metrics.AmongExecuted {
			sp.denom = calls + " that ran"
		}
		if a.Subject == "success" {
			sp.better = BetterHigher
		}
	case a.Func.Quantile() > 0:
		sp.kind = KindDistribution
	default:
		sp.kind = KindMean
	}
	if sp.denom == "" {
		switch a.Subject {
		case metrics.SubjectDuration:
			sp.denom = "measured " + calls
		case metrics.SubjectModelDuration, metrics.SubjectContextTokens, metrics.SubjectOutputTokens:
			sp.denom = "model responses"
		default:
			sp.denom = "sessions"
		}
	}
	return sp
}

// defaultSpecs lists the rows: overall and per-tool failure rates, per
// tool p50 and p95 durations, per failure kind rates, permission prompt,
// denial and lost-call rates, completion, turns and tool calls per
// session, tokens per response, model p95, defense triggers, each
// detector, then the extra aggregates not already listed.
func defaultSpecs(ctx context.Context, b, c *side, dets []detectors.Info, extra []*metrics.Aggregate) ([]spec, error) {
	var tools, kinds []string
	for _, s := range []*side{b, c} {
		cond := ""
		if s.in.Cond != "" {
			cond = " AND " + s.in.Cond
		}
		// Tools are labels: a name the model made up (tool_label
		// '(unknown tool)') gets no rows of its own.
		t, err := distinct(ctx, s.in.DB, "SELECT DISTINCT tool FROM tool_calls WHERE tool_label = tool"+cond)
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		k, err := distinct(ctx, s.in.DB, "SELECT DISTINCT failure_kind FROM tool_calls WHERE outcome = 'failure'"+cond)
		if err != nil {
			return nil, fmt.Errorf("list failure kinds: %w", err)
		}
		tools, kinds = append(tools, t...), append(kinds, k...)
	}
	slices.Sort(tools)
	slices.Sort(kinds)
	tools, kinds = slices.Compact(tools), slices.Compact(kinds)
	srcs := []string{"rate(failure, among=executed)"}
	for _, t := range tools {
		srcs = append(srcs, fmt.Sprintf("rate(failure, tool=%s, among=executed)", t))
	}
	for _, t := range tools {
		srcs = append(srcs, fmt.Sprintf("p50(duration, tool=%s)", t), fmt.Sprintf("p95(duration, tool=%s)", t))
	}
	for _, k := range kinds {
		srcs = append(srcs, fmt.Sprintf("rate(failure, failure_kind=%s, among=executed)", k))
	}
	srcs = append(srcs, "rate(prompted)", "rate(denied)", "rate(lost)", "rate(completed)",
		"mean(turns)", "mean(tool_calls)", "p50(context_tokens)", "p50(output_tokens)", "p95(model_duration)", "mean(defense_triggers)")
	var specs []spec
	for _, src := range srcs {
		specs = append(specs, specOf(mustAggregate(src)))
	}
	for _, d := range dets {
		specs = append(specs, spec{name: "sessions_with(detector=" + d.ID + ")", det: d.ID, kind: KindRate, better: BetterLower, denom: "sessions"})
	}
	for _, a := range extra {
		if !slices.ContainsFunc(specs, func(s spec) bool { return s.name == a.String() }) {
			specs = append(specs, specOf(a))
		}
	}
	return specs, nil
}

// compareAll computes every row over base and cand (restricted to the
// sessions bi and ci when not nil), corrects the p-values for many rows
// and gives each its verdict.
func compareAll(specs []spec, base, cand *corpus, bi, ci []int, opts Options, resamples int) ([]Row, []Skipped) {
	// The rows are independent computations over data in memory (the
	// bootstraps dominate): they run on every core, each into its slot.
	all := make([]Row, len(specs))
	whys := make([]string, len(specs))
	next := make(chan int)
	var wg sync.WaitGroup
	var countMu sync.Mutex
	done := 0
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				sp := specs[i]
				bs, cs := base.series[sp.name], cand.series[sp.name]
				if bi != nil {
					bs, cs = bs.subset(bi), cs.subset(ci)
				}
				all[i], whys[i] = compareRow(sp, bs, cs, opts, resamples)
				if r := all[i]; whys[i] == "" && r.Kind == KindRate && r.BaseCount == 0 && r.CandCount == 0 {
					// Nothing counted on either side: the row cannot show
					// a change, and only costs the others power in the
					// correction. (A gate on it is still decided: checkGate.)
					whys[i] = fmt.Sprintf("none of the %d and %d %s counted on either side", r.BaseN, r.CandN, sp.denom)
				}
				if opts.Count != nil {
					countMu.Lock()
					done++
					opts.Count("metrics", done, len(specs))
					countMu.Unlock()
				}
			}
		}()
	}
	for i := range specs {
		next <- i
	}
	close(next)
	wg.Wait()
	var rows []Row
	var skipped []Skipped
	for i, sp := range specs {
		if whys[i] != "" {
			skipped = append(skipped, Skipped{Metric: sp.name, Reason: whys[i]})
			continue
		}
		rows = append(rows, all[i])
	}
	ps := make([]float64, len(rows))
	for i, r := range rows {
		ps[i] = r.Test.P
		if math.IsNaN(ps[i]) {
			ps[i] = 1
		}
	}
	adj := stats.Holm(ps)
	if opts.Correction == CorrectionBH {
		adj = stats.BenjaminiHochberg(ps)
	}
	for i := range rows {
		rows[i].PAdjusted = adj[i]
		rows[i].Verdict = verdictOf(rows[i], opts.Alpha)
	}
	return rows, skipped
}

// Minimum data for a row, on each side.
const (
	minRateDenominator = 10
	minSessions        = 2
)

// seedOf derives a row's bootstrap seed from the diff's seed and the
// row's name, so rows draw independent resamples and a row's interval
// does not change when other rows come and go.
func seedOf(seed uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return seed ^ h.Sum64()
}

// compareRow computes one row, or says why it is skipped.
func compareRow(sp spec, b, c *series, opts Options, resamples int) (Row, string) {
	row := Row{Metric: sp.name, Kind: sp.kind, Better: sp.better, Denominator: sp.denom}
	level := 1 - opts.Alpha
	for _, x := range []struct {
		name string
		s    *series
	}{{"base", b}, {"candidate", c}} {
		if n := x.s.sessionsWith(); n < minSessions {
			if sp.denom == "sessions" {
				return row, fmt.Sprintf("the %s has %d sessions (fewer than %d)", x.name, n, minSessions)
			}
			return row, fmt.Sprintf("the %s has %d sessions with %s (fewer than %d)", x.name, n, sp.denom, minSessions)
		}
	}
	switch sp.kind {
	case KindRate:
		row.Unit, row.MinEffect = "fraction", opts.MinEffectRate
		bh, bn := b.sums()
		ch, cn := c.sums()
		if bn < minRateDenominator || cn < minRateDenominator {
			return row, fmt.Sprintf("%d and %d %s in the denominator (fewer than %d on a side)", bn, cn, sp.denom, minRateDenominator)
		}
		row.BaseCount, row.BaseN, row.CandCount, row.CandN = bh, bn, ch, cn
		row.Base, row.Cand = float64(bh)/float64(bn), float64(ch)/float64(cn)
		row.Diff = row.Cand - row.Base
		bc, cc := clusters(b), clusters(c)
		row.CI = stats.ClusteredNewcombe(bc, cc, level)
		row.Test = stats.ClusteredTwoProportions(bc, cc)
		if opts.callLevel {
			row.CI, row.Test = stats.Newcombe(bh, bn, ch, cn, level), stats.TwoProportions(bh, bn, ch, cn)
		}
	case KindDistribution:
		row.Unit, row.MinEffect, row.Relative = sp.agg.Unit(), opts.MinEffectRelative, true
		bv, cv := b.flat(), c.flat()
		row.BaseN, row.CandN = len(bv), len(cv)
		if need := sp.agg.Func.MinSamples(); len(bv) < need || len(cv) < need {
			return row, fmt.Sprintf("%d and %d samples (%s needs %d on a side)", len(bv), len(cv), sp.agg.Func, need)
		}
		q := sp.agg.Func.Quantile()
		row.Base, row.Cand = stats.Quantile(bv, q), stats.Quantile(cv, q)
		row.Diff, row.CI = stats.BootstrapQuantileDiffClustered(b.values, c.values, q, resamples, seedOf(opts.Seed, sp.name), level)
		row.Test = sessionTest(b, c, func(v []float64) float64 { return stats.Quantile(v, q) })
		if opts.callLevel {
			row.Diff, row.CI = stats.BootstrapQuantileDiff(bv, cv, q, resamples, seedOf(opts.Seed, sp.name), level)
			row.Test = stats.MannWhitney(bv, cv)
		}
	default:
		row.Unit, row.MinEffect, row.Relative = sp.agg.Unit(), opts.MinEffectRelative, true
		bv, cv := b.flat(), c.flat()
		row.BaseN, row.CandN = len(bv), len(cv)
		row.Base, row.Cand = mean(bv), mean(cv)
		row.Diff, row.CI = bootstrapMeanDiff(b.values, c.values, resamples, seedOf(opts.Seed, sp.name), level)
		row.Test = sessionTest(b, c, mean)
	}
	return row, ""
}

// sessionTest is Mann–Whitney U over one number per session: each
// session's own quantile (or mean) of its samples. The samples of one
// session are not independent (a session's context grows turn by turn,
// its calls share a workspace), and Mann–Whitney over the pooled samples
// raises false alarms in the A/A calibration; sessions are the
// independent unit.
func sessionTest(b, c *series, summary func([]float64) float64) stats.Test {
	per := func(s *series) []float64 {
		var out []float64
		for _, v := range s.values {
			if len(v) > 0 {
				out = append(out, summary(v))
			}
		}
		return out
	}
	t := stats.MannWhitney(per(b), per(c))
	t.Name += " over sessions' own values"
	return t
}

// clusters turns a rate's per-session counts into the stats package's
// clusters (one per session with calls).
func clusters(s *series) []stats.Cluster {
	var out []stats.Cluster
	for i := range s.total {
		if s.total[i] > 0 {
			out = append(out, stats.Cluster{Successes: s.hits[i], N: s.total[i]})
		}
	}
	return out
}

func mean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// bootstrapMeanDiff is the difference of the pooled means, mean(∪y) −
// mean(∪x), with a percentile interval from resamples that draw whole
// sessions (clusters) with replacement on each side: a session's values
// are not independent of each other.
func bootstrapMeanDiff(x, y [][]float64, resamples int, seed uint64, level float64) (float64, stats.Interval) {
	type sums struct{ s, n []float64 }
	prep := func(v [][]float64) sums {
		var out sums
		for _, vs := range v {
			t := 0.0
			for _, f := range vs {
				t += f
			}
			out.s, out.n = append(out.s, t), append(out.n, float64(len(vs)))
		}
		return out
	}
	sx, sy := prep(x), prep(y)
	pooled := func(s sums, draw func(int) int) float64 {
		t, n := 0.0, 0.0
		for i := range s.s {
			j := draw(i)
			t += s.s[j]
			n += s.n[j]
		}
		return t / n
	}
	id := func(i int) int { return i }
	diff := pooled(sy, id) - pooled(sx, id)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ds := make([]float64, 0, resamples)
	for range resamples {
		dx := pooled(sx, func(int) int { return rng.IntN(len(sx.s)) })
		dy := pooled(sy, func(int) int { return rng.IntN(len(sy.s)) })
		if d := dy - dx; !math.IsNaN(d) {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return diff, stats.Interval{Lo: math.NaN(), Hi: math.NaN(), Level: level}
	}
	slices.Sort(ds)
	return diff, stats.Interval{Lo: stats.QuantileSorted(ds, (1-level)/2), Hi: stats.QuantileSorted(ds, (1+level)/2), Level: level}
}

// verdictOf applies the verdict rule (doc.go).
func verdictOf(r Row, alpha float64) Verdict {
	if !r.CI.Valid() {
		return VerdictInconclusive
	}
	m := r.MinEffect
	if r.Relative {
		m *= math.Abs(r.Base)
	}
	if r.PAdjusted < alpha && (r.CI.Lo > 0 || r.CI.Hi < 0) {
		worse := r.CI.Lo > 0
		if r.Better == BetterHigher {
			worse = !worse
		}
		if worse {
			return VerdictRegressed
		}
		return VerdictImproved
	}
	if r.CI.Lo >= -m && r.CI.Hi <= m {
		return VerdictUnchanged
	}
	return VerdictInconclusive
}

// describeRow is a row in one line, for messages.
func describeRow(r Row) string {
	return fmt.Sprintf("%s: base %s, candidate %s, diff %s [%s, %s]", r.Metric, FormatValue(r, r.Base), FormatValue(r, r.Cand),
		FormatValue(r, r.Diff), FormatValue(r, r.CI.Lo), FormatValue(r, r.CI.Hi))
}

// FormatValue writes a value of a row in its unit: a rate as a
// percentage, a duration in ms (in s from a second up), anything else
// with 4 significant digits, never in exponent form (1.322e+04ms is
// hard to read next to 308.1ms).
func FormatValue(r Row, v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case r.Unit == "fraction":
		return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.2f", v*100), "0"), ".0") + "%"
	case r.Unit == "ms" && math.Abs(v) >= 1000:
		return significant(v/1000) + "s"
	case r.Unit == "ms":
		return significant(v) + "ms"
	}
	return significant(v)
}

// significant writes v with 4 significant digits in plain decimal form
// (all the digits of the integer part when it has more), without
// trailing zeros.
func significant(v float64) string {
	if v == 0 || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	decimals := 3 - int(math.Floor(math.Log10(math.Abs(v))))
	if decimals < 0 {
		decimals = 0
	}
	t := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(t, ".") {
		t = strings.TrimRight(strings.TrimRight(t, "0"), ".")
	}
	return t
}

// Check returns the options with their defaults filled in, or why they
// are invalid, so that a caller can refuse them before any work.
func (o Options) Check() (Options, error) { return o.normalized() }

// sharedSessions refuses two sides that share some of their sessions (a
// run given on both, a side and a directory that contains it, selectors
// that both match it): every test here compares two separate samples,
// and the sessions on both sides pull the two toward each other, so a
// change would read as smaller than it is. Two sides that are the same
// sessions are left to compare: that is a check of a set against itself,
// and says every row is unchanged, which is true.
func sharedSessions(b, c *side) error {
	var shared []string
	for _, s := range c.c.sessions {
		if _, ok := b.c.index[s]; ok {
			shared = append(shared, s)
		}
	}
	if len(shared) == 0 || len(shared) == len(c.c.sessions) && len(shared) == len(b.c.sessions) {
		return nil
	}
	return fmt.Errorf("%w: %d of the candidate's %d sessions are in the base too (the first: %s); a session on both sides is compared with itself, so give each side its own runs",
		ErrSide, len(shared), len(c.c.sessions), shared[0])
}
