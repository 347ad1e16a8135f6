package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/trajectory"
	"github.com/spf13/cobra"
)

type validateOptions struct {
	paths  []string
	format *formatFlag
}

func newValidateCmd(sys *IO) *cobra.Command {
	opts := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate [PATH...]",
		Short: "Check trajectories against the contract (v2; v1 files too) and its invariants",
		Long: `Validate decodes every line of each trajectory strictly (known version, known
event types and closed-set values, required fields, labels that are labels)
and checks each session's invariants: seq from 1 without gaps; one
session_start first and at most one session_end last; every tool_call with
exactly one tool_success or tool_failure and one tool_end; every tool_use of a
model response with exactly one tool_result before the next request.

PATH may be a file, a directory (every *.jsonl below it) or a glob; with no
PATH the runs directory is validated (--runs, RETRACE_DIR, or .retrace/runs).
A named pipe or a process substitution named as PATH is read as a stream,
and - reads stdin. In a directory or a glob, what is not a regular file
(a named pipe, a socket, a device) is skipped with a warning.

Each problem is printed on its own line as file:line: what is wrong; a
problem with a whole file (it cannot be read, it is a symlink loop, it holds
no event) is printed as file: what is wrong, and the other files are still
checked. Warnings (a last line torn by a crash, a session without
session_end, a skipped entry) go to stderr and do not fail validation.

With --format json stdout is always one JSON document: the report below, or
{"error": {"code", "message", "problems"}} when nothing could be validated
(a missing path, a directory without runs).

Exit codes: 0 every file is valid, 2 a problem was found (a bad line, a
broken invariant, a file that cannot be read or holds no event, a missing
path), 1 retrace itself failed.`,
		Example: `  retrace validate .retrace/runs
  retrace validate 'runs/2026*.jsonl' --format json
  gunzip -c run.jsonl.gz | retrace validate -`,
	}
	runs := cmd.Flags().String("runs", "", "directory of runs to validate when no PATH is given (default $RETRACE_DIR or .retrace/runs)")
	opts.format = addFormatFlag(cmd, "text", "json")
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		opts.paths = args
		if len(args) == 0 {
			opts.paths = []string{*runs}
			if *runs == "" {
				opts.paths = []string{runsDir(sys)}
			}
		}
		return withJSONErrors(sys, opts.format, runValidate(sys, opts))
	}
	return cmd
}

// validateJSON is the --format json document.
type validateJSON struct {
	Files    []fileJSON `json:"files"`
	Events   int        `json:"events"`
	Problems int        `json:"problems"`
	Valid    bool       `json:"valid"`
	// Skipped are the entries of directories and globs left out as not
	// regular files.
	Skipped []problemJSON `json:"skipped"`
}

type fileJSON struct {
	File     string        `json:"file"`
	Events   int           `json:"events"`
	Problems []problemJSON `json:"problems"`
	Omitted  int           `json:"omitted_problems,omitempty"`
	Warnings []problemJSON `json:"warnings"`
}

type problemJSON struct {
	// File is set outside a file's own entry (errorJSON, skipped).
	File string `json:"file,omitempty"`
	// Line is 0 for a problem with a whole file.
	Line int `json:"line"`
	// Kind is the invariant for a violation, or the sentinel of a line error.
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func runValidate(sys *IO, opts *validateOptions) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	in, err := trajectory.ExpandInputs(opts.paths...)
	if err != nil {
		if badInput(err) {
			return invalid(err)
		}
		return err
	}
	var reports []trajectory.FileReport
	for _, p := range in.Problems {
		reports = append(reports, fileProblem(p))
	}
	files, errs := validateFiles(sys, in.Files, runtime.GOMAXPROCS(0))
	for i, f := range in.Files {
		rep, err := files[i], errs[i]
		var fe *trajectory.FileError
		switch {
		case errors.As(err, &fe):
			// One file that cannot be read does not stop the others.
			rep = fileProblem(err)
		case err != nil:
			return fmt.Errorf("validate %s: %w", trajectory.Name(f), err)
		}
		reports = append(reports, rep)
	}
	slices.SortStableFunc(reports, func(a, b trajectory.FileReport) int { return strings.Compare(a.File, b.File) })
	problems, events, bad := 0, 0, 0
	for _, r := range reports {
		problems += len(r.Problems) + r.Omitted
		events += r.Events
		if len(r.Problems) > 0 {
			bad++
		}
	}
	if opts.format.value == "json" {
		if err := writeValidateJSON(sys, reports, in.Skipped, events, problems); err != nil {
			return err
		}
	} else {
		for _, w := range in.Skipped {
			fmt.Fprintln(sys.Err, w)
		}
		for _, r := range reports {
			for _, p := range r.Problems {
				fmt.Fprintln(sys.Out, p)
			}
			if r.Omitted > 0 {
				fmt.Fprintf(sys.Out, "%s: %s more not shown\n", r.File, plural(r.Omitted, "problem"))
			}
			for _, w := range r.Warnings {
				fmt.Fprintln(sys.Err, w)
			}
		}
		if problems == 0 {
			fmt.Fprintf(sys.Err, "ok: %s, %s, no problems\n", plural(len(reports), "file"), plural(events, "event"))
		} else {
			fmt.Fprintf(sys.Err, "%s in %d of %s\n", plural(problems, "problem"), bad, plural(len(reports), "file"))
		}
	}
	if problems > 0 {
		return invalid(errReported)
	}
	return nil
}

