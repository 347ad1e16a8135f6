package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/harness"
	"github.com/retrace-dev/retrace/report"
	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/scenarios"
	"github.com/retrace-dev/retrace/terminal"
)

type evalOptions struct {
	parallel int
	run      string
	tags     []string
	labels   labelFlag
	shard    string
	repeat   int
	junit    string
	out      string
	baseline string
	update   bool
	provider string
	model    string
	baseURL  string
	format   *formatFlag
	// requireAgents fails the scenarios of an agent CLI that is not
	// installed instead of skipping them; requireIsolation refuses to run
	// an agent without a network namespace of its own.
	requireAgents, requireIsolation bool
	// noSandbox runs the tool processes without the kernel sandbox.
	noSandbox bool
}

func newEvalCmd(sys *IO) *cobra.Command {
	opts := &evalOptions{}
	cmd := &cobra.Command{
		Use:   "eval [SUITE...]",
		Short: "Run a suite of scenarios through the real runtime and check what happened",
		Long: `Eval runs regression scenarios: each scenario (a .txtar file, or a directory
of them; no argument runs the built-in suite) plays a task with a scripted
model through the real runtime — loop, defenses, permission chain, tools —
in a fresh temporary workspace, records the session, runs the detectors on
the recording and checks every expectation: the outcome, the files after
the run, the events (tools called, permission decisions, failures,
defenses, reminders, counts) and the detectors that must or must not fire.
The format is described in the scenarios package's documentation.

expect.metrics holds thresholds over all of a scenario's runs, checked
after they ran, with the numbers retrace metrics reports:

  p95(bash) < 2s                     a tool's calls' own durations (ms, s, m)
  rate(failure, tool=bash) <= 0.1    of the bash calls (the denominator), failed
  count(tool_call, tool=read) >= 2   events of a type, over all runs
  mean(turns) <= 6                   per run; also min, max, p50, p90, p99
  {threshold: "mean(turns) <= 6", min_runs: 5}

Functions: p50 p90 p95 p99 mean min max over a tool name, duration,
model_duration, context_tokens, output_tokens, turns or tool_calls; rate
of failure, success, lost, truncated, spilled, denied or prompted among
the tool calls; count of an event type. A threshold with too few runs or
samples to decide (min_runs, a rate without calls, a p95 over fewer than
20 samples) is inconclusive, never a pass.

--provider anthropic|openai|openai-chat --model M [--base-url URL] runs
the same scenarios against a real model, its key and endpoint read from
the environment as retrace run --provider reads them (ANTHROPIC_API_KEY,
OPENAI_API_KEY, ...): the scripted turns are unused, and the outcome,
file, event, detector and metric expectations are checked as usual. A
scenario with model: live has no script and runs only with --provider;
without it, it is skipped with a note, not failed.

A scenario may run a third-party agent CLI instead of retrace's runtime:
agent: claude-code, agent: codex, agent: opencode, or agent: {command:
[...], wire: anthropic|openai-responses|openai-chat, env: {...}}. The mock
LLM serves the scenario's model: script and records the wire; the agent runs in the
fresh workspace with the mock as its model and, where the platform allows
(unshare), in a network namespace of its own with nothing but the mock to
reach (else with a loud warning; --require-isolation refuses). Its own
transcript is imported and merged into the session, and the expectations,
detectors and thresholds are checked as for any scenario. agent.main
says which conversation is the session (first, longest, last,
route:NAME; opencode's default is longest, since its title request comes
first); the others are listed as side_sessions. A request the script
could not answer is the run's first failure, naming the request and what
it sent. The profiles cap the client's retries; the client's version is
recorded (agent_version), and one other than the tested version is
warned of in one line (docs/agents.md). A scenario whose agent CLI is
not installed is skipped with the reason, or fails with
--require-agents; when every scenario was skipped, nothing was tested
and eval exits 4 with the reasons, never 0.

A bad suite is refused before anything runs, with every problem of every
scenario as file:line: what is wrong.

The summary is always printed, failures first, each with the expectation,
what happened and the trajectory line that shows it. --repeat N runs each
scenario N times: a scenario that passes some runs and fails others is
flaky, never a pass, and its line gives pass^k (the chance that k runs
all pass) and pass@k (that one of k does), estimated from the runs, as a
live scenario's does; results.json has them (pass_k). --shard i/n runs the i-th of n deterministic parts of
the suite, so a CI matrix can split it; 'retrace eval merge' joins the
shards' results (--out DIR/results.json) into what one run would report.

--filter-tag NAME runs only the scenarios tagged NAME (repeatable: any of
them). --tag KEY=VALUE is something else: a run label, recorded in every
run's session_start.tags next to eval_scenario and eval_repeat, so that
query and diff can tell this run's sessions from another's.

--baseline RESULTS compares with a saved run (its --out DIR or
results.json), matching scenarios by name: a scenario whose runs all
passed there and not all do now is a regression, listed first, and exits
3; fixed, changed, new and removed scenarios are listed too (a scenario
of the suite that --run, --filter-tag or --shard left out, that was
skipped or that an interrupt kept from running is not compared: it was not
removed). A scripted
scenario needs no statistics to regress; a live one (--provider) regresses
only when Fisher's exact test on its runs' pass counts says so at 0.05,
else its change is inconclusive (exit 4: run it more). retrace diff of the
two --out directories gives the same verdict (its gate 'no regressed').

--out DIR is locked while an eval writes it: a second eval (or eval
merge) into the same DIR at once exits 2 naming the holder (its pid and
start time), so results.json and runs/ never tell two runs' stories. The
lock (DIR/.retrace-eval.lock, flock) is released when the eval ends, even
killed. For the same reason runs/ never mixes two evals' recordings: an
earlier eval's output into DIR (its results.json and the recordings it
names) is replaced, and a runs/ holding any other recording (your own
runs, with no results.json naming them) is refused (exit 2) and left as
it is.

An eval stopped by SIGINT or SIGTERM still judges the runs that finished,
writes results.json marked interrupted (with the number of runs that did
not finish), prints their summary and exits 4 at best.

--update rewrites the expectations of the golden scenarios (tag: golden)
from what their runs did: the outcome, a count per tool called, and the
files the run created, changed or deleted; comments and the rest of the
file stay, for review in a diff. A scenario that errored or whose runs
did different things is refused. The exit leaves the rewritten scenarios
out.

Progress goes to stderr: on a terminal a line of the runs done, failed so
far and time spent, with each run listed above it as it finishes; in a log
a plain line every 10s (RETRACE_PROGRESS: a period such as 30s, a number
of runs, or off).

Exit codes: 0 every scenario passed, 3 a scenario or threshold failed or
a scenario regressed since --baseline, 4 inconclusive (a scenario was
flaky, a threshold had too few runs to decide, or every scenario was
skipped), 2 a bad suite or bad
flags, 1 retrace could not run a scenario.`,
		Example: `  retrace eval
  retrace eval ./evals --junit report.xml --out eval-out
  retrace eval ./evals --shard 2/3 --out shard-2
  retrace eval merge shard-1 shard-2 shard-3 --junit report.xml
  retrace eval ./evals --run '^denial' --repeat 5
  retrace eval ./evals --baseline last-run --out this-run
  retrace eval ./evals --provider anthropic --model claude-sonnet-4-5 --out live-run
  retrace eval ./evals --filter-tag golden --update && git diff ./evals
  retrace eval ./evals --tag prompt=v2 --out after`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				// The first signal asks the eval to wind down and report
				// what finished; a second one stops the process at once.
				<-ctx.Done()
				stop()
			}()
			return runEval(ctx, sys, opts, args)
		},
	}
	f := cmd.Flags()
	f.IntVarP(&opts.parallel, "parallel", "j", 0, "scenario runs at once (default: the number of cores)")
	f.StringVar(&opts.run, "run", "", "run only the scenarios whose name matches this regular expression")
	f.StringSliceVar(&opts.tags, "filter-tag", nil, "run only the scenarios with one of these tags (repeatable)")
	opts.labels.hint = "to select scenarios by tag use --filter-tag"
	f.Var(&opts.labels, "tag", "run label KEY=VALUE recorded in every run's session_start.tags, with eval_scenario and eval_repeat (repeatable)")
	f.StringVar(&opts.shard, "shard", "", "run only shard i of n of the suite, as i/n (e.g. 2/3)")
	f.BoolVar(&opts.requireAgents, "require-agents", false, "fail the scenarios whose agent CLI (agent: claude-code, codex, opencode, a command) is not installed, instead of skipping them")
	f.BoolVar(&opts.requireIsolation, "require-isolation", false, "refuse to run an agent CLI without a network namespace of its own (instead of warning)")
	f.BoolVar(&opts.noSandbox, "no-sandbox", false, "run the tool processes without the kernel sandbox (recorded in each session_start)")
	f.IntVar(&opts.repeat, "repeat", 0, "run each scenario this many times (default: the scenario's repeat, else 1)")
	f.StringVar(&opts.junit, "junit", "", "write a JUnit XML report to this file")
	f.StringVar(&opts.out, "out", "", "keep the results (results.json) and every recorded run (runs/) in this directory")
	f.BoolVar(&opts.update, "update", false, "rewrite the expectations of the golden scenarios (tag: golden) from what their runs did, for review in a diff")
	f.StringVar(&opts.provider, "provider", "", "run the scenarios against a real model instead of their scripts: anthropic, openai (Responses API) or openai-chat")
	f.StringVar(&opts.model, "model", "", "model name for --provider")
	f.StringVar(&opts.baseURL, "base-url", "", "API endpoint for --provider (default from ANTHROPIC_BASE_URL / OPENAI_BASE_URL)")
	f.StringVar(&opts.baseline, "baseline", "", "compare with a saved run's results (an --out DIR or its results.json): a scenario that passed there and fails now is a regression")
	opts.format = addFormatFlag(cmd, "table", "markdown", "json")
	cmd.AddCommand(newEvalMergeCmd(sys))
	return cmd
}

