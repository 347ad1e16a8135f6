package scenarios

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/agent/sandbox"
	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/harness"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/trajectory"
)

// SystemPrompt is the base system prompt of a scenario's agent; it is
// retrace run's, so that a scenario sees what a run sees.
const SystemPrompt = "You are a careful software engineering agent working in the user's workspace. Use the tools to inspect before you change, and say what you did."

// Options are the knobs of Run.
type Options struct {
	// Parallel is how many runs go at once; 0 means one per core.
	Parallel int
	// Repeat, when above 0, replaces every scenario's own repeat count.
	Repeat int
	// Out, when set, is where the recordings are kept: Out/runs, each
	// with a workspace snapshot so that retrace replay can play it. ""
	// records into a temporary directory removed at the end.
	Out string
	// HarnessVersion is recorded in each session_start.
	HarnessVersion string
	// Clock times the runs; nil means time.Now.
	Clock func() time.Time
	// AfterRun, when set, is called after each run that recorded a
	// session and was checked, while its workspace still exists (from
	// several goroutines at once): --update reads what the run did.
	AfterRun func(s *Scenario, repeat int, workspace string, res results.RunResult)
	// Provider, when set, makes the model of each run (a new one a run,
	// so that runs share no state): the scenarios then run against it
	// and their scripts are unused; Model names the model it is asked
	// for, recorded in each session_start. Without it, a `model: live`
	// scenario cannot run: its runs have the error verdict (retrace eval
	// leaves such scenarios out before it calls Run).
	Provider func() (llm.Provider, error)
	Model    string
	// Tags are run labels recorded in every run's session_start.tags,
	// beside the runner's own eval_scenario and eval_repeat, which win.
	Tags map[string]string
	// HarnessRevision is recorded in each session_start.
	HarnessRevision string
	// RequireIsolation refuses to run an agent CLI (a scenario's agent:)
	// that cannot have a network namespace of its own; without it such a
	// run goes on with a warning (Warn, RunResult.Warnings).
	RequireIsolation bool
	// NoSandbox runs the scenarios' tool processes without the kernel
	// sandbox (retrace eval --no-sandbox), recorded in each session_start.
	NoSandbox bool
	// AgentPath is the PATH an agent CLI runs with; "" is this process's.
	AgentPath string
	// Warn, when set, is told what the user must know while the suite
	// runs, such as an agent running without network isolation (from
	// several goroutines at once).
	Warn func(string)
	// Key, when set, signs every recording as the user's own (see
	// recorder.Key), so that the user's replay of Out applies each run's
	// permission mode and rules.
	Key *recorder.Key
	// Progress, when set, is told after each run that finished: done of
	// total runs, the scenario and its run's result as it stands before
	// the detectors and thresholds (which run over all recordings at the
	// end) are checked. Calls come one at a time.
	Progress func(done, total int, s *Scenario, res results.RunResult)
}

// clock returns the clock of the runs.
func (o Options) clock() func() time.Time {
	if o.Clock == nil {
		return time.Now
	}
	return o.Clock
}

