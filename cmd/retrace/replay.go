package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/compare"
	"github.com/retrace-dev/retrace/replay"
	"github.com/retrace-dev/retrace/terminal"
	"github.com/retrace-dev/retrace/trajectory"
)

type replayOptions struct {
	workspace string
	config    string
	out       string
	strict    bool
	keep      bool
	trust     bool
	noSandbox bool
	jobs      int
	details   bool
	runs      string
	format    *formatFlag
}

func newReplayCmd(sys *IO) *cobra.Command {
	opts := &replayOptions{}
	cmd := &cobra.Command{
		Use:   "replay (RUNS... | --runs DIR)",
		Short: "Replay recorded sessions through the real executor and report where they differ",
		Long: `Replay restores the recorded workspace snapshot into a temporary directory
(or --workspace DIR), runs the real agent loop and tool executor again with
the recorded model responses (a request past the recording is an error,
never a live call), records the replay as a new trajectory (--out, default
.retrace/replays) and compares the two at every step. The temporary
workspace is removed at the end; --keep keeps it and prints its path.

The replay starts from the configuration the session ran under: its
session_start records the effective configuration (after your file,
--config, the workspace's retrace.yaml and a scenario's config, redacted)
and the file and line each setting came from.

Your own recordings: retrace run, eval --out and replay sign each
session_start with a key of yours (recording.key, mode 0600, made on
first use in your user config directory). A recording whose signature
checks was made by you on this machine: its permission mode, rules and
your recorded answers apply as recorded, so it replays as it ran. Its
hooks and MCP servers run code outside the replay's throwaway workspace
and still need --trust-recording.

Any other recording is someone else's: whoever sent it chose what its
configuration and its recorded answers say. So replay treats it like an
untrusted workspace:

  - its hooks and MCP servers are not run;
  - its config may only restrict: bypass mode, allow rules and higher
    limits are not applied. accept_edits is: the replay's edits land in
    its own throwaway workspace, never outside it, and bash still asks;
  - the person's recorded "yes" answers to permission prompts are not
    re-applied: a call that needs a person is refused, as in --headless.

The report says each thing it left out ("note: the recording's config has
2 hooks and 1 MCP server; not run ...", each setting with the file and
line it came from), and that the divergences they cause are expected,
not a what-if. For a recording you trust, add --trust-recording: its config applies as it is, its hooks and MCP servers
run, and each recorded approval is re-applied to the call it approved, but
only when that call's input is byte-identical to the approved one.

Files the workspace snapshot did not capture (too large, unreadable,
special, or left out because they looked like secrets) are named as
"note: not captured: PATH (reason)": a call that reads one will differ.

Normalisation: event times, sequence numbers, session ids and measured
durations are never compared, and the workspace and blob paths are
rewritten to the recording's. Built-in rules then replace what always
differs between two runs, in tool output and model text: timestamps
(RFC 3339, date's "Tue Dec  1 20:05:21 UTC 2026", ls -l's "Dec  1 20:05"),
durations ("12.3ms", "0.41s", "real 0m0.012s"), the random directory of
a temporary path (/tmp/X/..., $TMPDIR/X/...), hex ids (UUIDs, 16+ hex
digits, date +%s%N) and process ids ("pid 4242"); the process id of each
bash call, recorded in its tool_end, is mapped exactly to the replayed
call's (pid_map), so echo $$ replays identically;
--no-default-normalize turns them off. Your own rules come from the
replay.normalize section of the configuration the replay runs under and
from --normalize 'REGEX=>REPLACEMENT' (RE2 syntax, $1 expands; repeatable);
replay.tools or --tool-level TOOL=LEVEL compares a tool's calls exactly
(exact, the default), only by how they ended (exit_code), or not at all
(ignore). The report says which rules replaced text and how often.

What is left is reported, one row per call or turn, each classified: tool
output changed, permission or hook outcome changed, failure kind changed,
defense fired or stopped firing, model request changed (which field, and
whether it breaks the prompt cache), response changed, call missing or
extra, end changed; the row says where the text first differs. --details
adds a unified diff of every changed text (tool output and input, request
messages, replies); the json format always carries it ("diff").

What-if: --config FILE is layered over the recorded configuration to
replay the incident under another policy (rules, mode, hooks, limits);
the file is yours, so it is trusted, and the report names the settings
it changed. The report says where outcomes change, e.g.
"turn 5, toolu_07: allowed → denied by rule Bash(rm:*)". Once a change
makes the model requests differ from the recording, that is said once and
the tool-side events are still compared.

Batch: give several files, a directory (every .jsonl below it, or --runs DIR) or a glob,
and every recording is replayed, -j at a time (default one per CPU), each
in its own temporary workspace (so --workspace is refused for more than
one recording). One summary follows: per recording identical, diverged
(with its first divergence) or failed (with the reason), then the totals
and the divergence classes counted; --format json or markdown (fit for a
pull-request comment) for CI. A recording that cannot be replayed does
not stop the others: it is listed as failed, and the batch exits 2 once
the summary is printed, because a verdict over a set of incidents with a
broken one in it is no verdict. A recording made by mock serve --record
is another agent's conversation without a workspace, and is named as
"not replayable here: use retrace mock serve --from". A failure museum
exhibit that retrace eval --out keeps (a recording written by hand) is
listed as "exhibit", not replayable and not a failure. A recording
replayed without settings it left out and that diverged is "expected",
which --strict does not fail. Ctrl-C or SIGTERM marks the replays under
way "interrupted", prints the summary of what finished and exits 130 or
143. While a batch runs, progress is shown on stderr: on a terminal a line
redrawn in place with each replay listed above it as it ends, elsewhere a
plain line every 10s (RETRACE_PROGRESS: a period such as 30s, a number of
replays, or off). A single file keeps the detailed report above.

Exit codes: 0 identical (after normalising), or divergences without
--strict, or only expected ones; 3 divergences with --strict; 130/143
interrupted by SIGINT/SIGTERM; 2 bad input — a recording that
cannot be read or replayed (a symlink loop, not a trajectory, a line too
long, a damaged snapshot, a recording of mock serve), a directory with no
recordings, a --workspace that is not empty or given for several
recordings, a bad --config; 1 the replay itself failed. In a batch the
first that applies of 2, 1, 3 wins.`,
		Example: `  retrace replay .retrace/runs/20261130-091500.250-5e6f7a8b.jsonl
  retrace replay incident.jsonl --config stricter.yaml --format markdown
  retrace replay incidents/ --strict --format markdown
  retrace replay 'incidents/*.jsonl' -j 4 --format json
  retrace replay my-own-run.jsonl --trust-recording --keep
  retrace replay run.jsonl --details --normalize 'took [0-9]+ms=>took <ms>' --tool-level web_fetch=ignore`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0 && opts.runs == "":
				return usage(errors.New("give the recorded trajectories to replay: files, directories or globs, or --runs DIR"))
			case len(args) > 0 && opts.runs != "":
				return usage(errors.New("--runs names the recordings to replay and so do the RUNS arguments; give one of them"))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.workspace, "workspace", "", "restore the workspace here (empty or missing; one recording only); default a temporary directory")
	cmd.Flags().StringVar(&opts.config, "config", "", "what-if configuration, trusted, layered over the recorded one")
	cmd.Flags().StringVar(&opts.out, "out", "", "directory for the replays' trajectories (default .retrace/replays)")
	cmd.Flags().BoolVar(&opts.strict, "strict", false, "exit 3 on any divergence")
	cmd.Flags().StringVar(&opts.runs, "runs", "", "replay every recording in this directory, as a batch (instead of RUNS)")
	cmd.Flags().BoolVar(&opts.keep, "keep", false, "keep the temporary workspaces after the replay and print their paths")
	cmd.Flags().BoolVar(&opts.trust, "trust-recording", false, "run the recording's hooks and MCP servers, apply its config as it is, re-apply its recorded approvals (your own recordings get all but the hooks and servers without it)")
	cmd.Flags().BoolVar(&opts.noSandbox, "no-sandbox", false, "run the replay's tool processes without the kernel sandbox (recorded in its session_start)")
	cmd.Flags().IntVarP(&opts.jobs, "jobs", "j", runtime.NumCPU(), "replay this many recordings at once")
	opts.format = addFormatFlag(cmd, "table", "markdown", "json")
	cmpFlags := addCompareFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := opts.format.check(); err != nil {
			return err
		}
		if opts.jobs < 1 {
			return usage(fmt.Errorf("-j %d: give at least 1 replay at a time", opts.jobs))
		}
		copts, err := cmpFlags.options()
		if err != nil {
			return usage(err)
		}
		opts.details = cmpFlags.details
		ctx, stop := signalContext(cmd.Context())
		defer stop()
		out := opts.out
		if out == "" {
			out = ".retrace/replays"
		}
		if opts.runs != "" {
			// A directory is a batch, whatever it holds.
			args = []string{opts.runs}
		}
		ropts := replay.RunOptions{Out: out, Workspace: opts.workspace, Config: opts.config, Keep: opts.keep, TrustRecording: opts.trust, NoSandbox: opts.noSandbox, Compare: copts,
			Key: userKey(sys)}
		if !isBatch(args) {
			return replayOne(ctx, sys, opts, ropts, args[0])
		}
		return replayBatch(ctx, sys, opts, ropts, args)
	}
	return cmd
}

