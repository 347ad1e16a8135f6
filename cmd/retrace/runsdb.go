package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/store"
	"github.com/retrace-dev/retrace/terminal"
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
//
// The runs are read through a store (package store): the one at --db
// FILE, or by default the corpus's own in the cache directory; a store
// that another process holds too long, --no-cache, stdin or a named pipe
// among the runs, or no cache directory, loads cold into memory instead.
func openAndLoadWith(ctx context.Context, sys *IO, dbPath string, lf loadFlags, paths []string, load loadFunc) (*metrics.DB, error) {
	if load == nil {
		load = func(db *metrics.DB, paths []string) (metrics.LoadReport, error) { return db.Load(ctx, paths...) }
	}
	if len(paths) == 0 && dbPath == "" {
		paths = []string{runsDir(sys)}
	}
	bar := newLoadBar(sys)
	opts := metrics.Options{Lenient: lf.lenient, StrictDupes: lf.strictDupes, Stdin: sys.In, Progress: bar.update,
		MemoryLimit: lf.memory(sys)}
	var db *metrics.DB
	var rep metrics.LoadReport
	err := store.ErrBusy
	if cfg, ok := storeConfig(sys, dbPath, lf, paths); ok {
		cfg.Metrics = opts
		db, rep, err = store.Open(ctx, cfg, paths, func(db *metrics.DB) (metrics.LoadReport, error) { return load(db, paths) })
		if errors.Is(err, store.ErrBusy) && dbPath != "" {
			return nil, fmt.Errorf("%s: %w: another retrace holds it; try again, or leave out --db", dbPath, err)
		}
	}
	if errors.Is(err, store.ErrBusy) || errors.Is(err, store.ErrUnavailable) && dbPath == "" {
		if db, err = metrics.Open(ctx, opts); err == nil {
			rep, err = load(db, paths)
			if err != nil {
				db.Close()
			}
		}
	}
	bar.finish()
	if errors.Is(err, metrics.ErrMemoryLimit) || errors.Is(err, metrics.ErrStorePath) || errors.Is(err, store.ErrNotStore) {
		return nil, usage(err)
	}
	for _, w := range rep.NotRegular {
		fmt.Fprintln(sys.Err, w)
	}
	if err != nil {
		if badInput(err) {
			return nil, invalid(err)
		}
		return nil, err
	}
	// A store's unchanged files say again what their last read said.
	for _, f := range append(rep.Held, rep.Files...) {
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

// storeConfig says which store a reading command reads through, and
// false when it loads cold: --no-cache, stdin or a stream among the runs
// (read anew every time, they would rewrite the store on every call), a
// Parquet lake (read in place, it is columnar already; a store would copy
// it), or no cache directory known. --db FILE is a store at FILE whatever
// else.
func storeConfig(sys *IO, dbPath string, lf loadFlags, paths []string) (store.Config, bool) {
	if dbPath != "" {
		return store.Config{File: dbPath}, true
	}
	if lf.noCache || metrics.IsLake(paths) {
		return store.Config{}, false
	}
	for _, p := range paths {
		if p == trajectory.Stdin {
			return store.Config{}, false
		}
		if info, err := os.Stat(p); err == nil && !info.IsDir() && !info.Mode().IsRegular() {
			return store.Config{}, false
		}
	}
	dir, ok := cacheDir(sys)
	return store.Config{Dir: dir, Max: cacheMax(sys)}, ok
}

// cacheDir returns the directory of the stores: retrace in
// $XDG_CACHE_HOME, or else in the system's cache directory of the user
// ($HOME/.cache on Linux); false without either.
func cacheDir(sys *IO) (string, bool) {
	if x := sys.Getenv("XDG_CACHE_HOME"); x != "" {
		return filepath.Join(x, "retrace"), true
	}
	if sys.Getenv("HOME") == "" {
		return "", false
	}
	dir, err := store.Dir()
	return dir, err == nil
}

// cacheMax returns the bound of the cache's size: $RETRACE_CACHE_MAX
// (bytes, or with a K, M or G suffix), else store.DefaultMax; a value that
// is no size is said on stderr and the default kept.
func cacheMax(sys *IO) int64 {
	v := strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(sys.Getenv("RETRACE_CACHE_MAX"))), "B")
	mult := int64(1)
	for suffix, m := range map[string]int64{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30} {
		if strings.HasSuffix(v, suffix) {
			v, mult = strings.TrimSuffix(v, suffix), m
		}
	}
	if v == "" {
		return store.DefaultMax
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		// Said, so that a typo does not leave the cache at a size the user
		// did not ask for without a word.
		fmt.Fprintf(sys.Err, "retrace: warning: RETRACE_CACHE_MAX=%s is not a size such as 4G, 500M or 1048576; the cache is kept under %s\n",
			terminal.Line(sys.Getenv("RETRACE_CACHE_MAX")), sizeText(store.DefaultMax))
		return store.DefaultMax
	}
	return n * mult
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
// otherwise (a pipe, a CI log, a test) it draws nothing. An export's
// writing, which follows the load, is shown as detect's files are: a line
// on a terminal, plain lines now and then in a log (newCountProgress).
type loadBar struct {
	sys   *IO
	w     io.Writer
	tty   bool
	min   int64
	bar   *progressbar.ProgressBar
	phase string
	// export shows the "export" phase, from its first call.
	export *countProgress
}

func newLoadBar(sys *IO) *loadBar {
	_, tty := terminalFd(sys.Err)
	return &loadBar{sys: sys, w: sys.Err, tty: tty, min: loadBarMin}
}

// exportBarMin is the events below which an export is quick enough to
// need no progress (about a second's work).
const exportBarMin = 100_000

// update follows metrics.Progress: the "check" phase, then "load", both
// counting bytes, and then, for an export, "export" counting events.
func (b *loadBar) update(p metrics.Progress) {
	if p.Phase == "export" {
		b.finish()
		if b.export == nil {
			c := newCountProgress(b.sys, "export: events written", exportBarMin)
			b.export = &c
		}
		b.export.update(int(p.Done), int(p.Total))
		if p.Done >= p.Total {
			b.export.finish()
		}
		return
	}
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
