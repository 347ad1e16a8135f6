package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/replay"
)

type replayOptions struct {
	workspace string
	config    string
	out       string
	strict    bool
	keep      bool
	trust     bool
	format    *formatFlag
}

func newReplayCmd(sys *IO) *cobra.Command {
	opts := &replayOptions{}
	cmd := &cobra.Command{
		Use:   "replay RUN.jsonl",
		Short: "Replay a recorded session through the real executor and report where it differs",
		Long: `Replay restores the recorded workspace snapshot into a temporary directory
(or --workspace DIR), runs the real agent loop and tool executor again with
the recorded model responses (a request past the recording is an error,
never a live call), records the replay as a new trajectory (--out, default
.retrace/replays) and compares the two at every step. The temporary
workspace is removed at the end; --keep keeps it and prints its path.

A recording is someone else's until you say otherwise: it carries the
retrace.yaml of the workspace it was made in, and whoever sent it chose
what that file and its recorded answers say. So by default replay treats
it like an untrusted workspace:

  - its hooks and MCP servers are not run;
  - its config may only restrict: bypass or accept_edits mode, allow rules
    and higher limits are not applied, so the replay runs in default (or
    plan) mode;
  - the person's recorded "yes" answers to permission prompts are not
    re-applied: a call that needs a person is refused, as in --headless.

The report says each thing it left out ("note: the recording's config has
2 hooks and 1 MCP server; not run ..."), so the divergences they cause are
explained. For a recording you made yourself, or one you trust, add
--trust-recording: its config applies as it is, its hooks and MCP servers
run, and each recorded approval is re-applied to the call it approved, but
only when that call's input is byte-identical to the approved one.

Files the workspace snapshot did not capture (too large, unreadable,
special, or left out because they looked like secrets) are named as
"note: not captured: PATH (reason)": a call that reads one will differ.

Differences in timestamps, durations, session ids and temporary paths are
normalised away. What is left is reported, first divergence first, each
classified: tool output changed, permission or hook outcome changed,
failure kind changed, defense fired or stopped firing, model request
changed (which field, and whether it breaks the prompt cache), response
changed, call missing or extra, end changed.

What-if: --config FILE replays the incident under another policy (rules,
mode, hooks, limits) instead of the recording's own; the file is yours,
so it is trusted. The report says where outcomes change, e.g.
"turn 5, toolu_07: allowed → denied by rule Bash(rm:*)". Once a change
makes the model requests differ from the recording, that is said once and
the tool-side events are still compared.

Exit codes: 0 identical (after normalising), or divergences without
--strict; 3 divergences with --strict; 2 bad input — a recording that
cannot be read or replayed (a directory, a symlink loop, not a trajectory,
a line too long, a damaged snapshot), a --workspace that is not empty, a
bad --config; 1 the replay itself failed.`,
		Example: `  retrace replay .retrace/runs/20261130-091500.250-5e6f7a8b.jsonl
  retrace replay incident.jsonl --config stricter.yaml --format markdown
  retrace replay run.jsonl --strict --format json
  retrace replay my-own-run.jsonl --trust-recording --keep`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usage(fmt.Errorf("give exactly one recorded trajectory, got %d arguments", len(args)))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.workspace, "workspace", "", "restore the workspace here (empty or missing); default a temporary directory")
	cmd.Flags().StringVar(&opts.config, "config", "", "what-if configuration, trusted; default the recorded workspace's retrace.yaml")
	cmd.Flags().StringVar(&opts.out, "out", "", "directory for the replay's trajectory (default .retrace/replays)")
	cmd.Flags().BoolVar(&opts.strict, "strict", false, "exit 3 on any divergence")
	cmd.Flags().BoolVar(&opts.keep, "keep", false, "keep the temporary workspace after the replay and print its path")
	cmd.Flags().BoolVar(&opts.trust, "trust-recording", false, "run the recording's hooks and MCP servers, apply its config as it is, re-apply its recorded approvals")
	opts.format = addFormatFlag(cmd, "table", "markdown", "json")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := opts.format.check(); err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		out := opts.out
		if out == "" {
			out = ".retrace/replays"
		}
		res, err := replay.Run(ctx, replay.RunOptions{Recording: args[0], Out: out, Workspace: opts.workspace, Config: opts.config,
			Keep: opts.keep, TrustRecording: opts.trust})
		if err != nil {
			if errors.Is(err, replay.ErrInput) || errors.Is(err, replay.ErrNotReplayable) || errors.Is(err, fs.ErrNotExist) {
				return invalid(err)
			}
			return err
		}
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
			if err := res.Report.Markdown(sys.Out); err != nil {
				return err
			}
		default:
			if !res.Report.Identical() {
				if err := res.Report.Table(sys.Out); err != nil {
					return err
				}
				break
			}
			if err := res.Report.WriteNotes(sys.Out); err != nil {
				return err
			}
			fmt.Fprintln(sys.Out, "identical: the replay matches the recording at every step (after normalising times and paths)")
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
	return cmd
}
