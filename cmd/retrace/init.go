package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/retrace-dev/retrace/scaffold"
	"github.com/spf13/cobra"
)

func newInitCmd(sys *IO) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a first suite: two scenarios, a commented retrace.yaml and a CI job",
		Long: `Writes a small retrace project into DIR (default: the current directory):

  scenarios/fix_bug.txtar          a task that passes: a scripted model fixes a bug
  scenarios/refused_delete.txtar   a call the headless policy refuses, and the
                                   detector (denial_loop) that expects to fire on it
  retrace.yaml                     every configuration key, commented, at its default
  .github/workflows/retrace.yml    a GitHub Actions job running retrace eval --junit

then prints the next three commands. retrace eval DIR/scenarios passes on it.
An existing file is never overwritten (exit 2, naming them all) unless
--force is given. docs/failure-modes.md in retrace's repository explains
each detector a scenario can expect.`,
		Example: `  retrace init myproject
  retrace eval myproject/scenarios`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.MaximumNArgs(1)(cmd, args); err != nil {
				return usage(err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite the scaffold's files where they exist")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		dir := "."
		if len(args) == 1 {
			dir = args[0]
		}
		wrote, err := scaffold.Write(dir, force)
		if errors.Is(err, scaffold.ErrExists) {
			return invalid(err)
		}
		if err != nil {
			return err
		}
		for _, p := range wrote {
			fmt.Fprintf(sys.Out, "wrote %s\n", p)
		}
		suite := filepath.Join(dir, "scenarios")
		out := filepath.Join(dir, "retrace-out")
		runs := filepath.Join(out, "runs")
		_, err = fmt.Fprintf(sys.Out, `
Next:
  retrace eval %s --out %s
      plays both scenarios and keeps their recordings
  retrace detect %s
      shows the loop refused_delete makes, with the lines that prove it
  retrace report %s -o report.html
      writes one HTML page of the sessions
`, suite, out, runs, runs)
		return err
	}
	return cmd
}