// Run runs every scenario of suite, each Repeat times, in a fresh
// temporary workspace through the real runtime with its scripted model,
// records each run, runs the detectors over the recordings, checks every
// expectation and returns the results, sorted by file and name. An error
// is retrace's own (a directory that cannot be made); a run that cannot
// be run is a result with the error verdict. When ctx is cancelled (the
// eval was interrupted), the runs under way are cut off and left out, no
// other run starts, and the runs that finished are judged as usual and
// returned in results marked Interrupted, NotRun counting the others.
func Run(ctx context.Context, suite []*Scenario, opts Options) (*results.Results, error) {
	clock := opts.clock()
	start := clock()
	root, err := os.MkdirTemp("", "retrace-eval-")
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer os.RemoveAll(root)
	runs := filepath.Join(root, "runs")
	if opts.Out != "" {
		runs = filepath.Join(opts.Out, "runs")
	}
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	home := filepath.Join(root, "home")
	if err := harness.ThrowawayHome(home); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	suite = sorted(suite)
	type job struct {
		s             *Scenario
		index, repeat int
		res           *results.RunResult
	}
	out := &results.Results{Version: results.Version, Scenarios: make([]results.ScenarioResult, len(suite))}
	var jobs []job
	for i, s := range suite {
		n := s.Repeat
		if opts.Repeat > 0 {
			n = opts.Repeat
		}
		if s.Exhibit() {
			// A recording does not change between runs.
			n = 1
		}
		sr := &out.Scenarios[i]
		*sr = results.ScenarioResult{Name: s.Name, File: s.File, SuitePath: s.SuitePath, Description: s.Description, Tags: s.Tags, Runs: make([]results.RunResult, n), Live: opts.Provider != nil}
		for r := range n {
			jobs = append(jobs, job{s: s, index: i, repeat: r + 1, res: &sr.Runs[r]})
		}
	}
	workers := opts.Parallel
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	next := make(chan job)
	var wg sync.WaitGroup
	var progressMu sync.Mutex
	done := 0
	r := &runner{root: root, runs: runs, home: home, opts: opts}
	defer func() {
		if r.db != nil {
			r.db.Close()
		}
	}()
	for range min(workers, max(len(jobs), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				res := r.run(ctx, j.s, j.index, j.repeat)
				if ctx.Err() != nil {
					// Cut off by the interruption: not a finished run.
					continue
				}
				*j.res = res
				if opts.Progress != nil {
					progressMu.Lock()
					done++
					opts.Progress(done, len(jobs), j.s, res)
					progressMu.Unlock()
				}
			}
		}()
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		next <- j
	}
	close(next)
	wg.Wait()
	if ctx.Err() != nil {
		// Interrupted: the results hold the runs that finished, judged
		// as usual, so that what ran is not lost.
		out.Interrupted = true
		suite, out.NotRun = keepFinished(suite, out)
	}
	// The runs that finished are judged whatever comes now: an
	// interruption while their recordings load would otherwise lose
	// every verdict of a suite that ran through (beforeJudge lets a test
	// interrupt there).
	beforeJudge()
	ctx = context.WithoutCancel(ctx)
	if err := r.detect(ctx, suite, out); err != nil {
		return nil, err
	}
	if err := r.detectExhibits(ctx, suite, out); err != nil {
		return nil, err
	}
	if err := r.thresholds(ctx, suite, out); err != nil {
		return nil, err
	}
	for i := range out.Scenarios {
		out.Scenarios[i].Decide()
	}
	out.DurationMs = trajectory.Millis(clock().Sub(start))
	return out, nil
}

// beforeJudge is called between the runs and their judging; a test sets
// it to interrupt there.
var beforeJudge = func() {}

// keepFinished drops the runs that never finished (Repeat still 0) and
// the scenarios left with none, from results and from suite alike (their
// indexes match), and returns the suite kept and how many runs it
// dropped.
func keepFinished(suite []*Scenario, res *results.Results) ([]*Scenario, int) {
	dropped := 0
	kept := []results.ScenarioResult{}
	var keptSuite []*Scenario
	for i, s := range res.Scenarios {
		runs := s.Runs[:0]
		for _, run := range s.Runs {
			if run.Repeat == 0 {
				dropped++
				continue
			}
			runs = append(runs, run)
		}
		s.Runs = runs
		if len(runs) > 0 {
			kept = append(kept, s)
			keptSuite = append(keptSuite, suite[i])
		}
	}
	res.Scenarios = kept
	return keptSuite, dropped
}

// runner holds what the runs of one Run share.
type runner struct {
	root, runs, home string
	opts             Options
	// db holds the recorded runs once recordings loaded them, for the
	// detectors and the thresholds alike; nil until then.
	db *metrics.DB
	// versions are the agent CLIs' versions, asked once per eval.
	versions agentVersions
}

