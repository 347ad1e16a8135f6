package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/retrace-dev/retrace/diff"
	"github.com/retrace-dev/retrace/progress"
	"github.com/retrace-dev/retrace/replay"
	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/scenarios"
	"github.com/retrace-dev/retrace/terminal"
)

// progressEnv tunes the plain progress lines written when stderr is not
// a terminal (a CI log): a duration (30s), a number of items (25) or off.
const progressEnv = "RETRACE_PROGRESS"

// newProgress returns the printer of a command's long work on stderr:
// a line redrawn in place on a terminal (from min items on), plain lines
// now and then elsewhere.
func newProgress(sys *IO, label string, min int) *progress.Printer {
	opts := progress.Options{Min: min, Now: sys.Now}
	if err := progress.ParseEvery(sys.Getenv(progressEnv), &opts); err != nil {
		fmt.Fprintf(sys.Err, "warning: %s: %v\n", progressEnv, err)
	}
	return progress.New(sys.Err, label, opts)
}

// countProgress follows work whose hooks count items done and total
// (import, export, detect).
type countProgress struct{ p *progress.Printer }

func newCountProgress(sys *IO, label string, min int) countProgress {
	return countProgress{newProgress(sys, label, min)}
}

// update takes an importer, otlp or detectors progress hook's counts.
func (c countProgress) update(done, total int) { c.p.Update(done, total, 0) }

// finish ends the progress.
func (c countProgress) finish() { c.p.Finish() }

// evalProgress shows the runs of an eval as they finish: the progress
// line counts the runs that failed so far, and on a terminal each run is
// listed above it. The suite's warnings go above it too.
func evalProgress(sys *IO, ro *scenarios.Options) *progress.Printer {
	p := newProgress(sys, "eval: runs", 1)
	failed := 0
	ro.Progress = func(done, total int, s *scenarios.Scenario, res results.RunResult) {
		bad := res.Error != "" || len(res.Failures) > 0
		if bad {
			failed++
		}
		if p.Terminal() {
			p.Above(func() {
				what, why := "ran   ", ""
				switch {
				case res.Error != "":
					what, why = "error ", ": "+res.Error
				case bad:
					what, why = "failed", ": "+res.Failures[0].Expect
				}
				fmt.Fprintf(sys.Err, "%s %s%s %s%s\n", what, terminal.Line(s.Name), repeatSuffix(res.Repeat), seconds(res.DurationMs), terminal.Line(why))
			})
		}
		p.Update(done, total, failed)
	}
	if warn := ro.Warn; warn != nil {
		ro.Warn = func(msg string) { p.Above(func() { warn(msg) }) }
	}
	return p
}

// replayProgress shows the replays of a batch as they end, the failed
// and diverged ones counted, each listed above the line on a terminal.
func replayProgress(sys *IO) (func(done, total int, s replay.Session), *progress.Printer) {
	p := newProgress(sys, "replay", 1)
	failed := 0
	return func(done, total int, s replay.Session) {
		if s.Verdict == replay.VerdictFailed || s.Verdict == replay.VerdictDiverged {
			failed++
		}
		if p.Terminal() {
			p.Above(func() { fmt.Fprintf(sys.Err, "%-10s %s\n", s.Verdict, terminal.Line(s.Recording)) })
		}
		p.Update(done, total, failed)
	}, p
}

// diffProgress prints diff's phases as lines, as before, and counts the
// metrics compared and the A/A splits on the progress line.
func diffProgress(sys *IO, dopts *diff.Options) *progress.Printer {
	p := newProgress(sys, "diff", 1)
	phase := ""
	dopts.Progress = func(s string) { p.Above(func() { fmt.Fprintln(sys.Err, s) }) }
	dopts.Count = func(name string, done, total int) {
		if name != phase {
			phase = name
			p.Phase("diff: " + name)
		}
		p.Update(done, total, 0)
	}
	return p
}

// repeatSuffix names a run's repeat when there are several: " #2".
func repeatSuffix(repeat int) string {
	if repeat <= 1 {
		return ""
	}
	return " #" + strconv.Itoa(repeat)
}

// seconds renders a duration in milliseconds as "(1.2s)".
func seconds(ms float64) string {
	return "(" + (time.Duration(ms * float64(time.Millisecond))).Round(100*time.Millisecond).String() + ")"
}