// isBatch reports whether the arguments ask for a batch: more than one,
// or a directory or a glob. One file keeps the detailed report.
func isBatch(args []string) bool {
	if len(args) > 1 {
		return true
	}
	info, err := os.Stat(args[0])
	if err == nil {
		return info.IsDir()
	}
	return strings.ContainsAny(args[0], "*?[")
}

// replayError maps a replay's error to its exit code: bad input 2,
// anything else 1.
func replayError(err error) error {
	if errors.Is(err, replay.ErrInput) || errors.Is(err, replay.ErrNotReplayable) || errors.Is(err, fs.ErrNotExist) {
		return invalid(err)
	}
	return err
}

// replayOne replays one recording and prints its detailed report.
func replayOne(ctx context.Context, sys *IO, opts *replayOptions, ropts replay.RunOptions, path string) error {
	b, err := replay.RunBatch(ctx, replay.BatchOptions{Recordings: []string{path}, Jobs: 1, Run: ropts})
	if err != nil {
		return replayError(err)
	}
	s := b.Sessions[0]
	switch s.Verdict {
	case replay.VerdictExhibit:
		fmt.Fprintf(sys.Out, "%s: %s\n", path, s.Reason())
		return nil
	case replay.VerdictInterrupted:
		return interrupted(ctx, s.Err)
	}
	if s.Err != nil {
		return replayError(s.Err)
	}
	res := s.Result
	// What was replayed holds model and tool text: safe for a terminal.
	out := terminal.NewWriter(sys.Out)
	switch opts.format.value {
	case "json":
		enc := json.NewEncoder(sys.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Identical bool   `json:"identical"`
			Replay    string `json:"replay"`
			replay.Report
		}{res.Report.Identical(), res.Path, res.Report}); err != nil {
			return err
		}
	case "markdown":
		if err := res.Report.Markdown(out); err != nil {
			return err
		}
		if opts.details {
			if err := res.Report.MarkdownDetails(out); err != nil {
				return err
			}
		}
	default:
		if !res.Report.Identical() {
			if err := res.Report.Table(out); err != nil {
				return err
			}
			if opts.details {
				if err := res.Report.Details(out); err != nil {
					return err
				}
			}
			break
		}
		if err := res.Report.WriteNotes(out); err != nil {
			return err
		}
		fmt.Fprintln(out, "identical: the replay matches the recording at every step (after normalising times and paths)")
		if err := res.Report.WriteNormalized(out); err != nil {
			return err
		}
	}
	if res.Removed {
		fmt.Fprintf(sys.Err, "replay: %s (ran in %s, a temporary workspace now removed; --keep keeps it)\n", res.Path, res.Workspace)
	} else {
		fmt.Fprintf(sys.Err, "replay: %s (ran in %s)\n", res.Path, res.Workspace)
	}
	if opts.strict && !res.Report.Identical() {
		return &exitError{code: ExitGate, err: errReported}
	}
	return nil
}

