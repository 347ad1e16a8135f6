package metrics

import (
	"context"
	"database/sql"
	"sync"

	"github.com/retrace-dev/retrace/trajectory"
)

// Located is an event a load keeps and its line in the file it came from.
type Located struct {
	trajectory.Event
	Line int
}

// An Observer sees the events a load keeps, as the load's check decodes
// them, so that a caller who needs the events themselves (the detectors
// over the event stream) does not read and decode every file a second time.
//
// The calls come from one goroutine at a time, in the load's order: the
// trajectory files in the order LoadReport.Files lists them, each file's
// events in line order, a file the check splits into parts included. The
// events are exactly those the load keeps, in strict and lenient mode alike:
// no skipped line, no dropped event, nothing of a file left out. Parquet
// inputs are not observed. When the load returns an error, what was
// observed is not loaded and is to be thrown away.
//
// While an Observer call runs, the load holds the events of a few parts
// of the input at most (about windowBytes of input; a stream, stdin or a
// named pipe, whose size is not known beforehand, is held whole until it
// is read through): a slow Observer slows the load down rather than
// letting the events pile up.
type Observer interface {
	// Events hands over the next kept events of one file (as the file
	// column names it, trajectory.Name), never an empty slice. The slice
	// and the events are the Observer's to keep.
	Events(file string, events []Located)
	// EndFile says that file, which may have had no Events call, has no
	// more events.
	EndFile(file string)
}

// LoadObserved is Load, with obs seeing every event the load keeps while
// the load checks the files; a nil obs is Load.
func (db *DB) LoadObserved(ctx context.Context, obs Observer, paths ...string) (LoadReport, error) {
	return db.load(ctx, obs, paths)
}

// feed hands the checked parts to an Observer in the load's order,
// keeping of each event only what the load keeps.
//
// A part keeps the events whose seq is above the seqs of their session
// before them in the part. Most files need nothing more; a lenient load
// checks again whole a file whose seqs repeat those of an earlier part or
// file (see checkAll), and keeps of it the events whose seq is above every
// seq kept before them, in that file and the files before it. That is a
// subset of what the file's parts kept, and feed gets it by filtering the
// parts' events through last, the highest seq kept of every session so
// far, without waiting for the second check. In a file that is not checked
// again the filter keeps everything: its seqs already increase.
//
// A session whose first event in a file does not come after the seqs
// earlier files hold of it is a duplicate, which the load keeps from the
// first file only (see merge): feed leaves out its events in every later
// file, as the file's second check does. The files a store holds and the
// load does not read again come before every file of the load (see
// priorSessions): newFeed seeds last with the sessions they hold, so that
// a copy of a session the store holds from another file is left out too,
// and an Observer never sees a session the load does not keep.
type feed struct {
	obs   Observer
	files []string
	parts []part
	last  map[string]int64
	// owner is the file each session was first kept from; dupes are the
	// sessions left out of the file being fed, dupesOf.
	owner   map[string]int
	dupes   map[string]bool
	inFile  map[string]bool
	dupesOf int
}

// storeOwner is the owner (see feed) of the sessions a store held before
// the load: no file of it.
const storeOwner = -1

// newFeed returns the feed of parts of files to obs, the sessions in
// prior held before them.
func newFeed(obs Observer, files []string, parts []part, prior map[string]priorSession) *feed {
	f := &feed{obs: obs, files: files, parts: parts, last: make(map[string]int64, len(prior)), owner: make(map[string]int, len(prior))}
	for s, p := range prior {
		f.last[s], f.owner[s] = p.max, storeOwner
	}
	return f
}

// storeSessions returns every session a store holds from the files a load
// keeps unchanged (others, see otherFiles), with its highest seq there:
// those an observed load feeds (see newFeed). It asks once for all of
// them, as a feed cannot wait for the merge that asks for the sessions
// each part holds (priorSessions): a few tens of bytes a session. A store
// holding rows from Parquet (scan), whose files store_sessions does not
// track, is asked through its rows.
func storeSessions(ctx context.Context, tx *sql.Tx, others string, scan bool) (map[string]priorSession, error) {
	q := "SELECT session, max(max_seq), min(file) FROM store_sessions WHERE file " + others + " GROUP BY session"
	if scan {
		q = "SELECT session, max(seq), min(file) FROM raw_events WHERE file IS NOT NULL AND file " + others + " GROUP BY session"
	}
	return queryPriorSessions(ctx, tx, q)
}

// deliver hands over the events part i kept, and ends the part's file
// when it is its last part.
func (f *feed) deliver(i int, res *partResult) {
	p := f.parts[i]
	name := trajectory.Name(f.files[p.file])
	kept := res.events[:0]
	if f.dupes == nil || f.dupesOf != p.file {
		f.dupes, f.inFile, f.dupesOf = map[string]bool{}, map[string]bool{}, p.file
	}
	// run is the session of the last event kept and runSeq its seq, not
	// yet written to f.last: the next events of a run (a file holds a
	// session's events in a block) are judged without a map.
	run, runSeq, inRun := "", int64(0), false
	for _, e := range res.events {
		if inRun && e.Session == run {
			// Kept before in this file: no copy, only seqs to follow.
			if e.Seq > runSeq {
				runSeq = e.Seq
				kept = append(kept, e)
			}
			continue
		}
		if inRun {
			f.last[run], inRun = runSeq, false
		}
		if f.dupes[e.Session] {
			continue
		}
		m, ok := f.last[e.Session]
		if o, owned := f.owner[e.Session]; owned && o != p.file && !f.inFile[e.Session] && ok && e.Seq <= m {
			f.dupes[e.Session] = true
			continue
		}
		if !ok {
			f.owner[e.Session] = p.file
		}
		if ok && e.Seq <= m {
			continue
		}
		f.inFile[e.Session] = true
		f.last[e.Session] = e.Seq
		kept = append(kept, e)
		run, runSeq, inRun = e.Session, e.Seq, true
	}
	if inRun {
		f.last[run] = runSeq
	}
	res.events = nil
	if len(kept) > 0 {
		f.obs.Events(name, kept)
	}
	if i+1 == len(f.parts) || f.parts[i+1].file != p.file {
		f.obs.EndFile(name)
	}
}

// windowBytes bounds the input bytes of the parts a load that feeds an
// Observer has checked or is checking and not yet handed over; a part
// larger than that is let in alone. A few times the size of a part, it
// lets the workers run ahead of a feed that waits for a slow part, while
// the events held stay within a small multiple of it.
var windowBytes int64 = 32 << 20

// window counts the parts between being given to a worker and being
// handed to the Observer.
type window struct {
	ctx  context.Context
	mu   sync.Mutex
	cond *sync.Cond
	held int64 // input bytes of the parts in the window
	n    int   // parts in the window
	stop func() bool
}

func newWindow(ctx context.Context) *window {
	w := &window{ctx: ctx}
	w.cond = sync.NewCond(&w.mu)
	// A canceled load must not wait for a place.
	w.stop = context.AfterFunc(ctx, func() {
		w.mu.Lock()
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	return w
}

// acquire waits for a place for a part of size bytes (0 for a stream) and
// reports whether it got one; it does not when the load is canceled.
func (w *window) acquire(size int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.n > 0 && w.held+size > windowBytes && w.ctx.Err() == nil {
		w.cond.Wait()
	}
	if w.ctx.Err() != nil {
		return false
	}
	w.held += size
	w.n++
	return true
}

// release frees the place of a part of size bytes.
func (w *window) release(size int64) {
	w.mu.Lock()
	w.held -= size
	w.n--
	w.mu.Unlock()
	w.cond.Broadcast()
}
