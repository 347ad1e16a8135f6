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
	"github.com/retrace-dev/retrace/trajectory"
)

type replayOptions struct {
	workspace string
	config    string
	out       string
	strict    bool
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
never a live call), replays the person's recorded answers to permission
prompts, records the replay as a new trajectory (--out, default
.retrace/replays) and compares the two at every step.

Differences in timestamps, durations, session ids and temporary paths are
normalised away. What is left is reported, first divergence first, each
classified: tool output changed, permission or hook outcome changed,
failure kind changed, defense fired or stopped firing, model request
changed (which field, and whether it breaks the prompt cache), response
changed, call missing or extra, end changed.

What-if: --config FILE replays the incident under another policy (rules,
mode, hooks, limits); the report says where outcomes change, e.g.
"turn 5, toolu_07: allowed → denied by rule Bash(rm:*)". Once a change
makes the model requests differ from the recording, that is said once and
the tool-side events are still compared.

Exit codes: 0 identical (after normalising), or divergences without
--strict; 3 divergences with --strict; 2 an unreadable or unreplayable
recording; 1 the replay itself failed.`,
		Example: `  retrace replay .retrace/runs/20261130-091500.250-5e6f7a8b.jsonl
  retrace replay incident.jsonl --config stricter.yaml --format markdown
  retrace replay run.jsonl --strict --format json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usage(fmt.Errorf("give exactly one recorded trajectory, got %d arguments", len(args)))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.workspace, "workspace", "", "restore the workspace here (empty or missing); default a temporary directory")
	cmd.Flags().StringVar(&opts.config, "config", "", "what-if configuration; default the recorded workspace's retrace.yaml")
	cmd.Flags().StringVar(&opts.out, "out", "", "directory for the replay's trajectory (default .retrace/replays)")
	cmd.Flags().BoolVar(&opts.strict, "strict", false, "exit 3 on any divergence")
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
		res, err := replay.Run(ctx, replay.RunOptions{Recording: args[0], Out: out, Workspace: opts.workspace, Config: opts.config})
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, replay.ErrNotReplayable) || errors.Is(err, trajectory.ErrMalformed) ||
				errors.Is(err, trajectory.ErrUnsupportedVersion) || errors.Is(err, trajectory.ErrUnknownValue) || errors.Is(err, trajectory.ErrMissingField) {
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
			if res.Report.Identical() {
				fmt.Fprintln(sys.Out, "identical: the replay matches the recording at every step (after normalising times and paths)")
			} else if err := res.Report.Table(sys.Out); err != nil {
				return err
			}
		}
		fmt.Fprintf(sys.Err, "replay: %s (ran in %s)\n", res.Path, res.Workspace)
		if opts.strict && !res.Report.Identical() {
			return &exitError{code: ExitGate, err: errReported}
		}
		return nil
	}
	return cmd
}
