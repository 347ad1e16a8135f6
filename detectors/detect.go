package detectors

import (
	"context"
	"runtime"
	"sync"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/trajectory"
)

// Detect loads paths into db (as metrics.DB.Load does, with db's
// strictness) and runs ds over what it loaded, in one pass: the Go
// detectors see each session's events as the load's check decodes them,
// so every file is read and decoded once, and standard input and named
// pipes are seen by every detector. The SQL detectors run over the views
// once the load is done. A load that fails returns its error and no
// finding, as nothing of it is loaded.
//
// What db holds that the load did not hand over (Parquet inputs, what a
// kept database held before) is read again from its trajectory files, as
// Run does, and Report.Unread lists what cannot be. Options.Progress
// follows those files only: the Go detectors keep pace with the load's
// check, which metrics.Options.Progress follows.
//
// Memory stays bounded: a session's events are held until its
// session_end (or the end of its file) and handed to the detectors then,
// and the load holds the events of a few parts of its input at most (see
// metrics.Observer).
func Detect(ctx context.Context, db *metrics.DB, paths []string, ds []Detector, opts Options) (Report, metrics.LoadReport, error) {
	rep := Report{Findings: []Finding{}}
	pl, err := newPlan(ds, opts)
	if err != nil {
		return rep, metrics.LoadReport{}, err
	}
	rep.Detectors = pl.infos()
	if !pl.readsEvents() {
		// Only SQL detectors: nothing needs the events.
		lrep, err := db.Load(ctx, paths...)
		if err != nil {
			return rep, lrep, err
		}
		return rep, lrep, pl.finish(ctx, db, &rep, nil)
	}
	lrep, rr, err := pl.loadAndRead(ctx, db, paths)
	if err != nil {
		return rep, lrep, err
	}
	rep.Findings, rep.Unread = append(rep.Findings, rr.allFindings()...), rr.unread
	return rep, lrep, pl.finish(ctx, db, &rep, rr.lives())
}

// LoadLiveness loads paths into db and builds the liveness table of what
// db then holds, in the load's pass as Detect does for dead_defense.
func LoadLiveness(ctx context.Context, db *metrics.DB, paths []string) (Liveness, metrics.LoadReport, error) {
	dead := &deadDefense{}
	lrep, rr, err := plan{ds: []Detector{dead}, params: []Params{{}}, dead: dead}.loadAndRead(ctx, db, paths)
	if err != nil {
		return Liveness{}, lrep, err
	}
	return tabulate(rr.lives()), lrep, nil
}

// loadAndRead loads paths into db while the plan's Go detectors (and
// liveness rows) run over the events the load keeps, then adds what they
// found in the files db holds events of that the load did not hand over:
// kept in the store when they are (see cache.go), else read again, as Run
// does (Parquet inputs whose trajectory files are still there, and what
// a store held before).
func (pl plan) loadAndRead(ctx context.Context, db *metrics.DB, paths []string) (metrics.LoadReport, readResult, error) {
	var skip map[string]bool
	if filterTypes {
		skip = skipTypes(pl.ds)
	}
	sink, err := pl.newCollector(db.KeepsAnnexes())
	if err != nil {
		return metrics.LoadReport{}, readResult{}, err
	}
	defer sink.close()
	p := startPass(pl, skip, sink)
	lrep, err := db.LoadObserved(ctx, p, paths...)
	seen := p.wait()
	if err != nil {
		return lrep, readResult{}, err
	}
	rr, err := pl.complete(ctx, db, seen, sink)
	return lrep, rr, err
}

// pass is the metrics.Observer of Detect: it gathers each file's events
// into sessions and hands every finished session to a pool of workers
// that run the plan's Go detectors over it. Sessions do not span files,
// and a Go detector is a pure function of a session, so the sessions can
// be judged in any order on any core; findings are sorted afterwards and
// the liveness table sorts its evidence. What was found in a file goes to
// the sink as soon as its last session is judged, so the pass holds the
// results of the few files in flight, never those of the whole corpus.
//
// The load hands over exactly the events it keeps (metrics.Observer):
// no copy of a session it holds from another file, the store's files
// included. So what the pass finds in a file is what a detect of the
// file's rows finds, and the sink may keep it as soon as the file is done.
type pass struct {
	pl   plan
	sink *collector
	// skip are the event types no detector of the plan reads: they are
	// not kept, as Run does not decode them.
	skip map[string]bool
	// open are the sessions of the file being handed over that have not
	// ended, and order their ids in the order they began; file is that
	// file's tally.
	open  map[string]*Session
	order []string
	file  *fileTally
	// last is the open session the last event went to, or nil.
	last *Session
	// seen are the files observed.
	seen map[string]bool
	jobs chan passJob
	wg   sync.WaitGroup
}

// passJob is a session to judge and the tally of its file.
type passJob struct {
	s *Session
	t *fileTally
}

