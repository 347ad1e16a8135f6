// Package diff compares two sets of runs, BASE and CAND (before and after a
// change of prompt, model, policy, tool or harness), metric by metric and
// detector by detector, with statistics chosen for each kind of data, and
// checks gates on the differences. retrace diff is its command; Result is
// also its --format json document and what the HTML report draws.
//
// # Sides
//
// A side is a loaded database and an SQL condition on its sessions (Input):
// its own runs (files, directories, globs, an eval --out directory: its
// runs/ and results.json, see ResolveSide), or the sessions of one corpus a
// label selects (Selector: tag:KEY=VALUE, model:, provider:, config_hash:,
// harness_version:). Each side's samples are read once per metric, grouped
// by session, so that intervals can resample whole sessions and the A/A
// calibration can split a side without asking the database again.
//
// # Rows
//
// Every row is a metrics.Aggregate, the grammar eval scenarios' thresholds
// use, written in canonical form, and names its denominator: the failure
// rate among the calls that ran (rate(failure, among=executed); ran is
// the metrics glossary's term, docs/glossary.md) overall, per tool and per
// failure kind; each tool's p50 and p95 latency (the calls that ran, with
// a measured duration; a denied call is no sample); a tool name the model
// made up gets no rows of its own; the permission prompt, denial and
// lost-call rates among all calls; the share of sessions that ended with
// end_turn; turns, tool calls and defense triggers per session; p50
// context and output tokens per model response; p95 model duration; and per
// detector the share of sessions with at least one finding
// (sessions_with(detector=ID)). Lower is better for all but success and
// completion. A row with too little data on a side is skipped and listed
// with why: fewer than 2 sessions with samples, fewer than 10 calls in a
// rate's denominator, fewer than 1/(1−q) samples for a pN (p95: 20), or a
// rate that counted nothing on either side (it cannot show a change, and
// would only cost the other rows power in the correction).
//
// # Tests
//
// Calls of one session are not independent: they share a task, a
// workspace, a model and a growing context. The A/A calibration on the
// synth corpus shows it: with every call taken as independent, 64 of 200
// random halvings of one corpus raised a false alarm (alpha 0.05); with
// sessions as the unit, 6 of 200. So sessions are the unit throughout:
//
//   - Rates: Newcombe's hybrid score interval of the difference and the
//     two-proportion z test, both with each side's design effect of
//     sessions (stats.ClusteredNewcombe, stats.ClusteredTwoProportions,
//     Rao–Scott); Fisher's exact test on the effective counts when an
//     expected cell is below 5.
//   - Distributions (pN): the difference of the pooled quantiles, with a
//     percentile interval from a bootstrap that resamples whole sessions
//     (stats.BootstrapQuantileDiffClustered; Options.Resamples, default
//     2000, seeded by Options.Seed and the row's name so that results are
//     reproducible), and Mann–Whitney U over each session's own quantile.
//   - Means per session (turns, tool calls): the difference of the means
//     with a session bootstrap interval, and Mann–Whitney U.
//   - Many rows: the p-values are adjusted with Holm (family-wise error,
//     the default) or Benjamini–Hochberg (false discovery rate), and the
//     result names which.
//   - Paired eval results: when both sides have results.json with
//     scenarios in common, each scenario's change by results.Compare
//     (regressed first, listed before the rows), and McNemar's test on
//     per-scenario pass/fail (exact below 25 discordant pairs), each flip
//     named, pass→fail first.
//
// The intervals are at level 1−alpha and are not widened for the many
// rows; the adjusted p-value is what guards the family.
//
// # Verdicts
//
// A row is regressed (improved) when its adjusted p is below alpha AND its
// interval lies wholly on the worse (better) side of zero; unchanged when
// the interval lies within ±min-effect (rates: 1 point absolute;
// distributions and means: 10% of the base value); otherwise inconclusive:
// the interval does not exclude a change that matters.
//
// # Findings
//
// The detectors run over both sides. A finding is matched across sides by
// its detector, its session's scenario tag and the tool of its call, never
// by session id (which differs between runs), as multisets: a key found
// three times in the base and five in the candidate gives two new findings.
// New and resolved findings keep their evidence (file, line, seq).
//
// # Gates
//
// A gate (ParseGate) is a condition of package condition, the grammar
// and decision eval thresholds share (docs/conditions.md): `aggregate op
// rhs` with rhs a number or `[k*]base [± d]`, `no new detector SEVERITY`
// or `no regressed`. `no regressed` fails first on a regressed scenario
// (Result.Scenarios, results.Compare: the verdict eval --baseline
// gives), then on a regressed row or McNemar's verdict. A metric gate is
// decided with an interval, never the point estimate: against base with the
// difference's interval (the limit (k−1)·base + d, base the point estimate
// of the base side), against a number with the candidate's own interval.
// Pass when the whole interval holds, fail when none of it does, else
// inconclusive, with the factor by which the runs would have to grow for
// the half-width (∝ 1/√n) to reach the limit.
//
// # Calibration
//
// Options.AA splits the base's sessions in random halves that many times
// (seeded) and compares every row between the halves; every regressed or
// improved verdict is a false alarm. Per row and family-wise rates are
// reported next to alpha. Each split's bootstrap draws at most
// DefaultAAResamples resamples.
package diff
