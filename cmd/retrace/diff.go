package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/diff"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/report"
	"github.com/retrace-dev/retrace/terminal"
)

// diffFormats are the output formats of retrace diff.
var diffFormats = []string{"table", "markdown", "json"}

type diffOptions struct {
	args       []string
	base, cand string
	gates      []string
	alpha      float64
	correction string
	resamples  int
	seed       uint64
	minEffect  []string
	aa         int
	loadFlags
	format *formatFlag
}

func newDiffCmd(sys *IO) *cobra.Command {
	opts := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff BASE CAND | diff --base SELECTOR --cand SELECTOR [RUNS...]",
		Short: "Compare runs before and after a change, metric by metric, with honest statistics and gates",
		Long: `Diff compares two sets of runs, BASE and CAND: for every metric and every
detector, the base value, the candidate value, the difference with a
confidence interval, the test used, the p-value adjusted for the many rows,
and a verdict: improved, regressed, unchanged or inconclusive.

BASE and CAND are each a file, a directory of runs, a glob, or an eval --out
directory (its runs/ and its results.json). Or pick both sides out of one
corpus by label: --base tag:prompt=v1 --cand tag:prompt=v2 [RUNS...]
(selectors: tag:KEY=VALUE, model:M, provider:P, config_hash:H,
harness_version:V; with no RUNS, --runs or the runs directory is read).
A side with no session, and sides that share some of their sessions (a
run given on one side and within the other: it would pull the two
together), are refused with exit 2; the same runs on both sides are a
check of a set against itself.
` + readingDupes + `

` + readingStore + `

Rows: the failure rate among the calls that ran (a denied or refused call
did not run; docs/glossary.md), overall, per tool and per failure kind; p50
and p95 of each tool's latency (the calls that ran, measured); the permission prompt, denial and lost-call
rates among calls; the share of sessions that completed (end_turn); turns,
tool calls and defense triggers per session; p50 context and output tokens
per response; p95 model duration; per detector the share of sessions with
at least one finding. Every row names its denominator. A row with too
little data on a side is skipped and listed with why (fewer than 10 calls
in a rate's denominator, fewer than 1/(1-q) samples for a pN, fewer than 2
sessions), and so is a rate that counted nothing on either side; a gate
on a skipped row is still decided, on the data it needs.

Statistics: calls within a session are not independent, so the tests treat
sessions as the unit (the A/A calibration shows call-level tests raise
false alarms on the synth corpus). Rates: Newcombe's interval and the
two-proportion z test, both widened by the design effect of sessions
(Rao–Scott), Fisher's exact test on the effective counts when a cell is
small. Distributions: a session bootstrap of the p50/p95 difference
(--resamples, default 2000, seeded by --seed so results reproduce) and
Mann–Whitney U over each session's own quantile. Means per session: a
session bootstrap of the difference of means and Mann–Whitney U. The
p-values are corrected for the many rows with Holm (--correction holm,
family-wise) or Benjamini–Hochberg (bh, false discovery rate), stated in
the output. Both results.json with scenarios in common: each scenario's
change, listed before the metrics, with eval --baseline's verdict (a
scenario whose runs all passed in the base and not all in the candidate is
regressed; a live one only beyond chance, by Fisher's exact test), and
McNemar's test on per-scenario pass/fail, naming each scenario that
flipped, pass→fail first.

Verdict: regressed (improved) when the adjusted p is below --alpha AND the
interval lies wholly on the worse (better) side of zero; unchanged when the
interval lies within ±min-effect (--min-effect rate=0.01 absolute,
distribution=10% of the base value; defaults shown); otherwise
inconclusive: the interval does not exclude a change that matters.

Findings: the detectors run over both sides; findings are matched by
detector, scenario tag and tool (session ids differ between runs), and the
new and resolved ones are listed with their evidence (file:line, seq).

Gates (--gate, repeatable, all parsed before any work; a bad one exits 2
naming its column):
  AGGREGATE OP RHS   e.g. 'p95(bash) <= 1.2*base', 'rate(failure) <= base + 0.02',
                     'p50(read) < 300ms', 'mean(turns) <= base' (OP: < <= > >=)
  no new detector error|warning|info
  no regressed       fails on a regressed scenario (named first), row or McNemar verdict
The grammar is eval thresholds' too (docs/conditions.md). A gate is decided with the interval, never the point estimate: against
base with the difference's interval, against a number with the candidate's
own interval. Exit 3 when a gate fails, 4 when one cannot be decided (with
roughly how many times the runs would decide it: a half-width shrinks as
1/√n), 0 otherwise; 2 bad usage or input, 1 retrace failed.

--aa N: calibration. The base's sessions are split in random halves N times
(seeded) and compared as base and candidate; the per-row and family-wise
false-alarm rates are printed next to alpha (each split's bootstrap uses at
most 200 resamples).

Formats: table, markdown (a PR comment: regressions, improvements, then
everything in a collapsed <details>), json (the whole result).`,
		Example: `  retrace diff runs-before/ runs-after/
  retrace diff --base tag:prompt=v1 --cand tag:prompt=v2 .retrace/runs
  retrace diff out-main/ out-pr/ --format markdown > comment.md
  retrace diff before/ after/ --gate 'p95(bash) <= 1.2*base' --gate 'no new detector error'
  retrace diff before/ after/ --aa 200`,
	}
	f := cmd.Flags()
	f.StringVar(&opts.base, "base", "", "select the base sessions of RUNS by label: tag:KEY=VALUE, model:M, provider:P, config_hash:H, harness_version:V")
	f.StringVar(&opts.cand, "cand", "", "select the candidate sessions of RUNS by label (as --base)")
	f.StringArrayVar(&opts.gates, "gate", nil, "a gate: 'AGGREGATE OP RHS' (RHS a number or k*base ± d), 'no new detector SEVERITY' or 'no regressed'; repeatable")
	f.Float64Var(&opts.alpha, "alpha", diff.DefaultAlpha, "significance level of the verdicts and intervals")
	f.StringVar(&opts.correction, "correction", diff.CorrectionHolm, "multiple-testing correction: holm or bh")
	f.IntVar(&opts.resamples, "resamples", diff.DefaultResamples, "bootstrap resamples per distribution row")
	f.Uint64Var(&opts.seed, "seed", diff.DefaultSeed, "seed of the bootstrap and of the A/A splits")
	f.StringArrayVar(&opts.minEffect, "min-effect", nil, "smallest change that matters: rate=0.01 (absolute) or distribution=10% (of the base); repeatable")
	f.IntVar(&opts.aa, "aa", 0, "A/A calibration: split the base in random halves this many times")
	addLoadFlags(cmd, &opts.loadFlags)
	opts.format = addFormatFlag(cmd, diffFormats...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts.args = args
		return withJSONErrors(sys, opts.format, runDiff(cmd.Context(), sys, opts))
	}
	return cmd
}