func runEval(ctx context.Context, sys *IO, opts *evalOptions, args []string) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	if opts.parallel < 0 || opts.repeat < 0 {
		return usage(errors.New("-j and --repeat take a positive number"))
	}
	var runRe *regexp.Regexp
	if opts.run != "" {
		re, err := regexp.Compile(opts.run)
		if err != nil {
			return usage(fmt.Errorf("--run: %w", err))
		}
		runRe = re
	}
	var suite []*scenarios.Scenario
	var err error
	if len(args) == 0 {
		suite, err = scenarios.Builtin()
	} else {
		suite, err = scenarios.Load(args...)
	}
	if err != nil {
		return suiteError(sys, err)
	}
	// The baseline is read, and where the results go checked, before
	// anything runs, so that a wrong path costs no run.
	if opts.junit != "" {
		if err := outputDirExists("--junit", opts.junit); err != nil {
			return err
		}
	}
	var base *results.Results
	if opts.baseline != "" {
		if base, err = readResultsArg(opts.baseline); err != nil {
			return invalid(fmt.Errorf("--baseline: %w", err))
		}
	}
	selected := scenarios.Filter(suite, runRe, opts.tags)
	// Hashed before --shard: every shard of one run records the same.
	suiteHash := scenarios.SuiteHash(selected)
	shard := ""
	if opts.shard != "" {
		i, n, err := parseShard(opts.shard)
		if err != nil {
			return usage(err)
		}
		if selected, err = scenarios.Shard(selected, i, n); err != nil {
			return usage(err)
		}
		shard = opts.shard
	}
	if len(selected) == 0 && shard == "" {
		return usage(fmt.Errorf("no scenario of the %s matches --run and --filter-tag", plural(len(suite), "scenario")))
	}
	var golden *scenarios.Golden
	if opts.update {
		if len(args) == 0 {
			return usage(errors.New("--update rewrites scenario files: name the suite (the built-in one is not a file to rewrite)"))
		}
		if !slices.ContainsFunc(selected, func(s *scenarios.Scenario) bool { return slices.Contains(s.Tags, scenarios.GoldenTag) }) {
			return usage(fmt.Errorf("--update: none of the selected scenarios is golden; tag the ones to rewrite with %q", scenarios.GoldenTag))
		}
		golden = scenarios.NewGolden()
	}
	if opts.provider == "" && (opts.model != "" || opts.baseURL != "") {
		return usage(errors.New("--model and --base-url name the real model of --provider; give --provider anthropic|openai|openai-chat too"))
	}
	ro := scenarios.Options{
		Parallel: opts.parallel, Repeat: opts.repeat, Out: opts.out,
		HarnessVersion: "retrace " + currentVersion().Version, Clock: sys.Now,
		HarnessRevision: harness.Version().Revision, Tags: opts.labels.labels,
	}
	for _, k := range []string{harness.ScenarioTag, "eval_repeat", harness.PlantTag} {
		if _, ok := opts.labels.labels[k]; ok {
			return usage(fmt.Errorf("--tag %s: eval sets this label itself; choose another key", k))
		}
	}
	if opts.provider != "" {
		// One is built now so that a bad provider or a missing --model
		// is refused before anything runs; each run gets its own.
		if _, err := liveProvider(sys.Getenv, opts.provider, opts.model, opts.baseURL); err != nil {
			return err
		}
		ro.Provider = func() (llm.Provider, error) {
			return liveProvider(sys.Getenv, opts.provider, opts.model, opts.baseURL)
		}
		ro.Model = opts.model
	}
	// A run in which every scenario was skipped tested nothing: it exits
	// 4, never 0, so that a CI job without the agent CLIs does not go green.
	before := len(selected)
	var skipped []string
	if opts.provider == "" {
		selected, skipped = skipLive(sys, selected)
	}
	ro.RequireIsolation, ro.AgentPath, ro.Warn = opts.requireIsolation, sys.Getenv("PATH"), syncedWarn(sys)
	ro.NoSandbox = opts.noSandbox
	if !opts.requireAgents {
		var why []string
		selected, why = skipMissingAgents(sys, selected)
		skipped = append(skipped, why...)
	}
	if opts.out != "" {
		if err := mkdirPrivate(opts.out); err != nil {
			return invalid(fmt.Errorf("--out %s: %w", opts.out, err))
		}
		release, err := scenarios.LockOut(opts.out, sys.Now())
		if err != nil {
			return invalid(err)
		}
		defer release()
		if err := scenarios.PrepareOut(opts.out); err != nil {
			if errors.Is(err, scenarios.ErrOutHoldsRuns) {
				return invalid(err)
			}
			return err
		}
		// The kept runs are the user's own: signed, their replay applies
		// each scenario's permission mode and rules.
		ro.Key = userKey(sys)
	}
	if golden != nil {
		ro.AfterRun = golden.AfterRun
	}
	bar := evalProgress(sys, &ro)
	res, err := scenarios.Run(ctx, selected, ro)
	bar.Finish()
	if err != nil {
		return err
	}
	res.Shard, res.SuiteHash, res.RetraceVersion = shard, suiteHash, currentVersion().Version
	if base != nil {
		res.Baseline = results.Compare(scenarios.BaselineOfSelected(base, suite, res), res, opts.baseline, 0)
	}
	if opts.out != "" {
		if err := writeResults(filepath.Join(opts.out, resultsFile), res); err != nil {
			return err
		}
	}
	err = reportEval(sys, res, opts.format.value, opts.junit, opts.out == "")
	if err == nil && before > 0 && len(selected) == 0 {
		return &exitError{code: ExitInconclusive, err: allSkipped(skipped)}
	}
	if golden == nil || res.Interrupted {
		return err
	}
	var ee *exitError
	if err != nil && !errors.As(err, &ee) {
		return err
	}
	return updateGolden(sys, golden, selected, res)
}

