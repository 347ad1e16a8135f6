package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/scenarios"
)

func newScenarioCmd(sys *IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenario",
		Short: "Make regression scenarios for retrace eval",
		Long: `Scenario makes regression scenarios, the txtar files retrace eval runs.

  retrace scenario from RECORDING [--keep PROPERTY] [-o FILE.txtar]

turns a recorded incident into a test that fails until it is fixed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newScenarioFromCmd(sys))
	return cmd
}

type scenarioFromOptions struct {
	out      string
	keep     string
	minimize bool
	maxRuns  int
	jobs     int
	runtime  string
}

func newScenarioFromCmd(sys *IO) *cobra.Command {
	opts := &scenarioFromOptions{}
	cmd := &cobra.Command{
		Use:   "from RECORDING",
		Short: "Turn a recorded session into a regression scenario",
		Long: `From turns a recording into a scenario that retrace eval runs offline and
deterministically, so an incident becomes a test:

  retrace run ...                  the incident is recorded in .retrace/runs
  retrace replay RECORDING         it replays, and shows what went wrong
  retrace scenario from RECORDING --keep detector:denial_loop -o tests/denial_loop.txtar
  retrace eval tests/denial_loop.txtar     passes: the scenario reproduces it
  (move denial_loop from fire: to not_fire: in the file, commit it)
  retrace eval tests/                      in CI: fails until the fix lands,
                                           passes after

The scenario holds:
  - the model's turns as its script: exactly the recorded responses, in
    order (text, tool calls with their ids and inputs, stop reason, usage);
    each turn after a tool call expects the request to carry those calls'
    results with is_error as recorded, so a run whose calls end otherwise
    stops at that turn and names it;
  - the workspace from the recording's snapshot, as workspace/... files
    (binary files, files over 64 KiB, symlinks and files the snapshot did
    not capture are left out, and the archive's comment lists them);
  - the effective configuration from session_start as its config;
  - expectations derived from what happened: the outcome, each tool's calls,
    failures per kind and tool, permission decisions per source and tool,
    the defenses that acted (and defense_not_triggered for the others), and
    the detectors that found something (and no others).
Comments name the recording's line each part came from. The recording is
already redacted, and the scenario keeps it so.

--keep PROPERTY makes the scenario about one thing, in the expectation
language:
  detector:ID                 the detector finds something
  failure:KIND[,tool=T]       a tool call fails so (e.g. failure:permission_denied,tool=bash)
  defense:NAME                the defense acts (e.g. defense:denial_fuse)
  permission:DECISION[,tool=T][,step=S][,source=S]
                              a permission decision: allow, prompt or deny
                              (e.g. permission:deny,step=sandbox)
  event:TYPE[,tool=T]         an event of the type (e.g. event:compaction);
                              tool_call takes ,streamed=true|false (started
                              while the reply streamed, or after it)
  divergence:CLASS            a run differs from the recording so, as replay
                              classifies it (e.g. divergence:tool_output_changed;
                              the scenario carries the recording as reference.jsonl,
                              and a class one run of it does not show is refused)
  outcome                     the session ends as it did (reason, exit code)
  no PROPERTY                 it does not happen (no defense:denial_fuse: the
                              defense did not act; as "no new detector" in a gate)
The expectations are then that property alone, and the turns do not check
the requests, so the scenario passes while the session shows the property
and fails as soon as it does not. A property the recording does not show is
refused, with the ones it does. The scenario reproduces the incident, so it
passes while the bug is there; to commit the regression test, invert the
kept expectation (fire: to not_fire:, a defense's min: 1 to
defense_not_triggered, a failure's min: 1 to count: 0), or keep what the
fix must preserve as it is.

--minimize (with --keep) shrinks the scenario by delta debugging (ddmin,
Zeller): it drops turns, then tool calls within the turns left (each
keeps one), then keys of the config overlay (leaves such as
defenses.disable: a dropped key is at its default), then workspace files,
then the lines of the files left of 50 lines or more, re-running the
scenario in-process after each reduction and keeping any that still shows
the kept property, until no single part can go. It is deterministic (the
same recording gives the same bytes, whatever -j), bounded by --max-runs
(default 300; once spent, the smallest scenario found is written and the
summary says so), shows its progress on a terminal, and prints a summary:
turns, tool calls, config keys, files and bytes before and after, and the
runs spent. A reduced script whose last turn calls tools gets a closing
turn, marked as not recorded, so the session ends.

A recording the runtime cannot play again becomes an exhibit scenario, as
the failure museum's are: an exhibit eval --out wrote (marked
NOT-REPLAYABLE; give the recordings/ directory of a corpus exhibit), a
synthetic session (retrace synth), or a native recording whose snapshot
blobs are gone. It carries the recording's lines instead of a script;
--minimize drops turns, then the events within them, and keeps each line
byte for byte. Its properties are detectors, failures, defenses,
permission decisions and events, not the outcome.

What a scenario cannot hold plays differently: the snapshot leaves out
.git and .retrace, and the mock answers at once where the recorded model
took its time (a scenario that needs the delay, such as an MCP server's
reconnect, gets it back with fault: {stall: ...} on that turn).

Works on native recordings (retrace run, retrace eval --out), and on the
sessions of another client: imported with retrace import (Claude Code,
Codex, opencode) or recorded on the wire by retrace mock serve --record
(session_start.tags.client names the client; a wire recording of an older
retrace is told by its tools). Their scenario runs the same client by its
agent profile (agent: claude-code, agent: codex) against the mock serving
the recorded responses, with the mock's per-turn matching as above:
  - Claude Code gets --allowedTools for each call an allow rule or a person
    let it make (a Bash call as Bash(its command)), and its recorded
    --permission-mode; the calls it allowed itself or denied need none;
  - each subagent session next to the recording (its session_start's
    parent_session) becomes a conversation of the script, matched by its
    task (first_user_contains);
  - paths under the session's working directory are made relative in the
    tool inputs (the directory itself is "."), so the calls find the
    scenario's workspace;
  - such a session has no snapshot, so the workspace is the files it read
    with the content it saw: a whole Read (its numbered lines, the
    client's reminders taken out) or a cat of one file, the first read
    before anything wrote the file; the archive's comment names the
    recording's line (and the transcript's file:line) of each, and lists
    what could not be reconstructed: files read in part, only after a
    write, outside the working directory, too large or binary, and every
    file the session never read;
  - comments name the transcript's own file:line beside the recording's.
--runtime builtin plays the turns through retrace's runtime instead: the
client's tools are mapped onto retrace's (Read, Bash, Write, Edit, Glob,
Grep to read, bash, write, edit, glob, grep; Codex's exec_command to
bash; opencode's camelCase keys), its config allows each call that ran,
each turn expects is_error as the call's recorded outcome, and the
client's own permission decisions are not expected; a tool with no
counterpart is played as it is and answered as unknown. --minimize
re-runs the scenario hundreds of times, so it needs --runtime builtin for
such a session. Continued sessions are not supported yet and are refused.

Exit codes: 0 written; 2 the recording cannot become a scenario (torn, not a
retrace trajectory, no workspace snapshot and no file read, a client with no
agent profile or none named, a subagent's session, a property it does not
show), with what is missing; 1 retrace's own failure. -o is written whole
or not at all.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runScenarioFrom(cmd, sys, args[0], opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.out, "out", "o", "", "write the scenario to `FILE.txtar` (default: standard output)")
	f.StringVar(&opts.keep, "keep", "", "test only this `PROPERTY`: detector:ID, failure:KIND[,tool=T], defense:NAME, permission:DECISION[,...], event:TYPE, divergence:CLASS, outcome, or no PROPERTY")
	f.BoolVar(&opts.minimize, "minimize", false, "with --keep: reduce the turns, calls, config keys, workspace files and lines to a smallest set that still shows the property (ddmin)")
	f.IntVar(&opts.maxRuns, "max-runs", scenarios.DefaultMaxRuns, "with --minimize: spend at most `N` scenario runs")
	f.IntVarP(&opts.jobs, "jobs", "j", 1, "with --minimize: run `N` reductions at once (the result does not depend on it)")
	f.StringVar(&opts.runtime, "runtime", "", "for an imported or mock serve --record session: `client` (run the same client by its agent profile, the default) or builtin (retrace's runtime)")
	return cmd
}

func runScenarioFrom(cmd *cobra.Command, sys *IO, recording string, opts *scenarioFromOptions) error {
	fo := scenarios.FromOptions{Recording: recording}
	switch opts.runtime {
	case "", scenarios.RuntimeClient, scenarios.RuntimeBuiltin:
		fo.Runtime = opts.runtime
	default:
		return usage(fmt.Errorf("--runtime %q: give %s (the session's own client, the default) or %s (retrace's runtime)", opts.runtime, scenarios.RuntimeClient, scenarios.RuntimeBuiltin))
	}
	if opts.keep != "" {
		p, err := scenarios.ParseProperty(opts.keep)
		if err != nil {
			return usage(fmt.Errorf("--keep: %w", err))
		}
		fo.Keep = &p
	}
	switch {
	case opts.minimize && opts.keep == "":
		return usage(errors.New("--minimize needs --keep PROPERTY: the property every reduction must still show"))
	case opts.maxRuns < 1:
		return usage(fmt.Errorf("--max-runs %d: give at least 1", opts.maxRuns))
	case opts.jobs < 1:
		return usage(fmt.Errorf("-j %d: give at least 1", opts.jobs))
	case opts.minimize:
		fo.Minimize = &scenarios.MinimizeOptions{MaxRuns: opts.maxRuns, Jobs: opts.jobs}
		if _, tty := terminalFd(sys.Err); tty {
			// On a terminal, one line that the next round overwrites.
			fo.Minimize.Progress = func(runs, turns, files int) {
				fmt.Fprintf(sys.Err, "\rminimizing: %d runs, %d turns, %d files left\x1b[K", runs, turns, files)
			}
		}
	}
	if opts.out != "" {
		if err := outputDirExists("-o", opts.out); err != nil {
			return err
		}
	}
	res, err := scenarios.From(cmd.Context(), fo)
	if errors.Is(err, scenarios.ErrFrom) {
		return invalid(err)
	}
	if err != nil {
		return err
	}
	if res.Minimized != nil {
		if fo.Minimize.Progress != nil {
			fmt.Fprint(sys.Err, "\r\x1b[K")
		}
		fmt.Fprintln(sys.Err, res.Minimized)
	}
	if opts.out == "" {
		_, err := sys.Out.Write(res.Archive)
		return err
	}
	if err := writeFileWhole(opts.out, res.Archive); err != nil {
		return err
	}
	fmt.Fprintf(sys.Err, "wrote %s: %s, %s, %s", opts.out, plural(res.Turns, "turn"), plural(res.Calls, "tool call"), plural(res.Files, "workspace file"))
	if len(res.LeftOut) > 0 {
		fmt.Fprintf(sys.Err, "; %d left out (see its comment)", len(res.LeftOut))
	}
	fmt.Fprintln(sys.Err)
	return nil
}