// diffSide is one side as given on the command line.
type diffSide struct {
	label    string
	paths    []string
	selector *diff.Selector
}

// diffSides reads the arguments: BASE CAND, or selectors over RUNS.
func diffSides(opts *diffOptions) (base, cand diffSide, err error) {
	if (opts.base == "") != (opts.cand == "") {
		return base, cand, usage(fmt.Errorf("give both --base and --cand (label selectors over one corpus), or neither and BASE CAND"))
	}
	if opts.base == "" {
		if len(opts.args) != 2 {
			return base, cand, usage(fmt.Errorf("diff takes BASE and CAND (got %d arguments), or --base and --cand selectors", len(opts.args)))
		}
		if opts.runs != "" {
			return base, cand, usage(fmt.Errorf("--runs names one corpus; it goes with --base and --cand selectors, not with BASE CAND"))
		}
		return diffSide{label: opts.args[0], paths: opts.args[:1]}, diffSide{label: opts.args[1], paths: opts.args[1:]}, nil
	}
	corpus, err := opts.inputs(opts.args)
	if err != nil {
		return base, cand, err
	}
	bs, err := diff.ParseSelector(opts.base)
	if err != nil {
		return base, cand, usage(fmt.Errorf("--base: %w", err))
	}
	cs, err := diff.ParseSelector(opts.cand)
	if err != nil {
		return base, cand, usage(fmt.Errorf("--cand: %w", err))
	}
	return diffSide{label: bs.String(), paths: corpus, selector: bs}, diffSide{label: cs.String(), paths: corpus, selector: cs}, nil
}

// parseMinEffect reads the --min-effect values into opts.
func parseMinEffect(vals []string, o *diff.Options) error {
	for _, v := range vals {
		kind, num, ok := strings.Cut(v, "=")
		pct := strings.HasSuffix(num, "%")
		x, err := strconv.ParseFloat(strings.TrimSuffix(num, "%"), 64)
		if !ok || err != nil || x < 0 {
			return usage(fmt.Errorf("--min-effect %q: write rate=0.01 or distribution=10%%", v))
		}
		if x == 0 {
			// diff.Options reads 0 as "the default"; and no interval but
			// a point lies within ±0, so nothing could be unchanged.
			return usage(fmt.Errorf("--min-effect %q: give a size above 0, the smallest change that matters", v))
		}
		if pct {
			x /= 100
		}
		switch kind {
		case "rate":
			o.MinEffectRate = x
		case "distribution", "mean":
			o.MinEffectRelative = x
		default:
			return usage(fmt.Errorf("--min-effect %q: the kinds are rate (absolute) and distribution (relative to the base)", v))
		}
	}
	return nil
}

