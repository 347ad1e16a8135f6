package detectors

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/trajectory"
)

// Report is what a run of detectors found.
type Report struct {
	// Detectors are the detectors that ran, in catalog order.
	Detectors []Info `json:"detectors"`
	// Findings are sorted worst first: by severity, then detector, file
	// and line.
	Findings []Finding `json:"findings"`
	// Sessions and Events count what was loaded.
	Sessions int `json:"sessions"`
	Events   int `json:"events"`
	// Unread lists the trajectory files only the SQL detectors saw: the Go
	// detectors read the files again, and stdin, a pipe, or the source of
	// a Parquet export that is no longer there cannot be.
	Unread []string `json:"unread,omitempty"`
}

// Counts returns the number of findings per detector id.
func (r Report) Counts() map[string]int {
	n := map[string]int{}
	for _, f := range r.Findings {
		n[f.Detector]++
	}
	return n
}

// Worst returns the highest severity among the findings, or "" for none.
func (r Report) Worst() Severity {
	var w Severity
	for _, f := range r.Findings {
		if f.Severity.Rank() > w.Rank() {
			w = f.Severity
		}
	}
	return w
}

// Options are the knobs of a Run.
type Options struct {
	// Settings set thresholds; the rest keep their defaults. Run checks
	// them against ds first.
	Settings Settings
	// Progress, when set, is called as the Go detectors finish each
	// trajectory file: done files of total.
	Progress func(done, total int)
}

// Run runs ds over what is loaded into db: the SQL detectors over the
// views, and the Go detectors over each session's events, read again from
// the trajectory files the events were loaded from (the file column), so
// the files a lenient load left out are left out here too; the lines it
// skipped are skipped and the events it dropped dropped, so both kinds of
// detector see the same events. A file that is no longer there, or is not
// a regular file (stdin, a pipe), is listed in Report.Unread.
func Run(ctx context.Context, db *metrics.DB, ds []Detector, opts Options) (Report, error) {
	rep := Report{Findings: []Finding{}}
	if err := opts.Settings.Check(ds, nil); err != nil {
		return rep, err
	}
	params := make([]Params, len(ds))
	for i, d := range ds {
		rep.Detectors = append(rep.Detectors, d.Info())
		params[i] = opts.Settings.params(d)
	}
	// dead, when selected, is fed from the pass over the sessions below
	// rather than reading every file a second time.
	var dead *deadDefense
	for i, d := range ds {
		if dd, ok := d.(*deadDefense); ok {
			dead = dd
			continue
		}
		fs, err := d.Corpus(ctx, db, params[i])
		if err != nil {
			return rep, err
		}
		rep.Findings = append(rep.Findings, fs...)
	}
	files, err := db.Query(ctx, "SELECT DISTINCT file FROM raw_events WHERE file IS NOT NULL ORDER BY file")
	if err != nil {
		return rep, fmt.Errorf("detect: %w", err)
	}
	skip := skipTypes(ds)
	if len(skip) == len(trajectory.EventTypes()) {
		// Only SQL detectors were selected: no file needs reading.
		files.Rows = nil
	}
	// The files are read on every core, each by one worker: sessions do
	// not span files, and a Go detector is a pure function of a session.
	type result struct {
		findings []Finding
		unread   bool
		err      error
	}
	results := make([]result, len(files.Rows))
	workers := min(runtime.GOMAXPROCS(0), max(len(files.Rows), 1))
	// live holds each worker's share of the liveness table dead needs.
	live := make([]fileLiveness, workers)
	next := make(chan int)
	var wg sync.WaitGroup
	// done counts finished files; progress is reported by the workers
	// under mu, so the calls are never concurrent and never go backwards.
	var mu sync.Mutex
	done := 0
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				file, res := text(files.Rows[i][0]), &results[i]
				if info, err := os.Stat(file); file == trajectory.StdinName || err != nil || !info.Mode().IsRegular() {
					res.unread = true
				} else {
					res.err = readSessions(file, skip, func(s *Session) {
						for k, d := range ds {
							res.findings = append(res.findings, d.Session(s, params[k])...)
						}
						if dead != nil {
							live[w].add(s)
						}
					})
				}
				if opts.Progress != nil {
					mu.Lock()
					done++
					opts.Progress(done, len(files.Rows))
					mu.Unlock()
				}
			}
		}()
	}
	for i := range files.Rows {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	var count metrics.Table
	if count, err = db.Query(ctx, "SELECT count(DISTINCT session), count(*) FROM raw_events"); err != nil {
		return rep, fmt.Errorf("detect: %w", err)
	}
	if n, ok := count.Rows[0][0].(int64); ok {
		rep.Sessions = int(n)
	}
	if n, ok := count.Rows[0][1].(int64); ok {
		rep.Events = int(n)
	}
	for i, res := range results {
		if res.err != nil {
			return rep, res.err
		}
		if res.unread {
			rep.Unread = append(rep.Unread, text(files.Rows[i][0]))
		}
		rep.Findings = append(rep.Findings, res.findings...)
	}
	if dead != nil {
		rep.Findings = append(rep.Findings, dead.findings(tabulate(live))...)
	}
	order := map[string]int{}
	for i, d := range catalog {
		order[d.Info().ID] = i
	}
	slices.SortStableFunc(rep.Findings, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(b.Severity.Rank(), a.Severity.Rank()),
			cmp.Compare(order[a.Detector], order[b.Detector]),
			cmp.Compare(a.File(), b.File()),
			cmp.Compare(a.Line(), b.Line()),
			cmp.Compare(a.Session, b.Session))
	})
	return rep, nil
}

// readSessions reads file and calls fn with each session's events: when
// its session_end is read, else at the end of the file. Lines of the
// types in skip are not decoded. Lines that do not
// decode are skipped and events whose seq does not increase dropped, as a
// lenient load does; a strict load has refused such a file already.
func readSessions(file string, skip map[string]bool, fn func(*Session)) error {
	fh, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("detect: %w", err)
	}
	defer fh.Close()
	var r io.Reader = fh
	if len(skip) > 0 {
		r = newTypeFilter(fh, skip)
	}
	dec := trajectory.NewDecoder(r, file)
	open := map[string]*Session{}
	var order []string
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var le *trajectory.LineError
		if errors.As(err, &le) {
			if errors.Is(err, trajectory.ErrBinary) {
				return fmt.Errorf("detect: %w", err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("detect: %w", err)
		}
		s := open[ev.Session]
		if s == nil {
			s = &Session{ID: ev.Session, File: file}
			open[ev.Session] = s
			order = append(order, ev.Session)
		}
		if n := len(s.Events); n > 0 && ev.Seq <= s.Events[n-1].Seq {
			continue
		}
		s.Events = append(s.Events, Located{Event: ev, Line: dec.Line()})
		if ev.Type() == trajectory.TypeSessionEnd {
			fn(s)
			delete(open, ev.Session)
		}
	}
	for _, id := range order {
		if s := open[id]; s != nil {
			fn(s)
		}
	}
	return nil
}

// parseStrings reads a list of strings an SQL detector returns: DuckDB's
// driver gives a JSON value as text, or already decoded into a []any when
// a UNION has turned the column into a list.
func parseStrings(v any) ([]string, error) {
	if list, ok := v.([]any); ok {
		ss := make([]string, 0, len(list))
		for _, e := range list {
			ss = append(ss, text(e))
		}
		return ss, nil
	}
	var ss []string
	if err := json.Unmarshal([]byte(text(v)), &ss); err != nil {
		return nil, fmt.Errorf("sessions %v: %w", v, err)
	}
	return ss, nil
}
