package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/diff"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/report"
)

type reportOptions struct {
	paths  []string
	out    string
	title  string
	top    int
	config string
	loadFlags
	// base and cand make a diff report: runs (a path, directory, glob or
	// eval --out directory) or label selectors over RUNS.
	base, cand string
}

func newReportCmd(sys *IO) *cobra.Command {
	opts := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report [RUNS...] -o report.html",
		Short: "Write one self-contained HTML report of trajectories: funnel, latency, failures, findings, timelines",
		Long: `Report loads trajectories, runs the detectors over them, and writes one HTML
file that needs nothing else: the CSS and the SVG charts are inline, and it
holds no script, no web font and no URL, so it opens from disk, from a CI
artifact or an e-mail attachment, offline.

It shows the summary (sessions, turns, calls, end reasons, tokens); the tool
funnel (calls, permission allowed, executed, succeeded, failed, lost — each
rate naming its denominator, as docs/glossary.md defines it); each tool's latency distribution
(its calls' own measured durations, never batch averages, with p50 and
p95); the failure kinds per tool; the permission funnel (allows by source,
prompts, denials); the defenses' liveness; the detector findings, each
linking to its session and to the events that prove it; and, for the
sessions most worth reading (findings first, then failures, then the
longest; --top), a timeline — model turns, parallel batches drawn as lanes
with each call's own duration, permission prompts, defense triggers,
reminders — and the conversation, abbreviated. The other sessions get one
row each, so a corpus of thousands of sessions stays a file of a few MB.
The numbers are those of retrace metrics over the same runs.

Everything from a trajectory is escaped: a recording is untrusted input,
and no text in it can add markup or script to the page.

RUNS may be files, directories (every *.jsonl below them), globs, or
Parquet exported by retrace export; with no RUNS the runs directory is
read (--runs, RETRACE_DIR or .retrace/runs). ` + readingInputs + `
` + readingDupes + `

` + readingStore + `

-o - writes the HTML to stdout; otherwise the file is written whole or
not at all (a failed report leaves no half of one).

--base and --cand write a diff report instead: retrace diff's comparison
of the two sides (every metric and detector: base, candidate, the
difference with its interval drawn against the smallest change that
matters, the test, the adjusted p and the verdict, regressions first; the
paired scenarios of eval results; new and resolved findings). Each is a
set of runs (a file, directory, glob or eval --out directory), or both are
label selectors (tag:prompt=v1, model:M) over RUNS.

Exit codes: 0 ok, 2 bad usage or bad input (no runs, a missing path, a
bad line), 1 retrace itself failed.`,
		Example: `  retrace report -o report.html
  retrace report runs/ --top 20 -o report.html
  retrace report 'runs/2026-11-*.jsonl' --title "nightly eval" -o - > report.html
  retrace report --base runs/before --cand runs/after -o diff.html
  retrace report --base tag:prompt=v1 --cand tag:prompt=v2 runs/ -o diff.html`,
	}
	f := cmd.Flags()
	f.StringVarP(&opts.out, "out", "o", "report.html", "file to write the HTML to; - writes stdout")
	f.StringVar(&opts.title, "title", "", "title of the page (default: retrace report)")
	f.IntVar(&opts.top, "top", report.DefaultTop, "sessions shown in full with timeline and conversation; the rest get one row each")
	addLoadFlags(cmd, &opts.loadFlags)
	f.StringVar(&opts.base, "base", "", "diff report: the base runs, or a label selector (tag:KEY=VALUE) over RUNS")
	f.StringVar(&opts.cand, "cand", "", "diff report: the candidate runs, or a label selector over RUNS")
	f.StringVar(&opts.config, "config", "", "retrace.yaml whose detectors: section sets thresholds; default ./retrace.yaml when present")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		opts.paths = args
		return runReport(cmd.Context(), sys, opts)
	}
	return cmd
}

