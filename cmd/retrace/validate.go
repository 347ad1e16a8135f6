package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

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
		Short: "Check trajectories against the v1 contract and its invariants",
		Long: `Validate decodes every line of each trajectory strictly (known version, known
event types and closed-set values, required fields, labels that are labels)
and checks each session's invariants: seq from 1 without gaps; one
session_start first and at most one session_end last; every tool_call with
exactly one tool_success or tool_failure and one tool_end; every tool_use of a
model response with exactly one tool_result before the next request.

PATH may be a file, a directory (every *.jsonl below it) or a glob; with no
PATH the runs directory is validated (--runs, RETRACE_DIR, or .retrace/runs).

Each problem is printed on its own line as file:line: what is wrong.
Warnings (a last line torn by a crash, a session without session_end) go to
stderr and do not fail validation.

Exit codes: 0 every file is valid, 2 a problem was found (or a path is
missing), 1 a file could not be read.`,
		Example: `  retrace validate .retrace/runs
  retrace validate 'runs/2026*.jsonl' --format json`,
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
		return runValidate(sys, opts)
	}
	return cmd
}

// validateJSON is the --format json document.
type validateJSON struct {
	Files    []fileJSON `json:"files"`
	Events   int        `json:"events"`
	Problems int        `json:"problems"`
	Valid    bool       `json:"valid"`
}

type fileJSON struct {
	File     string        `json:"file"`
	Events   int           `json:"events"`
	Problems []problemJSON `json:"problems"`
	Omitted  int           `json:"omitted_problems,omitempty"`
	Warnings []problemJSON `json:"warnings"`
}

type problemJSON struct {
	Line int `json:"line"`
	// Kind is the invariant for a violation, or the sentinel of a line error.
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func runValidate(sys *IO, opts *validateOptions) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	files, err := trajectory.Expand(opts.paths...)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, trajectory.ErrNoRuns) {
			return invalid(err)
		}
		return err
	}
	var reports []trajectory.FileReport
	for _, f := range files {
		rep, err := trajectory.ValidateFile(f)
		if err != nil {
			return fmt.Errorf("validate %s: %w", f, err)
		}
		reports = append(reports, rep)
	}
	problems, events, bad := 0, 0, 0
	for _, r := range reports {
		problems += len(r.Problems) + r.Omitted
		events += r.Events
		if len(r.Problems) > 0 {
			bad++
		}
	}
	if opts.format.value == "json" {
		if err := writeValidateJSON(sys, reports, events, problems); err != nil {
			return err
		}
	} else {
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
			fmt.Fprintf(sys.Err, "ok: %s, %s, no problems\n", plural(len(files), "file"), plural(events, "event"))
		} else {
			fmt.Fprintf(sys.Err, "%s in %d of %s\n", plural(problems, "problem"), bad, plural(len(files), "file"))
		}
	}
	if problems > 0 {
		return invalid(errReported)
	}
	return nil
}

func writeValidateJSON(sys *IO, reports []trajectory.FileReport, events, problems int) error {
	doc := validateJSON{Files: []fileJSON{}, Events: events, Problems: problems, Valid: problems == 0}
	for _, r := range reports {
		fj := fileJSON{File: r.File, Events: r.Events, Problems: []problemJSON{}, Omitted: r.Omitted, Warnings: []problemJSON{}}
		for _, p := range r.Problems {
			fj.Problems = append(fj.Problems, toProblemJSON(p))
		}
		for _, w := range r.Warnings {
			fj.Warnings = append(fj.Warnings, problemJSON{Line: w.Line, Kind: "warning", Message: w.Msg})
		}
		doc.Files = append(doc.Files, fj)
	}
	enc := json.NewEncoder(sys.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func toProblemJSON(err error) problemJSON {
	var v trajectory.Violation
	if errors.As(err, &v) {
		return problemJSON{Line: v.Line, Kind: string(v.Kind), Message: v.Msg}
	}
	var le *trajectory.LineError
	if errors.As(err, &le) {
		return problemJSON{Line: le.Line, Kind: sentinelName(le.Err), Message: le.Err.Error()}
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
	} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return "error"
}