// recordings returns one database holding the recordings of every run
// that detectors or thresholds judge (the exhibits' are judged alone),
// loaded on first use, so that a suite pays for one load; nil when no
// run recorded anything. Run closes it.
func (r *runner) recordings(ctx context.Context, suite []*Scenario, res *results.Results) (*metrics.DB, error) {
	if r.db != nil {
		return r.db, nil
	}
	var files []string
	seen := map[string]bool{}
	for i, s := range suite {
		if s.Exhibit() && len(s.Expect.Metrics) == 0 {
			continue
		}
		for _, run := range res.Scenarios[i].Runs {
			if run.Trajectory != "" && run.Error == "" && !seen[run.Trajectory] {
				seen[run.Trajectory] = true
				files = append(files, run.Trajectory)
			}
		}
	}
	if len(files) == 0 {
		return nil, nil
	}
	db, err := metrics.Open(ctx, metrics.Options{})
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if _, err := db.Load(ctx, files...); err != nil {
		db.Close()
		return nil, fmt.Errorf("eval: load the recordings: %w", err)
	}
	r.db = db
	return db, nil
}

// run plays one repeat of s.
func (r *runner) run(ctx context.Context, s *Scenario, index, repeat int) (res results.RunResult) {
	if s.Exhibit() {
		return r.exhibit(ctx, s, index)
	}
	if s.Agent != nil {
		return r.runAgent(ctx, s, index, repeat)
	}
	res.Repeat = repeat
	clock := r.opts.clock()
	start := clock()
	defer func() { res.DurationMs = trajectory.Millis(clock().Sub(start)) }()
	// The workspaces of a scenario's repeats lie side by side, named by
	// the repeat, until Run ends; harness.ScenarioHome finds the home
	// from one.
	ws := filepath.Join(r.root, "ws", fmt.Sprintf("%d-%s", index, s.Name), strconv.Itoa(repeat))
	if err := writeWorkspace(ws, s.Files); err != nil {
		res.Error = err.Error()
		return res
	}
	cfg, err := sessionConfig(s, ws, r.home)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	if r.opts.NoSandbox {
		cfg.Config.Sandbox.Mode = sandbox.ModeOff
		cfg.Sources["sandbox.mode"] = "--no-sandbox"
	}
	provider, err := r.provider(s)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	spec := harness.Spec{
		Workspace: ws, Config: cfg.Config, ConfigName: s.File + " (config) + " + cfg.Name(), ConfigSources: cfg.Sources, Key: r.opts.Key,
		Provider: provider, Model: r.opts.Model,
		System: SystemPrompt, Prompt: s.Prompt, Runs: r.runs, Clock: r.opts.Clock, Stream: s.Stream, BatchTools: s.BatchTools,
		HarnessVersion: cmp.Or(r.opts.HarnessVersion, "retrace eval"),
		Tags:           map[string]string{harness.ScenarioTag: s.Name, "eval_repeat": strconv.Itoa(repeat)},
	}
	spec.HarnessRevision = r.opts.HarnessRevision
	for k, v := range r.opts.Tags {
		if _, own := spec.Tags[k]; !own {
			spec.Tags[k] = v
		}
	}
	if s.Person != "" {
		spec.Prompter = harness.Person(s.Person == PersonApprove)
	}
	if s.Plant != nil {
		spec.Plant = s.Plant.Apply
		spec.Tags[harness.PlantTag] = s.Plant.String()
	}
	if len(s.FollowUps) > 0 {
		spec.NextPrompt = followUps(s.FollowUps)
	}
	if r.opts.Out != "" {
		spec.Snapshot = &recorder.SnapshotOptions{}
	}
	timeout := cmp.Or(s.Timeout, DefaultTimeout)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sess, err := harness.Build(rctx, spec)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Trajectory, res.Session = sess.Recorder.Path(), sess.Recorder.SessionID()
	out, err := sess.Run(rctx)
	if _, cerr := sess.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Reason, res.Turns, res.ExitCode = out.Reason, out.Turns, ExitCodeOf(out.Reason)
	if out.Err != nil {
		res.EndError = out.Err.Error()
	}
	rec, err := readRecording(res.Trajectory)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Failures = append(res.Failures, checkOutcome(s.Expect.Outcome, rec, res)...)
	res.Failures = append(res.Failures, checkFiles(s, ws, rec)...)
	for _, e := range s.Expect.Events {
		res.Failures = append(res.Failures, checkEvent(e, rec)...)
	}
	for _, r := range s.Expect.Replies {
		res.Failures = append(res.Failures, checkReply(r, rec)...)
	}
	res.Failures = append(res.Failures, checkSequence(s.Expect.Sequence, rec)...)
	res.Failures = append(res.Failures, checkDivergences(s, rec)...)
	if r.opts.AfterRun != nil {
		r.opts.AfterRun(s, repeat, ws, res)
	}
	return res
}

