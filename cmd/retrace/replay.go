package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/compare"
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

Normalisation: event times, sequence numbers, session ids and measured
durations are never compared, and the workspace and blob paths are
rewritten to the recording's. Built-in rules then replace what always
differs between two runs, in tool output and model text: timestamps
(RFC 3339, date's "Tue Dec  1 20:05:21 UTC 2026", ls -l's "Dec  1 20:05"),
durations ("12.3ms", "0.41s", "real 0m0.012s"), the random directory of
a temporary path (/tmp/X/..., $TMPDIR/X/...), hex ids (UUIDs, 16+ hex
digits) and process ids ("pid 4242");
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
  retrace replay my-own-run.jsonl --trust-recording --keep
  retrace replay run.jsonl --details --normalize 'took [0-9]+ms=>took <ms>' --tool-level web_fetch=ignore`,
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
	cmpFlags := addCompareFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := opts.format.check(); err != nil {
			return err
		}
		copts, err := cmpFlags.options()
		if err != nil {
			return usage(err)
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		out := opts.out
		if out == "" {
			out = ".retrace/replays"
		}
		res, err := replay.Run(ctx, replay.RunOptions{Recording: args[0], Out: out, Workspace: opts.workspace, Config: opts.config,
			Keep: opts.keep, TrustRecording: opts.trust, Compare: copts})
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
			if cmpFlags.details {
				if err := res.Report.MarkdownDetails(sys.Out); err != nil {
					return err
				}
			}
		default:
			if !res.Report.Identical() {
				if err := res.Report.Table(sys.Out); err != nil {
					return err
				}
				if cmpFlags.details {
					if err := res.Report.Details(sys.Out); err != nil {
						return err
					}
				}
				break
			}
			if err := res.Report.WriteNotes(sys.Out); err != nil {
				return err
			}
			fmt.Fprintln(sys.Out, "identical: the replay matches the recording at every step (after normalising times and paths)")
			if err := res.Report.WriteNormalized(sys.Out); err != nil {
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
	return cmd
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