// replayBatch replays every recording the arguments name and prints one
// summary.
func replayBatch(ctx context.Context, sys *IO, opts *replayOptions, ropts replay.RunOptions, args []string) error {
	if opts.workspace != "" {
		return usage(fmt.Errorf("--workspace %s names one directory, but a batch restores every recording into its own temporary workspace; leave --workspace out, or replay one file with it", opts.workspace))
	}
	in, err := trajectory.ExpandInputs(args...)
	switch {
	case errors.Is(err, trajectory.ErrNoRuns):
		return invalid(fmt.Errorf("%w; give trajectory files (.jsonl) written by retrace run, or a directory holding them", err))
	case err != nil:
		return invalid(err)
	}
	for _, w := range in.Skipped {
		fmt.Fprintf(sys.Err, "warning: %s\n", w)
	}
	progress, bar := replayProgress(sys)
	b, err := replay.RunBatch(ctx, replay.BatchOptions{Recordings: in.Files, Jobs: opts.jobs, Run: ropts, Progress: progress})
	bar.Finish()
	if err != nil {
		return replayError(err)
	}
	// An entry that could not even be examined (an unreadable directory, a
	// symlink loop) is a failed session like a file that is not a
	// trajectory, so the summary names it.
	for _, p := range in.Problems {
		b.Sessions = append(b.Sessions, replay.Session{Recording: problemPath(p), Verdict: replay.VerdictFailed, Err: fmt.Errorf("%w: %w", replay.ErrInput, p)})
		b.Failed++
	}
	out := terminal.NewWriter(sys.Out)
	switch opts.format.value {
	case "json":
		enc := json.NewEncoder(sys.Out)
		enc.SetIndent("", "  ")
		err = enc.Encode(b.Summary())
	case "markdown":
		err = b.Markdown(out)
	default:
		err = b.Table(out)
	}
	if err != nil {
		return err
	}
	if opts.keep {
		for _, s := range b.Sessions {
			if s.Err == nil && !s.Result.Removed {
				fmt.Fprintf(sys.Err, "kept: %s (the workspace of %s)\n", s.Result.Workspace, s.Recording)
			}
		}
	}
	fmt.Fprintf(sys.Err, "replays: %s\n", ropts.Out)
	switch {
	case b.Interrupted > 0:
		return interrupted(ctx, errReported)
	case b.BadInput():
		return &exitError{code: ExitInvalid, err: errReported}
	case b.HarnessFailed():
		return &exitError{code: ExitHarness, err: errReported}
	case opts.strict && b.Diverged > 0:
		return &exitError{code: ExitGate, err: errReported}
	}
	return nil
}

