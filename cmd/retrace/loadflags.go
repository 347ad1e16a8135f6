package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// loadFlags are the flags of every command that reads runs: where the runs
// are when no argument names them, and what a load does with bad lines and
// with a session given twice.
type loadFlags struct {
	runs        string
	lenient     bool
	strictDupes bool
}

// strictDupesUsage is the --strict-dupes flag's usage.
const strictDupesUsage = "refuse a session found in two files (exit 2) instead of loading it once, from the first file, with a warning"

// readingDupes is what the help of every loading command says about a
// session given twice.
const readingDupes = `A session found in two files (the same run given twice, a directory and a
copy of it) is loaded once, from the first file in load order, with a
warning naming both; --strict-dupes refuses it instead (exit 2).`

// addLoadFlags adds --runs, --lenient and --strict-dupes to cmd.
func addLoadFlags(cmd *cobra.Command, f *loadFlags) {
	cmd.Flags().StringVar(&f.runs, "runs", "", "directory of runs to read when no RUNS are given (default $RETRACE_DIR or .retrace/runs)")
	cmd.Flags().BoolVar(&f.lenient, "lenient", false, lenientUsage)
	cmd.Flags().BoolVar(&f.strictDupes, "strict-dupes", false, strictDupesUsage)
}

// inputs returns the runs to read: the RUNS arguments, or --runs. Both at
// once is a usage error, since it is not clear which the user meant. None
// at all is returned as none: the caller decides on the default (the runs
// directory, or a kept database as it is).
func (f *loadFlags) inputs(args []string) ([]string, error) {
	if f.runs == "" {
		return args, nil
	}
	if len(args) > 0 {
		return nil, usage(errors.New("--runs names the runs to read and so do the RUNS arguments; give one of them"))
	}
	return []string{f.runs}, nil
}