// skipLive leaves out the `model: live` scenarios, which have no script
// to play without --provider, saying so for each: a skip, not a failure.
// It returns the scenarios left and why each other was skipped.
func skipLive(sys *IO, suite []*scenarios.Scenario) (out []*scenarios.Scenario, skipped []string) {
	for _, s := range suite {
		if s.Live {
			fmt.Fprintf(sys.Err, "skipped %s (%s): it has model: live and runs only with --provider\n", s.Name, s.File)
			skipped = append(skipped, s.Name+" needs --provider")
			continue
		}
		out = append(out, s)
	}
	return out, skipped
}

// allSkipped is the error of an eval whose every selected scenario was
// skipped, saying why (the skips' distinct reasons, in order).
func allSkipped(why []string) error {
	var reasons []string
	for _, w := range why {
		if !slices.Contains(reasons, w) {
			reasons = append(reasons, w)
		}
	}
	return fmt.Errorf("every selected scenario was skipped (%s): nothing was tested", strings.Join(reasons, "; "))
}

// updateGolden rewrites the golden scenarios' expectations and says what
// it did, one line each. The exit is the run's, leaving out the scenarios
// now rewritten (their old expectations no longer stand); a refusal
// keeps its scenario's verdict, and an update that failed exits 1.
func updateGolden(sys *IO, golden *scenarios.Golden, suite []*scenarios.Scenario, res *results.Results) error {
	settled := map[string]bool{}
	failed := false
	for _, u := range golden.Update(suite, res) {
		switch {
		case u.Refused != "":
			fmt.Fprintf(sys.Err, "not updated %s (%s): %s\n", u.Name, u.File, u.Refused)
			failed = true
		case u.Updated:
			fmt.Fprintf(sys.Err, "updated %s (%s): %s; review it with a diff\n", u.Name, u.File, u.What)
			settled[u.Name] = true
		default:
			fmt.Fprintf(sys.Err, "unchanged %s (%s): its expectations already say what happened\n", u.Name, u.File)
			settled[u.Name] = true
		}
	}
	rest := &results.Results{Version: res.Version}
	for _, s := range res.Scenarios {
		if !settled[s.Name] {
			rest.Scenarios = append(rest.Scenarios, s)
		}
	}
	if err := evalExit(rest); err != nil {
		return err
	}
	if failed {
		return &exitError{code: ExitHarness, err: errReported}
	}
	return nil
}