// problemPath is the file a problem of ExpandInputs is about.
func problemPath(err error) string {
	var fe *trajectory.FileError
	if errors.As(err, &fe) {
		return fe.File
	}
	return "?"
}

// compareFlags are replay's comparison flags: normalisation rules, the
// built-in rules' switch, per-tool levels and the diff view.
type compareFlags struct {
	normalize  []string
	noDefaults bool
	toolLevels []string
	details    bool
}

func addCompareFlags(cmd *cobra.Command) *compareFlags {
	f := &compareFlags{}
	cmd.Flags().StringArrayVar(&f.normalize, "normalize", nil, "normalisation rule 'REGEX=>REPLACEMENT' for tool output and model text, after the configuration's (repeatable)")
	cmd.Flags().BoolVar(&f.noDefaults, "no-default-normalize", false, "turn off the built-in rules for timestamps, durations, temporary paths, hex ids and process ids")
	cmd.Flags().StringArrayVar(&f.toolLevels, "tool-level", nil, "compare a tool's calls at LEVEL: TOOL=exact|exit_code|ignore (repeatable)")
	cmd.Flags().BoolVar(&f.details, "details", false, "add a unified diff of every changed text to the table or markdown report")
	return f
}

// options turns the flags into comparison options; a bad rule or level is
// an error that says how to write it.
func (f *compareFlags) options() (compare.Options, error) {
	opts := compare.Options{NoDefaults: f.noDefaults, Tools: map[string]compare.Level{}}
	for i, v := range f.normalize {
		r, err := compare.ParseFlag(fmt.Sprintf("--normalize[%d]", i+1), v)
		if err != nil {
			return opts, fmt.Errorf("--normalize: %w", err)
		}
		opts.Rules = append(opts.Rules, r)
	}
	for _, v := range f.toolLevels {
		tool, level, ok := strings.Cut(v, "=")
		if !ok || tool == "" {
			return opts, fmt.Errorf("--tool-level %q: write it as TOOL=LEVEL, e.g. bash=exit_code", v)
		}
		l, err := compare.ParseLevel(level)
		if err != nil {
			return opts, fmt.Errorf("--tool-level %s: %w", tool, err)
		}
		opts.Tools[tool] = l
	}
	return opts, nil
}

// signalError is the cause of a context that SIGINT or SIGTERM cancelled.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "interrupted by " + e.sig.String() }

// signalContext is cancelled, with a signalError as its cause, when the
// process gets SIGINT or SIGTERM, so that a command can report what it
// finished and exit as the signal says (interrupted).
func signalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			cancel(signalError{sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// interrupted is the exit of a command that a signal stopped: 130 for
// SIGINT, 143 for SIGTERM, 1 when the context ended otherwise.
func interrupted(ctx context.Context, err error) error {
	var se signalError
	if errors.As(context.Cause(ctx), &se) {
		code := ExitInterrupted
		if se.sig == syscall.SIGTERM {
			code = ExitTerminated
		}
		return &exitError{code: code, err: err}
	}
	return err
}
