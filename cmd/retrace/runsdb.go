package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/trajectory"
)

// openAndLoad opens the metrics database and loads paths into it (the runs
// directory when there are none and no kept database is named).
func openAndLoad(ctx context.Context, sys *IO, dbPath string, lf loadFlags, paths []string) (*metrics.DB, error) {
	return openAndLoadWith(ctx, sys, dbPath, lf, paths, nil)
}

// loadFunc loads paths into db; openAndLoadWith takes one to load with a
// call that does more in the same pass, such as detectors.Detect.
type loadFunc func(db *metrics.DB, paths []string) (metrics.LoadReport, error)

// openAndLoadWith is openAndLoad, loading with load when it is not nil.
func openAndLoadWith(ctx context.Context, sys *IO, dbPath string, lf loadFlags, paths []string, load loadFunc) (*metrics.DB, error) {
	if load == nil {
		load = func(db *metrics.DB, paths []string) (metrics.LoadReport, error) { return db.Load(ctx, paths...) }
	}
	if len(paths) == 0 && dbPath == "" {
		paths = []string{runsDir(sys)}
	}
	bar := newLoadBar(sys.Err)
	db, err := metrics.Open(ctx, metrics.Options{Path: dbPath, Lenient: lf.lenient, StrictDupes: lf.strictDupes, Stdin: sys.In, Progress: bar.update,
		MemoryLimit: lf.memory(sys)})
	if errors.Is(err, metrics.ErrMemoryLimit) {
		return nil, usage(err)
	}
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return db, nil
	}
	rep, err := load(db, paths)
	bar.finish()
	for _, w := range rep.NotRegular {
		fmt.Fprintln(sys.Err, w)
	}
	if err != nil {
		db.Close()
		if badInput(err) {
			return nil, invalid(err)
		}
		return nil, err
	}
	for _, f := range rep.Files {
		for _, w := range f.Warnings {
			fmt.Fprintln(sys.Err, w)
		}
		if f.Err != nil {
			fmt.Fprintf(sys.Err, "%s: warning: left out: %v\n", f.File, errors.Unwrap(f.Err))
		}
		if f.Skipped > 0 {
			fmt.Fprintf(sys.Err, "%s: skipped %s (first: %v)\n", f.File, plural(f.Skipped, "malformed line"), f.FirstSkipped)
		}
		if f.Dropped > 0 {
			fmt.Fprintf(sys.Err, "%s: warning: dropped %s whose seq repeats or goes back, each counted once (first: %v)\n", f.File, plural(f.Dropped, "event"), f.FirstDropped)
		}
	}
	for _, d := range rep.Duplicates {
		fmt.Fprintf(sys.Err, "%s:%d: warning: session %s is also in %s, which comes first; loaded once, from there (--strict-dupes refuses this)\n", d.File, d.Line, d.Session, d.Kept)
	}
	return db, nil
}

// badInput reports whether a reading command's error is about its input
// (exit 2: the user fixes a path or a file) rather than retrace failing.
func badInput(err error) bool {
	var le *trajectory.LineError
	var fe *trajectory.FileError
	var lo *metrics.LoadError
	return errors.As(err, &le) || errors.As(err, &fe) || errors.As(err, &lo) ||
		errors.Is(err, fs.ErrNotExist) || errors.Is(err, trajectory.ErrNoRuns) || errors.Is(err, filepath.ErrBadPattern)
}

// errorJSON is what a reading command (validate, metrics, query, export)
// prints on stdout with --format json when it fails without a result, so
// that its stdout is JSON whatever happens:
//
//	{"error": {"code": 2, "message": "...", "problems": [{"file": "...", "line": 5, "kind": "seq", "message": "..."}]}}
//
// code is the exit code; problems lists the bad files of a refused load
// (line 0 for a problem with a whole file) and is empty otherwise. The
// same message goes to stderr as text.
type errorJSON struct {
	Code     ExitCode      `json:"code"`
	Message  string        `json:"message"`
	Problems []problemJSON `json:"problems"`
}

// withJSONErrors prints err as an errorJSON document on stdout when the
// output format is json, and returns err for Main to map to the exit code.
// An error already reported (validate's own document) is left alone.
func withJSONErrors(sys *IO, format *formatFlag, err error) error {
	if err == nil || format.value != "json" || errors.Is(err, errReported) {
		return err
	}
	doc := errorJSON{Code: ExitHarness, Message: err.Error(), Problems: []problemJSON{}}
	var ee *exitError
	if errors.As(err, &ee) {
		doc.Code = ee.code
	}
	var lo *metrics.LoadError
	if errors.As(err, &lo) {
		for _, p := range lo.Problems {
			doc.Problems = append(doc.Problems, toProblemJSON(p))
		}
	} else if pj := toProblemJSON(err); pj.File != "" {
		doc.Problems = append(doc.Problems, pj)
	}
	b, merr := json.MarshalIndent(map[string]errorJSON{"error": doc}, "", "  ")
	if merr != nil {
		return err
	}
	fmt.Fprintf(sys.Out, "%s\n", b)
	return err
}

// loadBarMin is the input size below which a load is quick enough to need
// no progress bar.
const loadBarMin = 32 << 20

// loadBar draws a load's progress on stderr when stderr is a terminal;
// otherwise (a pipe, a CI log, a test) it draws nothing.
type loadBar struct {
	w     io.Writer
	tty   bool
	min   int64
	bar   *progressbar.ProgressBar
	phase string
}

func newLoadBar(w io.Writer) *loadBar {
	_, tty := terminalFd(w)
	return &loadBar{w: w, tty: tty, min: loadBarMin}
}

// update follows metrics.Progress: the "check" phase, then "load".
func (b *loadBar) update(p metrics.Progress) {
	if !b.tty || p.Total < b.min {
		return
	}
	if b.bar == nil || b.phase != p.Phase {
		b.finish()
		desc := map[string]string{"check": "checking trajectories", "load": "loading into DuckDB"}[p.Phase]
		b.phase = p.Phase
		b.bar = progressbar.NewOptions64(p.Total,
			progressbar.OptionSetWriter(b.w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish())
	}
	b.bar.Set64(p.Done)
}

// finish clears the bar, if one is drawn.
func (b *loadBar) finish() {
	if b.bar != nil {
		b.bar.Finish()
		b.bar = nil
	}
}