// provider is the model of one run of s: a real one when Options.Provider
// is set, else the scenario's script, parsed again for each run.
func (r *runner) provider(s *Scenario) (llm.Provider, error) {
	if r.opts.Provider != nil {
		return r.opts.Provider()
	}
	if s.Live {
		return nil, fmt.Errorf("%s: scenario %s has model: live and runs only against a real model (retrace eval --provider)", s.File, s.Name)
	}
	return harness.NewProvider(harness.Model{Script: s.Script, ScriptName: s.File})
}

// ExitCodeOf is the exit code retrace run gives a session that ended
// for reason: 0 finished, 1 an error, 4 stopped before finishing.
func ExitCodeOf(reason trajectory.EndReason) int {
	switch reason {
	case trajectory.EndTurn, trajectory.EndStopSequence:
		return 0
	case trajectory.EndError:
		return 1
	}
	return 4
}

// writeWorkspace makes dir and writes the scenario's files into it.
func writeWorkspace(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	for rel, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	return nil
}

// sessionConfig layers the session's configuration as retrace run does:
// the defaults, the scenario's config as the trusted file, and the
// workspace's own retrace.yaml over it, restrict-only. The home directory
// is one of the run's own, so that no user's file is read.
func sessionConfig(s *Scenario, ws, home string) (config.Resolved, error) {
	res, err := config.Resolve(config.Sources{Workspace: filepath.Join(ws, config.FileName), Defaults: baseConfig(s),
		DefaultsName: s.File + " (config)"})
	if err != nil {
		return res, err
	}
	if s.MaxTurns > 0 {
		res.Config.Limits.MaxTurns = s.MaxTurns
		res.Sources["limits.max_turns"] = s.File + " (limits)"
	}
	res.Config.Permissions.Home = home
	return res, nil
}

// baseConfig is the trusted configuration of s's sessions: the
// defaults with the scenario's config over them.
func baseConfig(s *Scenario) config.Config {
	base := config.Overlay(config.Config{}, s.Config)
	if base.Limits.MaxTurns == 0 {
		base.Limits.MaxTurns = DefaultMaxTurns
	}
	return base
}

// recording is a run's events, each with its line in the trajectory file.
type recording struct {
	file   string
	events []located
	end    *located
}

type located struct {
	trajectory.Event
	line int
}

// at names an event's place in the recording, as file:line.
func (r *recording) at(l located) string { return fmt.Sprintf("%s:%d", r.file, l.line) }

func readRecording(path string) (*recording, error) {
	rd, err := trajectory.Open(path)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	rec := &recording{file: path}
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("the recording %s does not read back: %w", path, err)
		}
		rec.events = append(rec.events, located{Event: ev, line: rd.Line()})
		if ev.Type() == trajectory.TypeSessionEnd {
			rec.end = &rec.events[len(rec.events)-1]
		}
	}
	return rec, nil
}

