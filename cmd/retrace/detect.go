package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/report"
)

// detectFormats are the output formats of retrace detect.
var detectFormats = []string{"table", "markdown", "json", "sarif", "github"}

type detectOptions struct {
	paths      []string
	only, skip []string
	failOn     string
	list       bool
	defenses   bool
	loadFlags
	limit  int
	config string
	format *formatFlag
}

func newDetectCmd(sys *IO) *cobra.Command {
	opts := &detectOptions{}
	cmd := &cobra.Command{
		Use:   "detect [RUNS...]",
		Short: "Find the green-but-broken failure modes in trajectories, with the lines that prove them",
		Long: `Detect runs the detector catalog over trajectories: each detector looks for
one failure mode (a lost tool call, a tool_use without a tool_result, a
stop reason taken for done, a denial loop, ...; docs/failure-modes.md in
retrace's repository explains each), computed
from the recorded events alone, and every finding points at the file, line
and seq of the events that prove it, with the numbers seen, the threshold,
and what to change. --list documents every detector.

RUNS may be files, directories (every *.jsonl below them), globs, or
Parquet exported by retrace export; with no RUNS, --runs DIR, else the
runs directory is read (RETRACE_DIR or .retrace/runs). ` + readingInputs + `

` + readingDupes + `

` + readingStore + `

Formats: table (counts per detector that found something, the others in
one line, then the worst findings; no line over 120 columns, paths
relative to the working directory), markdown,
json (one document: detectors, findings, counts), sarif (SARIF 2.1.0, each
result at the trajectory file and line, for GitHub code scanning and
editors), github (workflow annotations: ::error file=…,line=…::message).
With --format json a failure is {"error": {"code", "message", "problems"}}.

Exit codes: 0 no finding at or above --fail-on, 3 at least one (the gate
failed; the findings are printed all the same), 2 bad usage or bad input
(a bad line, a repeated seq, a file that cannot be read or holds no
event, a missing path), 1 retrace itself failed.

Thresholds: each detector's thresholds and their defaults are in --list;
the detectors: section of retrace.yaml (--config, default ./retrace.yaml
when there is one) sets them per detector, and a name no detector has is
refused (exit 2, file:line):

  detectors:
    denial_loop:
      min_denials: 5

Progress: on a terminal, a bar on stderr follows the load; the detectors
over the event stream run as it checks the files, on the events it
decodes, so each file is read once (stdin and named pipes included).
Through the store, what they found in a file is kept with it: a later
detect over files that did not change reads none of them, and the first
after a metrics call that updated the store reads the files it has no
findings of yet. Those, and the trajectories of a Parquet export, are
read after the load, with a bar of their own.

--defenses prints the defense liveness table instead of findings: for
every defense a session_start enabled, the sessions that enabled it, its
defense_triggers, how often its check ran and its condition held
(recomputed from the events), and a verdict: live (it acted),
never_needed (its condition never occurred), dead (its condition occurred
and it never acted; exit 3 with --fail-on warning or info, as the
dead_defense detector, a warning), or not_observable (the trajectory does not carry its
condition). Formats: table, markdown, json.`,
		Example: `  retrace detect
  retrace detect runs/ --fail-on warning --format github
  retrace detect runs/ --only lost_call,unpaired_tool_use --format sarif > detect.sarif
  retrace detect --list
  retrace detect runs/ --defenses`,
	}
	f := cmd.Flags()
	f.StringSliceVar(&opts.only, "only", nil, "run only these detectors (ids, comma-separated)")
	f.StringSliceVar(&opts.skip, "skip", nil, "leave these detectors out (ids, comma-separated)")
	f.StringVar(&opts.failOn, "fail-on", "error", "exit 3 when a finding of this severity or worse exists: error, warning, info or never")
	f.BoolVar(&opts.list, "list", false, "document every detector (id, severity, what it means, thresholds, next step) and exit")
	f.BoolVar(&opts.defenses, "defenses", false, "print the defense liveness table (live, never_needed, dead, not_observable) instead of findings")
	addLoadFlags(cmd, &opts.loadFlags)
	f.StringVar(&opts.config, "config", "", "retrace.yaml whose detectors: section sets thresholds; default ./retrace.yaml when present")
	f.IntVar(&opts.limit, "limit", 20, "findings shown in table and markdown output; 0 shows all (json, sarif and github always have all)")
	opts.format = addFormatFlag(cmd, detectFormats...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		paths, err := opts.inputs(args)
		if err != nil {
			return withJSONErrors(sys, opts.format, err)
		}
		opts.paths = paths
		return withJSONErrors(sys, opts.format, runDetect(cmd.Context(), sys, opts))
	}
	return cmd
}

// goMemoryLimit is the Go heap's soft limit (debug.SetMemoryLimit) while
// detect or report runs with DuckDB at its default cap (500MB for a store
// or a big load, see metrics.Options.MemoryLimit). A reading command may
// take 1 GB at 10M events: DuckDB's cap, the few hundred MB DuckDB holds
// outside it, and this. Without it Go lets its heap grow to twice what it
// keeps live: report at 10M peaked at 941-996 MB, and at 874-909 MB with
// it, for the same CPU.
const goMemoryLimit = 256 << 20

