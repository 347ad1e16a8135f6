package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/trajectory"
)

// openAndLoad opens the metrics database and loads paths into it (the runs
// directory when there are none and no kept database is named).
func openAndLoad(ctx context.Context, sys *IO, dbPath string, lenient bool, paths []string) (*metrics.DB, error) {
	if len(paths) == 0 && dbPath == "" {
		paths = []string{runsDir(sys)}
	}
	bar := newLoadBar(sys.Err)
	db, err := metrics.Open(ctx, metrics.Options{Path: dbPath, Lenient: lenient, Progress: bar.update})
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return db, nil
	}
	rep, err := db.Load(ctx, paths...)
	bar.finish()
	if err != nil {
		db.Close()
		var le *trajectory.LineError
		if errors.As(err, &le) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, trajectory.ErrNoRuns) {
			return nil, invalid(err)
		}
		return nil, err
	}
	for _, f := range rep.Files {
		for _, w := range f.Warnings {
			fmt.Fprintln(sys.Err, w)
		}
		if f.Skipped > 0 {
			fmt.Fprintf(sys.Err, "%s: skipped %s (first: %v)\n", f.File, plural(f.Skipped, "malformed line"), f.FirstSkipped)
		}
	}
	return db, nil
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