// detect runs the detectors over every recording at once, when some
// scenario expects something of them, and checks those expectations. The
// detectors that judge a corpus are left out: a suite is not one.
func (r *runner) detect(ctx context.Context, suite []*Scenario, res *results.Results) error {
	need := false
	for _, s := range suite {
		// An exhibit's recordings are judged alone (see exhibit).
		need = need || !s.Exhibit() && s.Expect.Detectors != nil
	}
	if !need {
		return nil
	}
	db, err := r.recordings(ctx, suite, res)
	if err != nil || db == nil {
		return err
	}
	rep, err := detectors.Run(ctx, db, sessionDetectors(), detectors.Options{})
	if err != nil {
		return fmt.Errorf("eval: detectors: %w", err)
	}
	bySession := map[string][]detectors.Finding{}
	for _, f := range rep.Findings {
		bySession[f.Session] = append(bySession[f.Session], f)
	}
	for i, s := range suite {
		if s.Exhibit() {
			continue
		}
		for k := range res.Scenarios[i].Runs {
			run := &res.Scenarios[i].Runs[k]
			if run.Session == "" || run.Error != "" {
				continue
			}
			fs := bySession[run.Session]
			for _, f := range fs {
				if run.Findings == nil {
					run.Findings = map[string]int{}
				}
				run.Findings[f.Detector]++
			}
			run.Failures = append(run.Failures, checkDetectors(s.Expect.Detectors, fs)...)
		}
	}
	return nil
}

// SuiteHash identifies a suite: the SHA-256 over its scenarios' files,
// names and archive digests, in file and name order. Each shard of one
// suite records the same hash (the suite is hashed before --shard), so
// that Merge can refuse shards of different suites.
func SuiteHash(suite []*Scenario) string {
	h := sha256.New()
	for _, s := range sorted(suite) {
		fmt.Fprintf(h, "%s\x00%s\x00%s\n", s.File, s.Name, s.Digest)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sorted returns the suite in file and name order, the order of results.
func sorted(suite []*Scenario) []*Scenario {
	out := slices.Clone(suite)
	slices.SortStableFunc(out, func(a, b *Scenario) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Filter keeps the scenarios whose name run matches (nil: all) and that
// carry one of tags (none: all).
func Filter(suite []*Scenario, run *regexp.Regexp, tags []string) []*Scenario {
	var out []*Scenario
	for _, s := range suite {
		if run != nil && !run.MatchString(s.Name) {
			continue
		}
		if len(tags) > 0 && !slices.ContainsFunc(s.Tags, func(t string) bool { return slices.Contains(tags, t) }) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// BaselineOfSelected returns base without the scenarios of suite that
// have no result in ran: left out by --run, --filter-tag or --shard,
// skipped, or not run because the eval was interrupted. Those are no
// change since the baseline, and comparing with them would call each
// "removed" while its file is still in the suite. A scenario of base that
// the suite no longer has stays, and is removed indeed.
func BaselineOfSelected(base *results.Results, suite []*Scenario, ran *results.Results) *results.Results {
	out := *base
	out.Scenarios = nil
	for _, s := range base.Scenarios {
		inSuite := slices.ContainsFunc(suite, func(x *Scenario) bool { return x.Name == s.Name })
		didRun := slices.ContainsFunc(ran.Scenarios, func(x results.ScenarioResult) bool { return x.Name == s.Name })
		if inSuite && !didRun {
			continue
		}
		out.Scenarios = append(out.Scenarios, s)
	}
	return &out
}

// Shard returns shard i of n (from 1) of suite: in file and name order,
// every n-th scenario from the i-th, so that the n shards partition the
// suite exactly and each machine of a CI matrix computes the same split.
func Shard(suite []*Scenario, i, n int) ([]*Scenario, error) {
	if n < 1 || i < 1 || i > n {
		return nil, fmt.Errorf("%w: shard %d/%d: want i/n with 1 <= i <= n", ErrInvalid, i, n)
	}
	var out []*Scenario
	for k, s := range sorted(suite) {
		if k%n == i-1 {
			out = append(out, s)
		}
	}
	return out, nil
}

// followUps gives prompts one by one, as a person typing them would, and
// then ends the session.
func followUps(prompts []string) func(context.Context) (string, bool) {
	next := 0
	return func(context.Context) (string, bool) {
		if next == len(prompts) {
			return "", false
		}
		next++
		return prompts[next-1], true
	}
}
