package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/terminal"
)

// ExitCode is the process exit status of a command. The codes are part of
// the CLI contract: scripts and CI branch on them.
type ExitCode int

// The exit codes.
const (
	// ExitOK: the command did what was asked and found nothing wrong.
	ExitOK ExitCode = 0
	// ExitHarness: retrace itself failed (I/O, a bug); the input may be fine.
	ExitHarness ExitCode = 1
	// ExitInvalid: bad usage or invalid input (flags, paths, trajectories).
	ExitInvalid ExitCode = 2
	// ExitGate: a gate failed (eval, diff or detect thresholds).
	ExitGate ExitCode = 3
	// ExitInconclusive: the command could not decide.
	ExitInconclusive ExitCode = 4
	// ExitInterrupted and ExitTerminated: a command that reports what it
	// finished before SIGINT or SIGTERM stopped it exits as a shell says
	// a process killed by them did (128 + the signal's number).
	ExitInterrupted ExitCode = 130
	ExitTerminated  ExitCode = 143
)

// exitError carries the exit code a command's error maps to.
type exitError struct {
	code ExitCode
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// invalid marks err as bad usage or invalid input (exit 2).
func invalid(err error) error { return &exitError{code: ExitInvalid, err: err} }

// errReported means the command already printed what was wrong; Main adds
// nothing but the exit code.
var errReported = errors.New("problems reported")

// IO is everything a command may touch of the outside world. Commands get
// it injected, so tests run the whole CLI in-process.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// Getenv reads an environment variable.
	Getenv func(string) string
	// Now is the clock.
	Now func() time.Time
}

// Main runs retrace with the process's arguments and I/O and returns the
// exit code.
func Main() int {
	sys := &IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Getenv: os.Getenv, Now: time.Now}
	return int(run(sys, os.Args[1:]))
}

// run executes one command line and maps its error to an exit code.
func run(sys *IO, args []string) ExitCode {
	root := newRootCmd(sys)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	code := ExitHarness
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if !errors.Is(err, errReported) {
		// An error names what it was given (a path, a flag's value, a
		// line of a file), which may hold anything.
		fmt.Fprintf(sys.Err, "retrace: %s\n", terminal.Text(err.Error()))
		if code == ExitInvalid && isUsageError(err) {
			fmt.Fprintln(sys.Err, "Run 'retrace --help' for usage.")
		}
	}
	return code
}

// usageError is bad command-line usage, as opposed to invalid input files.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usage(err error) error { return invalid(&usageError{err: err}) }

func isUsageError(err error) bool {
	var ue *usageError
	return errors.As(err, &ue)
}

func newRootCmd(sys *IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "retrace",
		Short: "Flight recorder, replayer and failure analyser for LLM tool-using agents",
		Long: `retrace records every session of a tool-using agent as a JSONL trajectory,
replays recorded sessions deterministically through the real tool executor,
and computes the numbers that show when an agent is "green but broken".

Trajectories live in ./.retrace/runs by default (override with --runs or
RETRACE_DIR). Commands that read runs take files, directories or globs.

Exit codes: 0 ok, 1 retrace itself failed, 2 bad usage or invalid input,
3 a gate failed, 4 inconclusive.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usage(fmt.Errorf("unknown command %q", args[0]))
			}
			return cmd.Help()
		},
	}
	root.SetIn(sys.In)
	root.SetOut(sys.Out)
	root.SetErr(sys.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage(err) })
	root.AddCommand(newVersionCmd(sys), newValidateCmd(sys), newRunCmd(sys), newReplayCmd(sys), newMockCmd(sys), newQueryCmd(sys), newMetricsCmd(sys), newSynthCmd(sys), newDetectCmd(sys))
	root.AddCommand(newEvalCmd(sys))
	root.AddCommand(newExportCmd(sys))
	root.AddCommand(newImportCmd(sys))
	root.AddCommand(newReportCmd(sys))
	root.AddCommand(newDiffCmd(sys))
	root.AddCommand(newCacheCmd(sys))
	root.AddCommand(newScenarioCmd(sys))
	root.AddCommand(newInitCmd(sys))
	return root
}

// runsDir returns the default directory of runs: RETRACE_DIR or .retrace/runs.
func runsDir(sys *IO) string {
	if d := sys.Getenv("RETRACE_DIR"); d != "" {
		return d
	}
	return ".retrace/runs"
}

// formatFlag is the --format flag shared by commands with machine output.
type formatFlag struct {
	value   string
	allowed []string
}

func (f *formatFlag) check() error {
	for _, a := range f.allowed {
		if f.value == a {
			return nil
		}
	}
	return usage(fmt.Errorf("--format %q is not supported; use one of %v", f.value, f.allowed))
}

func addFormatFlag(cmd *cobra.Command, allowed ...string) *formatFlag {
	f := &formatFlag{value: allowed[0], allowed: allowed}
	cmd.Flags().StringVar(&f.value, "format", allowed[0], fmt.Sprintf("output format: %v", allowed))
	return f
}

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return usage(err)
	}
	return nil
}

// plural returns "1 problem" or "2 problems".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