func runDiff(ctx context.Context, sys *IO, opts *diffOptions) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	// Every gate is parsed before any work: a typo must not cost a load.
	dopts := diff.Options{Alpha: opts.alpha, Correction: opts.correction, Resamples: opts.resamples, Seed: opts.seed, AA: opts.aa}
	for _, src := range opts.gates {
		g, err := diff.ParseGate(src)
		if err != nil {
			return usage(fmt.Errorf("--gate %q: %w", src, err))
		}
		dopts.Gates = append(dopts.Gates, g)
	}
	if err := parseMinEffect(opts.minEffect, &dopts); err != nil {
		return err
	}
	bside, cside, err := diffSides(opts)
	if err != nil {
		return err
	}
	if _, err := (diff.Options{Alpha: dopts.Alpha, Correction: dopts.Correction, Resamples: dopts.Resamples, AA: dopts.AA}).Check(); err != nil {
		return usage(err)
	}
	bar := diffProgress(sys, &dopts)
	inputs, closeInputs, err := loadDiffInputs(ctx, sys, opts, bside, cside)
	if err != nil {
		return err
	}
	defer closeInputs()
	res, err := diff.Compare(ctx, inputs[0], inputs[1], dopts)
	bar.Finish()
	if errors.Is(err, diff.ErrSide) {
		return invalid(err)
	}
	if err != nil {
		return err
	}
	out := terminal.NewWriter(sys.Out)
	switch opts.format.value {
	case "json":
		err = report.WriteDiffJSON(sys.Out, res)
	case "markdown":
		err = report.WriteDiffMarkdown(out, res)
	default:
		err = report.WriteDiffTable(out, res)
	}
	if err != nil {
		return err
	}
	return gateExit(sys, res)
}

// loadDiffInputs loads both sides of a diff: two sets of runs, or one
// corpus split by label selectors (then with no paired comparison: one
// results.json cannot be split by label). retrace diff and the diff report
// both read their sides here. The returned func closes what was loaded.
func loadDiffInputs(ctx context.Context, sys *IO, opts *diffOptions, bside, cside diffSide) ([2]diff.Input, func(), error) {
	var inputs [2]diff.Input
	var dbs []*metrics.DB
	closeAll := func() {
		for _, db := range dbs {
			db.Close()
		}
	}
	if bside.selector != nil {
		in, err := loadDiffSide(ctx, sys, opts, bside)
		if err != nil {
			return inputs, closeAll, err
		}
		dbs = append(dbs, in.DB)
		in.Results = nil
		inputs[0], inputs[1] = in, in
		inputs[0].Side, inputs[0].Cond = diff.Side{Label: bside.label, Selector: bside.label, Paths: bside.paths}, bside.selector.Cond()
		inputs[1].Side, inputs[1].Cond = diff.Side{Label: cside.label, Selector: cside.label, Paths: cside.paths}, cside.selector.Cond()
		return inputs, closeAll, nil
	}
	for i, s := range []diffSide{bside, cside} {
		in, err := loadDiffSide(ctx, sys, opts, s)
		if err != nil {
			closeAll()
			return inputs, func() {}, err
		}
		dbs = append(dbs, in.DB)
		inputs[i] = in
	}
	return inputs, closeAll, nil
}

// loadDiffSide loads one side's runs with the detectors, in one pass.
func loadDiffSide(ctx context.Context, sys *IO, opts *diffOptions, s diffSide) (diff.Input, error) {
	runs, results, err := diff.ResolveSide(s.paths)
	if err != nil {
		return diff.Input{}, usage(err)
	}
	in := diff.Input{Side: diff.Side{Label: s.label, Paths: s.paths, Results: results}}
	if results != "" {
		if in.Results, err = diff.ReadResults(results); err != nil {
			return in, invalid(err)
		}
	}
	if len(runs) == 0 && len(s.paths) > 0 {
		return in, usage(fmt.Errorf("%s: no runs (an eval --out directory needs its runs/)", s.label))
	}
	db, err := openAndLoadWith(ctx, sys, "", opts.loadFlags, runs, func(db *metrics.DB, paths []string) (metrics.LoadReport, error) {
		rep, lrep, err := detectors.Detect(ctx, db, paths, detectors.Catalog(), detectors.Options{})
		in.Report = rep
		return lrep, err
	})
	if err != nil {
		return in, err
	}
	in.DB = db
	return in, nil
}

// gateExit maps the gates to the exit code: 3 when one failed, 4 when
// none failed and one could not be decided.
func gateExit(sys *IO, res *diff.Result) error {
	failed, undecided := 0, 0
	for _, g := range res.Gates {
		switch g.Status {
		case diff.GateFail:
			failed++
			fmt.Fprintf(sys.Err, "retrace: diff: gate failed: %s: %s\n", g.Gate, g.Detail)
		case diff.GateInconclusive:
			undecided++
			fmt.Fprintf(sys.Err, "retrace: diff: gate inconclusive: %s: %s\n", g.Gate, g.Detail)
		}
	}
	switch {
	case failed > 0:
		return &exitError{code: ExitGate, err: errReported}
	case undecided > 0:
		return &exitError{code: ExitInconclusive, err: errReported}
	}
	return nil
}