func runReport(ctx context.Context, sys *IO, opts *reportOptions) error {
	if opts.top < 1 {
		return usage(fmt.Errorf("--top %d: give the number of sessions to show in full, at least 1", opts.top))
	}
	if opts.out == "" {
		return usage(fmt.Errorf("-o: name the HTML file to write, or - for stdout"))
	}
	if opts.out != "-" {
		// Checked before any work: a report of thousands of sessions
		// should not be computed to find it has nowhere to go.
		if err := outputDirExists("-o", opts.out); err != nil {
			return err
		}
	}
	if opts.base != "" || opts.cand != "" {
		return runReportDiff(ctx, sys, opts)
	}
	settings, err := detectSettings(opts.config)
	if err != nil {
		return err
	}
	ds, err := detectors.Select(nil, nil)
	if err != nil {
		return err
	}
	paths, err := opts.inputs(opts.paths)
	if err != nil {
		return err
	}
	defer boundGoMemory(sys, &opts.loadFlags)()
	// The detectors and the liveness table run in the load's pass, on the
	// events its check decodes: every file is read once.
	var rep detectors.Report
	var live detectors.Liveness
	db, err := openAndLoadWith(ctx, sys, "", opts.loadFlags, paths, func(db *metrics.DB, paths []string) (lrep metrics.LoadReport, err error) {
		rep, live, lrep, err = detectors.DetectLiveness(ctx, db, paths, ds, detectors.Options{Settings: settings})
		return lrep, err
	})
	if err != nil {
		return err
	}
	defer db.Close()
	m, err := report.Gather(ctx, db, rep, live, report.Options{Title: opts.title, Top: opts.top})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := report.Render(&buf, m); err != nil {
		return err
	}
	return writeReport(sys, opts.out, buf.Bytes(), fmt.Sprintf("%s, %d in full, %s", plural(int(m.Summary.Sessions), "session"),
		len(m.Detailed), plural(len(m.Findings), "finding")))
}

// writeReport writes page to out (stdout for -) and says so on stderr.
func writeReport(sys *IO, out string, page []byte, what string) error {
	if out == "-" {
		_, err := sys.Out.Write(page)
		return err
	}
	if err := writeFileWhole(out, page); err != nil {
		return err
	}
	fmt.Fprintf(sys.Err, "wrote %s: %s (%d KB)\n", out, what, (len(page)+1023)/1024)
	return nil
}

// runReportDiff writes the diff report of --base against --cand, with
// retrace diff's loading and comparison (default alpha, correction,
// resamples and seed, so the page's intervals are retrace diff's).
func runReportDiff(ctx context.Context, sys *IO, opts *reportOptions) error {
	if opts.base == "" || opts.cand == "" {
		return usage(fmt.Errorf("a diff report needs both --base and --cand"))
	}
	dopts := &diffOptions{loadFlags: opts.loadFlags}
	_, berr := diff.ParseSelector(opts.base)
	_, cerr := diff.ParseSelector(opts.cand)
	switch {
	case berr == nil && cerr == nil:
		dopts.base, dopts.cand, dopts.args = opts.base, opts.cand, opts.paths
	case len(opts.paths) > 0:
		return usage(fmt.Errorf("--base %s --cand %s are runs, so RUNS (%s) has no place: give RUNS only with label selectors (tag:KEY=VALUE)", opts.base, opts.cand, strings.Join(opts.paths, " ")))
	default:
		dopts.args = []string{opts.base, opts.cand}
	}
	bside, cside, err := diffSides(dopts)
	if err != nil {
		return err
	}
	inputs, closeInputs, err := loadDiffInputs(ctx, sys, dopts, bside, cside)
	if err != nil {
		return err
	}
	defer closeInputs()
	res, err := diff.Compare(ctx, inputs[0], inputs[1], diff.Options{Seed: diff.DefaultSeed})
	if errors.Is(err, diff.ErrSide) {
		return invalid(err)
	}
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := report.RenderDiff(&buf, res, opts.title); err != nil {
		return err
	}
	n := res.Counts()
	return writeReport(sys, opts.out, buf.Bytes(), fmt.Sprintf("%s: %d regressed, %d improved, %d inconclusive, %d unchanged",
		plural(len(res.Rows), "metric"), n[diff.VerdictRegressed], n[diff.VerdictImproved], n[diff.VerdictInconclusive], n[diff.VerdictUnchanged]))
}

// outputDirExists refuses, as bad input (exit 2), a file to write (the
// value of flag) whose directory does not exist: checked before any work,
// so that nothing is computed or run only to find it has nowhere to go.
func outputDirExists(flag, path string) error {
	if info, err := os.Stat(filepath.Dir(path)); err != nil || !info.IsDir() {
		return invalid(fmt.Errorf("%s %s: the directory %s does not exist; create it or name another file", flag, path, filepath.Dir(path)))
	}
	return nil
}

// writeFileWhole writes data to path through a temporary file in the same
// directory, renamed over path once complete.
func writeFileWhole(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return invalid(fmt.Errorf("-o %s: %w", path, err))
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("-o %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("-o %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil { // private, as every export
		return fmt.Errorf("-o %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("-o %s: %w", path, err)
	}
	return nil
}
