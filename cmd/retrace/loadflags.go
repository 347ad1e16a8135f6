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
	memoryLimit string
	noCache     bool
}

// memoryLimitUsage is the --memory-limit flag's usage.
const memoryLimitUsage = "cap the memory DuckDB holds, such as 2GB (default $RETRACE_MEMORY_LIMIT, or 500MB for a store and a load of more than 64 MiB of runs, 256MB while an export writes; DuckDB's 80% of RAM for smaller loads); past it DuckDB spills to $TMPDIR"

// strictDupesUsage is the --strict-dupes flag's usage.
const strictDupesUsage = "refuse a session found in two files (exit 2) instead of loading it once, from the first file, with a warning"

// readingDupes is what the help of every loading command says about a
// session given twice.
const readingDupes = `A session found in two files (the same run given twice, a directory and a
copy of it) is loaded once, from the first file in load order, with a
warning naming both; --strict-dupes refuses it instead (exit 2).`

// dbUsage is the --db flag's usage.
const dbUsage = "keep the store of the runs at this file instead of the cache directory; it answers for exactly the runs given"

// noCacheUsage is the --no-cache flag's usage.
const noCacheUsage = "read every file again, into memory, without the store kept in the cache directory (retrace cache info shows it)"

// readingStore is what the help of every loading command says about the
// store.
const readingStore = `The runs are kept in a store in the cache directory ($XDG_CACHE_HOME/retrace),
one per set of RUNS: a later call reads only the files added, grown or
changed since and drops those removed, so SQL over runs that did not change
is answered without reading them, and what the detectors found is kept
too, per file. --no-cache reads every file again into memory; retrace
cache info|clean shows and frees the stores.`

// addLoadFlags adds --runs, --lenient, --strict-dupes, --memory-limit and
// --no-cache to cmd.
func addLoadFlags(cmd *cobra.Command, f *loadFlags) {
	cmd.Flags().BoolVar(&f.noCache, "no-cache", false, noCacheUsage)
	cmd.Flags().StringVar(&f.runs, "runs", "", "directory of runs to read when no RUNS are given (default $RETRACE_DIR or .retrace/runs)")
	cmd.Flags().BoolVar(&f.lenient, "lenient", false, lenientUsage)
	cmd.Flags().BoolVar(&f.strictDupes, "strict-dupes", false, strictDupesUsage)
	cmd.Flags().StringVar(&f.memoryLimit, "memory-limit", "", memoryLimitUsage)
}

// memory returns the memory limit to open the database with: the flag, or
// $RETRACE_MEMORY_LIMIT.
func (f *loadFlags) memory(sys *IO) string {
	if f.memoryLimit != "" {
		return f.memoryLimit
	}
	return sys.Getenv("RETRACE_MEMORY_LIMIT")
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
