package detectors

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
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
	// Unread lists the trajectory files only the SQL detectors saw. Run's
	// Go detectors read the files again, and stdin, a pipe, or the source
	// of a Parquet export that is no longer there cannot be. Detect hands
	// them every event it loads from trajectory files, and reads the rest
	// again as Run does: only a gone source of Parquet is unread.
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
	// trajectory file they read again: done files of total. Run reads
	// every file again; Detect only those its load did not hand over.
	Progress func(done, total int)
}

// Run runs ds over what is loaded into db: the SQL detectors over the
// views, and the Go detectors over each session's events, read again from
// the trajectory files the events were loaded from (the file column), so
// the files a lenient load left out are left out here too; the lines it
// skipped are skipped and the events it dropped dropped, so both kinds of
// detector see the same events. A file that is no longer there, or is not
// a regular file (stdin, a pipe), is listed in Report.Unread. Detect,
// which loads and detects in one pass, decodes every file once instead.
func Run(ctx context.Context, db *metrics.DB, ds []Detector, opts Options) (Report, error) {
	rep := Report{Findings: []Finding{}}
	pl, err := newPlan(ds, opts)
	if err != nil {
		return rep, err
	}
	rep.Detectors = pl.infos()
	// With only SQL detectors selected no file needs reading.
	var files []string
	if pl.readsEvents() {
		if files, err = loadedFiles(ctx, db); err != nil {
			return rep, err
		}
	}
	sink, err := pl.newCollector(false)
	if err != nil {
		return rep, err
	}
	unread, err := pl.readFiles(ctx, files, nil, sink)
	if err != nil {
		return rep, err
	}
	rr := sink.result(unread)
	rep.Findings, rep.Unread = append(rep.Findings, rr.allFindings()...), rr.unread
	if err := pl.finish(ctx, db, &rep, rr.lives()); err != nil {
		return rep, err
	}
	return rep, nil
}

// loadedFiles returns the trajectory files db holds events of, sorted.
func loadedFiles(ctx context.Context, db *metrics.DB) ([]string, error) {
	files, err := db.EventFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("detect: %w", err)
	}
	return files, nil
}

// fileResult is what the Go detectors found in the sessions of one file,
// and the liveness rows of those sessions for dead_defense.
type fileResult struct {
	findings []Finding
	live     fileLiveness
}

// merge adds what o found in other sessions of the same file.
func (r *fileResult) merge(o *fileResult) {
	r.findings = append(r.findings, o.findings...)
	r.live.merge(o.live)
}

// readResult is what the Go detectors found: the findings by file, the
// liveness rows of every session folded into one table, and the files
// that could not be read (not regular files, or no longer there).
type readResult struct {
	findings map[string][]Finding
	live     fileLiveness
	unread   []string
}

// allFindings returns every file's findings, the files in order.
func (rr readResult) allFindings() []Finding {
	var out []Finding
	for _, f := range slices.Sorted(maps.Keys(rr.findings)) {
		out = append(out, rr.findings[f]...)
	}
	return out
}

// lives returns the liveness rows.
func (rr readResult) lives() []fileLiveness { return []fileLiveness{rr.live} }

// readFiles reads each file again and runs the plan's Go detectors over
// its sessions, on every core, each file by one worker: sessions do not
// span files, and a Go detector is a pure function of a session. What
// each file holds goes to sink as soon as the file is done; readFiles
// returns the files that could not be read. Of a file in keep, only the
// sessions it names are judged (the others are copies the load left out
// of it, see metrics.DB.SessionsOf). The plan's progress, when set, is
// called as each file is done.
func (pl plan) readFiles(ctx context.Context, files []string, keep map[string]map[string]bool, sink *collector) ([]string, error) {
	var skip map[string]bool
	if filterTypes {
		skip = skipTypes(pl.ds)
	}
	unread := make([]bool, len(files))
	errs := make([]error, len(files))
	workers := min(runtime.GOMAXPROCS(0), max(len(files), 1))
	next := make(chan int)
	var wg sync.WaitGroup
	// done counts finished files; progress is reported by the workers
	// under mu, so the calls are never concurrent and never go backwards.
	var mu sync.Mutex
	done := 0
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				file := files[i]
				if info, err := os.Stat(file); file == trajectory.StdinName || err != nil || !info.Mode().IsRegular() {
					unread[i] = true
				} else {
					var res fileResult
					only := keep[file]
					errs[i] = readSessions(file, skip, func(s *Session) {
						if only == nil || only[s.ID] {
							res.findings = pl.session(s, res.findings, &res.live)
						}
					})
					if errs[i] == nil {
						sink.add(file, &res)
					}
				}
				if pl.progress != nil {
					mu.Lock()
					done++
					pl.progress(done, len(files))
					mu.Unlock()
				}
			}
		}()
	}
	for i := range files {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []string
	for i, f := range files {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if unread[i] {
			out = append(out, f)
		}
	}
	return out, nil
}

// plan is a run's detectors with their thresholds.
type plan struct {
	ds     []Detector
	params []Params
	// dead, when selected, is fed from the pass over the sessions rather
	// than reading every file a second time.
	dead *deadDefense
	// progress is Options.Progress, for the files read again.
	progress func(done, total int)
}

// newPlan checks opts' settings against ds and sets each detector's
// thresholds.
func newPlan(ds []Detector, opts Options) (plan, error) {
	if err := opts.Settings.Check(ds, nil); err != nil {
		return plan{}, err
	}
	pl := plan{ds: ds, params: make([]Params, len(ds)), progress: opts.Progress}
	for i, d := range ds {
		pl.params[i] = opts.Settings.params(d)
		if dd, ok := d.(*deadDefense); ok {
			pl.dead = dd
		}
	}
	return pl, nil
}

// infos documents the plan's detectors.
func (pl plan) infos() []Info {
	out := make([]Info, 0, len(pl.ds))
	for _, d := range pl.ds {
		out = append(out, d.Info())
	}
	return out
}

// readsEvents reports whether a detector of the plan looks at the event
// stream: a Go detector, or dead_defense's liveness table.
func (pl plan) readsEvents() bool {
	return len(skipTypes(pl.ds)) < len(trajectory.EventTypes())
}

// session runs the Go detectors over s, appending their findings to out,
// and folds s into live when dead_defense runs.
func (pl plan) session(s *Session, out []Finding, live *fileLiveness) []Finding {
	for k, d := range pl.ds {
		out = append(out, d.Session(s, pl.params[k])...)
	}
	if pl.dead != nil {
		live.add(s)
	}
	return out
}

// finish runs the SQL detectors (or takes what they found from the store,
// see corpusFindings), counts what db holds, adds
// dead_defense's findings from the liveness rows the pass gathered, and
// sorts the findings worst first.
func (pl plan) finish(ctx context.Context, db *metrics.DB, rep *Report, live []fileLiveness) error {
	fs, err := pl.corpusFindings(ctx, db)
	if err != nil {
		return err
	}
	rep.Findings = append(rep.Findings, fs...)
	if rep.Sessions, rep.Events, err = db.Counts(ctx); err != nil {
		return fmt.Errorf("detect: %w", err)
	}
	if pl.dead != nil {
		rep.Findings = append(rep.Findings, pl.dead.findings(tabulate(live))...)
	}
	if err := resolveOrigins(rep.Findings); err != nil {
		return err
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
	return nil
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
		// A session that began again after its session_end is in order
		// twice: it is handed over once.
		if s := open[id]; s != nil {
			fn(s)
			delete(open, id)
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
