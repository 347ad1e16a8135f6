package detectors

import (
	"context"
	"fmt"
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
// Report.Unread lists what only the SQL detectors saw: Parquet inputs, and
// files loaded into a kept database before. Options.Progress is not
// called: the Go detectors keep pace with the load's check, which
// metrics.Options.Progress follows.
//
// Memory stays bounded: a session's events are held until its
// session_end (or the end of its file) and handed to the detectors then,
// and the load holds the events of a few parts of its input at most.
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
	var skip map[string]bool
	if filterTypes {
		skip = skipTypes(ds)
	}
	p := startPass(pl, skip)
	lrep, err := db.LoadObserved(ctx, p, paths...)
	shares := p.wait()
	if err != nil {
		return rep, lrep, err
	}
	live := make([]fileLiveness, len(shares))
	for i, sh := range shares {
		rep.Findings = append(rep.Findings, sh.findings...)
		live[i] = sh.live
	}
	files, err := db.Query(ctx, "SELECT DISTINCT file FROM raw_events WHERE file IS NOT NULL ORDER BY file")
	if err != nil {
		return rep, lrep, fmt.Errorf("detect: %w", err)
	}
	for _, r := range files.Rows {
		if f := text(r[0]); !p.seen[f] {
			rep.Unread = append(rep.Unread, f)
		}
	}
	return rep, lrep, pl.finish(ctx, db, &rep, live)
}

// LoadLiveness loads paths into db and builds the liveness table of what
// it loaded in the same pass, as Detect does for dead_defense; files
// loaded before, and Parquet inputs, are not in the table.
func LoadLiveness(ctx context.Context, db *metrics.DB, paths []string) (Liveness, metrics.LoadReport, error) {
	p := startPass(plan{dead: &deadDefense{}}, skipTypes([]Detector{&deadDefense{}}))
	lrep, err := db.LoadObserved(ctx, p, paths...)
	shares := p.wait()
	if err != nil {
		return Liveness{}, lrep, err
	}
	live := make([]fileLiveness, len(shares))
	for i, sh := range shares {
		live[i] = sh.live
	}
	return tabulate(live), lrep, nil
}

// pass is the metrics.Observer of Detect: it gathers each file's events
// into sessions and hands every finished session to a pool of workers
// that run the plan's Go detectors over it. Sessions do not span files,
// and a Go detector is a pure function of a session, so the sessions can
// be judged in any order on any core; findings are sorted afterwards and
// the liveness table sorts its evidence.
type pass struct {
	pl plan
	// skip are the event types no detector of the plan reads: they are
	// not kept, as Run does not decode them.
	skip map[string]bool
	// open are the sessions of the file being handed over that have not
	// ended, and order their ids in the order they began.
	open  map[string]*Session
	order []string
	// seen are the files observed.
	seen   map[string]bool
	jobs   chan *Session
	wg     sync.WaitGroup
	shares []share
}

// share is what one worker of a pass found.
type share struct {
	findings []Finding
	live     fileLiveness
}

// passQueue bounds the sessions waiting for a worker: when the detectors
// fall behind, the load waits for them instead of piling sessions up.
const passQueue = 256

func startPass(pl plan, skip map[string]bool) *pass {
	workers := runtime.GOMAXPROCS(0)
	p := &pass{pl: pl, skip: skip, open: map[string]*Session{}, seen: map[string]bool{},
		jobs: make(chan *Session, passQueue), shares: make([]share, workers)}
	for w := range workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			sh := &p.shares[w]
			for s := range p.jobs {
				sh.findings = pl.session(s, sh.findings, &sh.live)
			}
		}()
	}
	return p
}

// Events implements metrics.Observer.
func (p *pass) Events(file string, evs []metrics.Located) {
	for _, e := range evs {
		if p.skip[string(e.Type())] {
			continue
		}
		s := p.open[e.Session]
		if s == nil {
			s = &Session{ID: e.Session, File: file}
			p.open[e.Session] = s
			p.order = append(p.order, e.Session)
		}
		s.Events = append(s.Events, Located(e))
		if e.Type() == trajectory.TypeSessionEnd {
			p.jobs <- s
			delete(p.open, e.Session)
		}
	}
}

// EndFile implements metrics.Observer: the sessions of file that did not
// end are judged as they are, as Run does.
func (p *pass) EndFile(file string) {
	for _, id := range p.order {
		if s := p.open[id]; s != nil {
			p.jobs <- s
			delete(p.open, id)
		}
	}
	p.order = p.order[:0]
	p.seen[file] = true
}

// wait lets the workers finish and returns what they found.
func (p *pass) wait() []share {
	close(p.jobs)
	p.wg.Wait()
	return p.shares
}