// resultsFile is the name of the results under --out.
const resultsFile = scenarios.ResultsFile

// readResultsArg reads results from a results.json, or from the --out
// directory that holds one.
func readResultsArg(a string) (*results.Results, error) {
	p := a
	if info, err := os.Stat(a); err == nil && info.IsDir() {
		p = filepath.Join(a, resultsFile)
		// A named pipe there would block the read until a writer came,
		// past Ctrl-C.
		if rs, err := os.Stat(p); err == nil && !rs.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file; an eval --out directory holds results.json as one", p)
		}
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return results.Read(data, p)
}

// suiteError prints every problem of a bad suite, one a line, and exits 2.
func suiteError(sys *IO, err error) error {
	var pe *scenarios.ProblemsError
	if !errors.As(err, &pe) {
		return err
	}
	for _, p := range pe.Problems {
		fmt.Fprintln(sys.Err, p.Error())
	}
	fmt.Fprintf(sys.Err, "retrace: the suite has %s; nothing ran\n", plural(len(pe.Problems), "problem"))
	return &exitError{code: ExitInvalid, err: errReported}
}

func parseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("--shard %q: want i/n with 1 <= i <= n, e.g. 2/3", s)
	}
	return i, n, nil
}

func writeResults(path string, res *results.Results) error {
	f, err := createPrivate(path)
	if err != nil {
		return err
	}
	if err := res.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// reportEval prints the summary in format, writes the JUnit file, and
// maps the worst verdict to the exit code.
func reportEval(sys *IO, res *results.Results, format, junit string, gone bool) error {
	var err error
	// The summary holds what scenarios got, model text included.
	out := terminal.NewWriter(sys.Out)
	switch format {
	case "json":
		err = res.WriteJSON(sys.Out)
	case "markdown":
		err = report.WriteEvalMarkdown(out, res)
	default:
		err = report.WriteEvalTable(out, res)
	}
	if err != nil {
		return err
	}
	if res.Baseline != nil {
		switch format {
		case "markdown":
			err = report.WriteComparisonMarkdown(out, res.Baseline)
		case "table":
			err = report.WriteComparisonTable(out, res.Baseline)
		}
		if err != nil {
			return err
		}
	}
	if res.Interrupted {
		fmt.Fprintf(sys.Err, "retrace: interrupted: the summary holds the runs that finished; %s did not\n", plural(res.NotRun, "run"))
	}
	if res.Partial {
		fmt.Fprintf(sys.Err, "retrace: partial: these results lack %s\n", strings.Join(res.Missing, ", "))
	}
	if gone && res.Worst() != results.VerdictPass && format != "json" {
		fmt.Fprintln(sys.Err, "The recordings named above were in a temporary directory; add --out DIR to keep them.")
	}
	if junit != "" {
		f, err := createPrivate(junit)
		if err != nil {
			return err
		}
		if err := report.WriteJUnit(f, res, "retrace eval"); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return evalExit(res)
}

// evalExit maps the worst verdict, and a regression since the baseline,
// to the exit code.
func evalExit(res *results.Results) error {
	regressed := res.Baseline != nil && res.Baseline.Count(results.ChangeRegressed) > 0
	switch res.Worst() {
	case results.VerdictError:
		return &exitError{code: ExitHarness, err: errReported}
	case results.VerdictFail:
		return &exitError{code: ExitGate, err: errReported}
	}
	// A regression gates even when what regressed is only flaky or
	// inconclusive now.
	if regressed {
		return &exitError{code: ExitGate, err: errReported}
	}
	// What could not be decided: a flaky or inconclusive scenario, a live
	// scenario's change within chance, a run cut short, missing shards.
	undecided := res.Baseline != nil && res.Baseline.Count(results.ChangeInconclusive) > 0
	switch {
	case res.Worst() == results.VerdictFlaky, res.Worst() == results.VerdictInconclusive,
		undecided, res.Interrupted, res.Partial:
		return &exitError{code: ExitInconclusive, err: errReported}
	}
	return nil
}

type evalMergeOptions struct {
	allowPartial bool
	junit        string
	out          string
	baseline     string
	format       *formatFlag
}

func newEvalMergeCmd(sys *IO) *cobra.Command {
	opts := &evalMergeOptions{}
	cmd := &cobra.Command{
		Use:   "merge RESULTS...",
		Short: "Join the results of eval shards into one run's results",
		Long: `Merge reads the results of several 'retrace eval --shard i/n --out DIR' runs
(each DIR, or its results.json) and reports them as one run of the whole
suite: the same summary, JUnit file and exit code.

The results must be the shards 1/n to n/n of one run, each once, of the
same suite (its hash, recorded by each shard) by the same retrace
version: a missing shard, a shard given twice, a scenario in two shards
or shards of different suites or versions are refused (exit 2) with what
is wrong, e.g. "missing shards 2/3 and 3/3", so that a CI job whose other
shards failed to upload does not go green. --allow-partial merges a set
with missing shards anyway: the results are marked partial, name the
missing shards, and exit 4 at best.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usage(errors.New("give the results to merge: the --out directories of the shards, or their results.json"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEvalMerge(sys, opts, args)
		},
	}
	cmd.Flags().StringVar(&opts.junit, "junit", "", "write a JUnit XML report to this file")
	cmd.Flags().BoolVar(&opts.allowPartial, "allow-partial", false, "merge a set of shards with some missing; the results are marked partial and exit 4 at best")
	cmd.Flags().StringVar(&opts.out, "out", "", "write the merged results.json to this directory")
	cmd.Flags().StringVar(&opts.baseline, "baseline", "", "compare the merged results with a saved run's results, as eval --baseline does")
	opts.format = addFormatFlag(cmd, "table", "markdown", "json")
	return cmd
}

func runEvalMerge(sys *IO, opts *evalMergeOptions, args []string) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	var parts []*results.Results
	for _, a := range args {
		r, err := readResultsArg(a)
		if err != nil {
			return invalid(err)
		}
		parts = append(parts, r)
	}
	res, err := results.Merge(results.MergeOptions{AllowPartial: opts.allowPartial}, parts...)
	if err != nil {
		return invalid(err)
	}
	if opts.baseline != "" {
		base, err := readResultsArg(opts.baseline)
		if err != nil {
			return invalid(fmt.Errorf("--baseline: %w", err))
		}
		res.Baseline = results.Compare(base, res, opts.baseline, 0)
	}
	if opts.out != "" {
		if err := mkdirPrivate(opts.out); err != nil {
			return err
		}
		release, err := scenarios.LockOut(opts.out, sys.Now())
		if err != nil {
			return invalid(err)
		}
		defer release()
		if err := writeResults(filepath.Join(opts.out, resultsFile), res); err != nil {
			return err
		}
	}
	return reportEval(sys, res, opts.format.value, opts.junit, false)
}

// skipMissingAgents leaves out the scenarios whose agent CLI is not
// installed, saying so for each: a skip, not a failure (--require-agents
// runs them, and they fail). It returns the scenarios left and, for the
// others, which program is missing.
func skipMissingAgents(sys *IO, suite []*scenarios.Scenario) (out []*scenarios.Scenario, skipped []string) {
	for _, s := range suite {
		if err := scenarios.MissingAgent(s); err != nil {
			fmt.Fprintf(sys.Err, "skipped %s (%s): %v; --require-agents fails it instead\n", s.Name, s.File, err)
			skipped = append(skipped, scenarios.AgentProgram(s)+" is not on PATH")
			continue
		}
		out = append(out, s)
	}
	return out, skipped
}

// syncedWarn returns a scenarios.Options.Warn that prints each warning on
// a line of its own, from several runs at once.
func syncedWarn(sys *IO) func(string) {
	var mu sync.Mutex
	return func(msg string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(sys.Err, msg)
	}
}
