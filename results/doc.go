// Package results is what an eval run found: the verdict of each
// scenario over its runs, the runs' failures, the metric thresholds, and
// the comparison with a baseline run. It reads and writes results.json,
// merges the results of shards and compares two sets of results, so that
// every package that reads results (diff, report, cmd/retrace) does so
// without importing the scenario runner, and through it the agent
// runtime.
//
// The package computes and never prints: the summaries, the Markdown and
// the JUnit XML of results are package report's.
package results