// fileTally gathers what the workers find in the sessions of one file.
// pending counts its sessions not judged yet, and one more while the
// file is being handed over: whoever brings it to zero, the last worker
// or EndFile, gives the file's result to the sink.
type fileTally struct {
	name    string
	mu      sync.Mutex
	res     fileResult
	pending int
}

// done adds res to the tally (nil for none) and hands the file's result
// to sink when nothing of it is pending any more.
func (t *fileTally) done(res *fileResult, sink *collector) {
	t.mu.Lock()
	if res != nil {
		t.res.merge(res)
	}
	t.pending--
	last := t.pending == 0
	t.mu.Unlock()
	if last {
		sink.add(t.name, &t.res)
	}
}

// passQueue bounds the sessions waiting for a worker: when the detectors
// fall behind, the load waits for them instead of piling sessions up.
const passQueue = 256

// startPass starts the pass's workers, which give what they find to sink.
func startPass(pl plan, skip map[string]bool, sink *collector) *pass {
	p := &pass{pl: pl, sink: sink, skip: skip, open: map[string]*Session{}, seen: map[string]bool{},
		jobs: make(chan passJob, passQueue)}
	for range runtime.GOMAXPROCS(0) {
		p.wg.Go(func() {
			for j := range p.jobs {
				var res fileResult
				res.findings = pl.session(j.s, nil, &res.live)
				j.t.done(&res, sink)
			}
		})
	}
	return p
}

// tally returns the tally of file, starting it when file is new.
func (p *pass) tally(file string) *fileTally {
	if p.file == nil || p.file.name != file {
		p.file = &fileTally{name: file, pending: 1}
	}
	return p.file
}

// judge hands s to a worker.
func (p *pass) judge(s *Session) {
	t := p.tally(s.File)
	t.mu.Lock()
	t.pending++
	t.mu.Unlock()
	p.jobs <- passJob{s: s, t: t}
}

// Events implements metrics.Observer.
func (p *pass) Events(file string, evs []metrics.Located) {
	p.tally(file)
	for _, e := range evs {
		if p.skip[string(e.Type())] {
			continue
		}
		// A file holds a session's events in a block: the session of
		// the event before is looked up first.
		s := p.last
		if s == nil || s.ID != e.Session {
			if s = p.open[e.Session]; s == nil {
				s = &Session{ID: e.Session, File: file}
				p.open[e.Session] = s
				p.order = append(p.order, e.Session)
			}
			p.last = s
		}
		s.Events = append(s.Events, Located(e))
		if e.Type() == trajectory.TypeSessionEnd {
			p.judge(s)
			delete(p.open, e.Session)
			p.last = nil
		}
	}
}

// EndFile implements metrics.Observer: the sessions of file that did not
// end are judged as they are, as Run does.
func (p *pass) EndFile(file string) {
	t := p.tally(file)
	for _, id := range p.order {
		if s := p.open[id]; s != nil {
			p.judge(s)
			delete(p.open, id)
		}
	}
	p.order = p.order[:0]
	p.last = nil
	p.seen[file] = true
	p.file = nil
	t.done(nil, p.sink)
}

// wait lets the workers finish and returns the files observed, a file
// without a session included; what was found in them is the sink's.
func (p *pass) wait() map[string]bool {
	close(p.jobs)
	p.wg.Wait()
	return p.seen
}

// DetectLiveness is Detect that also returns the liveness table of what db
// then holds (as ComputeLiveness would), built in the same pass when
// dead_defense is among ds, as it is in the whole catalog: a caller that
// needs both, such as retrace report, reads every file once instead of
// twice. Without dead_defense it runs Detect, then ComputeLiveness.
func DetectLiveness(ctx context.Context, db *metrics.DB, paths []string, ds []Detector, opts Options) (Report, Liveness, metrics.LoadReport, error) {
	pl, err := newPlan(ds, opts)
	if err != nil {
		return Report{Findings: []Finding{}}, Liveness{}, metrics.LoadReport{}, err
	}
	if pl.dead == nil {
		rep, lrep, err := Detect(ctx, db, paths, ds, opts)
		if err != nil {
			return rep, Liveness{}, lrep, err
		}
		lv, err := ComputeLiveness(ctx, db)
		return rep, lv, lrep, err
	}
	rep := Report{Findings: []Finding{}, Detectors: pl.infos()}
	lrep, rr, err := pl.loadAndRead(ctx, db, paths)
	if err != nil {
		return rep, Liveness{}, lrep, err
	}
	rep.Findings, rep.Unread = append(rep.Findings, rr.allFindings()...), rr.unread
	if err := pl.finish(ctx, db, &rep, rr.lives()); err != nil {
		return rep, Liveness{}, lrep, err
	}
	return rep, tabulate(rr.lives()), lrep, nil
}
