// Package stats holds the statistics of the before/after comparison
// (retrace diff): confidence intervals, hypothesis tests and multiple-test
// corrections, each chosen for the data it is given. It is pure
// computation over numbers: no I/O, no database, and every random draw
// comes from a PRNG seeded by the caller, so a diff is reproducible.
//
// # Which statistic for which data
//
// Rates over independent trials (a scenario's pass rate over runs, a
// failure kind's share of calls when calls can be taken as independent):
// Wilson for one proportion's interval; Newcombe (the hybrid score
// interval, Newcombe 1998 method 10) for the difference of two; and
// TwoProportions to test it, which runs Fisher's exact test when any
// expected cell is below 5 (few failures, where the normal approximation
// misleads) and the pooled z test otherwise.
//
// Paired rates (the same scenarios ran on both sides): McNemar, on the
// discordant pairs only — a scenario that passes on both sides says
// nothing about the change. It is exact (binomial) below 25 discordant
// pairs and χ² with continuity correction above.
//
// Distributions with long tails (latencies, token counts): MannWhitney
// tests for a shift without assuming a shape (exact for small samples
// without ties, else the tie-corrected normal approximation), and
// BootstrapQuantileDiff gives the difference of a quantile (p50, p95) with
// a percentile bootstrap interval (BootstrapQuantileDiffs: several
// quantiles from one sort). Quantile is DuckDB's quantile_cont, so the
// numbers match the metrics views. The bootstrap is seeded (PCG) and
// draws each resample's one or two order statistics exactly from their
// distribution instead of drawing the resample, so 2,000 resamples cost
// about as much as sorting the samples once.
//
// Repeated trials of one task (retrace eval --repeat N): PassHatK
// (pass^k, the chance that k trials all pass) and PassAtK (pass@k, the
// chance that at least one does), each the unbiased estimate from n
// trials with c passes (passk.go).
//
// # Calls come in sessions
//
// Calls of one session share a task, a workspace and a model; they are not
// independent, and a test that treats 20,000 calls from 200 sessions as
// 20,000 independent draws understates the variance and raises false
// alarms (the A/A calibration of retrace diff shows it). Two remedies are
// offered, and the caller's calibration decides which holds alpha:
//
//   - For rates: ClusteredTwoProportions and ClusteredNewcombe take one
//     Cluster (successes, n) per session and widen the independent-calls
//     statistics by the design effect (DesignEffect: the ratio-estimator
//     variance over the binomial one; EffectiveN = n/deff). Right when
//     sessions are the sampled unit and there are at least a few dozen of
//     them per side; with fewer the variance estimate itself is noisy.
//   - For quantiles: BootstrapQuantileDiffClustered (and
//     BootstrapQuantileDiffsClustered) resample whole sessions. Right for
//     the same reason; it reduces to the plain bootstrap when each session
//     has one value.
//   - For a shift of a distribution: MannWhitneyClustered, the same
//     statistic as MannWhitney with Obuchowski's cluster-robust variance.
//
// Percentile bootstrap intervals of tail quantiles run a little narrow:
// in this package's simulations of session-clustered latencies, the 95%
// interval of the p95 difference held the true difference in 91.5% of
// 200 datasets at 60 sessions a side (TestClusteredBootstrapCoverageOfTheP95;
// 93.5% at 200 sessions in a one-off run); the A/A calibration of retrace
// diff measures what a corpus actually gives.
//
// The tests' null simulations show the size of the problem: on
// session-clustered data the plain tests' false-alarm rate at alpha 0.05
// is 0.3 (rates) to 0.6 (latencies); the clustered ones stay near 0.05.
//
// The unclustered functions are right when the unit really is the value:
// eval scenarios run once each, one value per session (a session's
// duration or total tokens), or a corpus where sessions hold one call.
//
// # Many metrics at once
//
// A diff tests dozens of metrics; at alpha = 0.05 one in twenty unchanged
// metrics would be flagged by chance. Holm controls the chance of any
// false alarm (family-wise error rate) under any dependence;
// BenjaminiHochberg controls the expected share of false alarms among the
// alarms, and flags more when many metrics really moved. Both return
// adjusted p-values in the input's order, to compare with alpha.
//
// # Deciding later
//
// When an interval is too wide to decide a gate, MoreRunsToReach turns its
// half-width and the one that would decide into an estimate of the runs
// still needed, for the verdict to name.
//
// # No data, bad data
//
// Nothing here panics on its input. A test given no data returns P = 1 (no
// evidence), an interval with no data to bound is the whole range ([0, 1]
// for a proportion, [−1, 1] for a difference), and a quantile of nothing
// is NaN. Invalid counts (negative, successes above n) give NaN. NaN
// values in samples are ignored. Callers that print JSON must map NaN to
// null themselves: encoding/json rejects NaN.
package stats