// boundGoMemory sets goMemoryLimit unless the user chose the memory
// (GOMEMLIMIT, or DuckDB's cap through --memory-limit or
// $RETRACE_MEMORY_LIMIT), and returns the function that puts the limit
// back: commands run in the tests' process too.
func boundGoMemory(sys *IO, f *loadFlags) func() {
	if f.memory(sys) != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	was := debug.SetMemoryLimit(goMemoryLimit)
	return func() { debug.SetMemoryLimit(was) }
}

// failThreshold returns the lowest severity rank that fails the gate, or
// 0 for never.
func failThreshold(s string) (int, error) {
	if s == "never" {
		return 0, nil
	}
	sev, err := detectors.ParseSeverity(s)
	if err != nil {
		return 0, usage(fmt.Errorf("--fail-on %q: use error, warning, info or never", s))
	}
	return sev.Rank(), nil
}

func runDetect(ctx context.Context, sys *IO, opts *detectOptions) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	threshold, err := failThreshold(opts.failOn)
	if err != nil {
		return err
	}
	if opts.limit < 0 {
		return usage(fmt.Errorf("--limit %d: give a number of findings, or 0 for all", opts.limit))
	}
	ds, err := detectors.Select(opts.only, opts.skip)
	if err != nil {
		return usage(err)
	}
	settings, err := detectSettings(opts.config)
	if err != nil {
		return err
	}
	if opts.list {
		return report.WriteDetectorList(sys.Out, opts.format.value, ds, settings, currentVersion().Version)
	}
	if opts.defenses && opts.format.value != "table" && opts.format.value != "markdown" && opts.format.value != "json" {
		return usage(fmt.Errorf("--defenses --format %s: the liveness table prints as table, markdown or json", opts.format.value))
	}
	// The detectors run in the load's pass, on the events its check
	// decodes, so every file is read once; the load's bar follows both.
	// The count bar follows the files read again after the load: the
	// trajectories of a Parquet export. They read a file in milliseconds:
	// only many files need a bar.
	defer boundGoMemory(sys, &opts.loadFlags)()
	bar := newCountProgress(sys, "detect: files read", 200)
	var rep detectors.Report
	var lv detectors.Liveness
	db, err := openAndLoadWith(ctx, sys, "", opts.loadFlags, opts.paths, func(db *metrics.DB, paths []string) (lrep metrics.LoadReport, err error) {
		if opts.defenses {
			lv, lrep, err = detectors.LoadLiveness(ctx, db, paths)
		} else {
			rep, lrep, err = detectors.Detect(ctx, db, paths, ds, detectors.Options{Settings: settings, Progress: bar.update})
		}
		bar.finish()
		return lrep, err
	})
	if err != nil {
		return err
	}
	defer db.Close()
	if opts.defenses {
		return runDefenses(sys, lv, opts.format.value, threshold)
	}
	for _, f := range rep.Unread {
		fmt.Fprintf(sys.Err, "%s: warning: read by the SQL detectors only (its events came from Parquet, and the file is no longer there); the detectors over the event stream did not see it\n", f)
	}
	wd, _ := os.Getwd() // "" when unknown: paths are then shown as found
	if err := report.WriteDetect(sys.Out, opts.format.value, rep, report.DetectOptions{Limit: opts.limit, Version: currentVersion().Version, Dir: wd}); err != nil {
		return err
	}
	failing := 0
	for _, f := range rep.Findings {
		if threshold > 0 && f.Severity.Rank() >= threshold {
			failing++
		}
	}
	if failing == 0 {
		return nil
	}
	fmt.Fprintf(sys.Err, "retrace: detect: %s at or above %s (--fail-on %s)\n", plural(failing, "finding"), opts.failOn, opts.failOn)
	return &exitError{code: ExitGate, err: errReported}
}

// detectSettings reads the thresholds of the detectors: section of the
// configuration file path, or of ./retrace.yaml when path is empty and
// that file exists, and checks them against the whole catalog (so a
// threshold of a detector --skip leaves out is still checked).
func detectSettings(path string) (detectors.Settings, error) {
	if path == "" {
		if _, err := os.Stat(config.FileName); err != nil {
			return nil, nil
		}
		path = config.FileName
	}
	f, err := config.LoadFile(path)
	if err != nil {
		return nil, invalid(err)
	}
	s := detectors.Settings(f.Config.Detectors)
	if err := s.Check(detectors.Catalog(), func(id, name string) string {
		if name == "" {
			return f.At("detectors", id)
		}
		return f.At("detectors", id, name)
	}); err != nil {
		return nil, invalid(err)
	}
	return s, nil
}

// runDefenses prints the liveness table lv and fails the gate, as the
// dead_defense detector (a warning) would, when a defense is dead and
// --fail-on is warning or info.
func runDefenses(sys *IO, lv detectors.Liveness, format string, threshold int) error {
	if err := report.WriteLiveness(sys.Out, format, lv); err != nil {
		return err
	}
	dead := 0
	for _, r := range lv.Defenses {
		if r.Verdict == detectors.VerdictDead {
			dead++
		}
	}
	if dead == 0 || threshold == 0 || threshold > detectors.SeverityWarning.Rank() {
		return nil
	}
	fmt.Fprintf(sys.Err, "retrace: detect: %s dead: enabled, their condition occurred, and they never acted (dead_defense in docs/failure-modes.md)\n", plural(dead, "defense"))
	return &exitError{code: ExitGate, err: errReported}
}