// validateFiles validates files on workers goroutines, each taking the
// next file, and returns the report and error of each file at its index.
// Decoding is what validation spends its time on, and files are
// independent, so every core has a file to decode. A file is checked by
// one worker from its first line to its last: its invariants (seq, calls
// and their outcomes) run through the whole file.
func validateFiles(sys *IO, files []string, workers int) ([]trajectory.FileReport, []error) {
	reports := make([]trajectory.FileReport, len(files))
	errs := make([]error, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(files)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) {
					return
				}
				if files[i] == trajectory.Stdin {
					reports[i], errs[i] = trajectory.ValidateStream(sys.In, trajectory.StdinName)
				} else {
					reports[i], errs[i] = trajectory.ValidateFile(files[i])
				}
			}
		})
	}
	wg.Wait()
	return reports, errs
}

// fileProblem is the report of a file that could not be validated at all.
func fileProblem(err error) trajectory.FileReport {
	var fe *trajectory.FileError
	errors.As(err, &fe)
	return trajectory.FileReport{File: fe.File, Problems: []error{err}}
}

func writeValidateJSON(sys *IO, reports []trajectory.FileReport, skipped []trajectory.Warning, events, problems int) error {
	doc := validateJSON{Files: []fileJSON{}, Events: events, Problems: problems, Valid: problems == 0, Skipped: []problemJSON{}}
	for _, r := range reports {
		fj := fileJSON{File: r.File, Events: r.Events, Problems: []problemJSON{}, Omitted: r.Omitted, Warnings: []problemJSON{}}
		for _, p := range r.Problems {
			pj := toProblemJSON(p)
			pj.File = ""
			fj.Problems = append(fj.Problems, pj)
		}
		for _, w := range r.Warnings {
			fj.Warnings = append(fj.Warnings, problemJSON{Line: w.Line, Kind: "warning", Message: w.Msg})
		}
		doc.Files = append(doc.Files, fj)
	}
	for _, w := range skipped {
		doc.Skipped = append(doc.Skipped, problemJSON{File: w.File, Kind: "not_regular", Message: w.Msg})
	}
	enc := json.NewEncoder(sys.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// toProblemJSON describes one problem for machines; File names the file
// it is in, when it is known.
func toProblemJSON(err error) problemJSON {
	var v trajectory.Violation
	if errors.As(err, &v) {
		return problemJSON{File: v.File, Line: v.Line, Kind: string(v.Kind), Message: v.Msg}
	}
	var le *trajectory.LineError
	if errors.As(err, &le) {
		return problemJSON{File: le.File, Line: le.Line, Kind: sentinelName(le.Err), Message: le.Err.Error()}
	}
	var fe *trajectory.FileError
	if errors.As(err, &fe) {
		return problemJSON{File: fe.File, Kind: sentinelName(fe.Err), Message: fe.Err.Error()}
	}
	return problemJSON{Kind: "error", Message: err.Error()}
}

// sentinelName names the class of a line error for machines.
func sentinelName(err error) string {
	for _, s := range []struct {
		err  error
		name string
	}{
		{trajectory.ErrUnsupportedVersion, "unsupported_version"},
		{trajectory.ErrUnknownValue, "unknown_value"},
		{trajectory.ErrMissingField, "missing_field"},
		{trajectory.ErrBinary, "binary"},
		{trajectory.ErrLineTooLong, "line_too_long"},
		{trajectory.ErrMalformed, "malformed"},
		{metrics.ErrSeq, "seq"},
		{trajectory.ErrUnreadable, "unreadable"},
		{trajectory.ErrEmpty, "empty"},
	} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return "error"
}
