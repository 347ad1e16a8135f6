package synth

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// DefaultStart is where a corpus starts when Options.Start is zero: a fixed
// date, so that a corpus is reproducible from its seed alone.
var DefaultStart = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)

// DefaultDays is how many days a corpus spans when Options.Days is zero.
const DefaultDays = 7

// ErrInvalidOptions is wrapped by the errors for options that describe no
// corpus (no sessions, a negative span, an index out of range).
var ErrInvalidOptions = errors.New("invalid synth options")

// ErrDirHasRuns is wrapped by Write's error when the directory already holds
// trajectory files and Options.Overwrite is false: mixing a synthetic corpus
// into real runs, or two corpora into one, is rarely what anyone wants.
var ErrDirHasRuns = errors.New("the directory already holds trajectory files")

// Options describe a corpus. The same Options give the same bytes.
type Options struct {
	// Sessions is how many sessions (files) to write; at least 1.
	Sessions int
	// Seed selects the corpus.
	Seed int64
	// Start is the earliest session start; zero means DefaultStart.
	Start time.Time
	// Days is how many days the session starts spread over; zero means
	// DefaultDays.
	Days int
	// Workers is how many sessions are generated at once; zero means
	// GOMAXPROCS. It never changes the output.
	Workers int
	// Overwrite lets Write write into a directory that already holds
	// trajectory files; files of the same name are replaced, others kept.
	Overwrite bool
	// Faults are the failure modes to plant, by detector id (see
	// Faults): every second session carries one, going round the list,
	// and Write records where each went in FaultsFile. Empty plants
	// nothing.
	Faults []string
	// Shifts change the generator in one planted way each, for
	// before/after tests (see Shift). The same Seed with and without
	// shifts gives the same sessions but for the shifted quantities: the
	// shifts draw from a PRNG stream of their own.
	Shifts []Shift
	// Turns, when above 0, is every session's planned length in turns,
	// in place of the drawn one (which is still drawn, so that the rest
	// of a session draws the same numbers); the max_turns limit is
	// raised to it. A session may still end sooner: a planned abort,
	// model error or stuck loop, or a token budget.
	Turns int

	// shiftByTool is Shifts merged by tool, set by normalized.
	shiftByTool map[string]Shift
}

func (o Options) normalized() (Options, error) {
	if o.Sessions < 1 {
		return o, fmt.Errorf("%w: sessions is %d, want at least 1", ErrInvalidOptions, o.Sessions)
	}
	if o.Days < 0 {
		return o, fmt.Errorf("%w: days is %d, want 0 (the default, %d) or more", ErrInvalidOptions, o.Days, DefaultDays)
	}
	if o.Workers < 0 {
		return o, fmt.Errorf("%w: workers is %d, want 0 (one per CPU) or more", ErrInvalidOptions, o.Workers)
	}
	if o.Turns < 0 {
		return o, fmt.Errorf("%w: turns is %d, want 0 (drawn per session) or more", ErrInvalidOptions, o.Turns)
	}
	if err := checkFaults(o.Faults); err != nil {
		return o, err
	}
	byTool, err := checkShifts(o.Shifts)
	if err != nil {
		return o, err
	}
	o.shiftByTool = byTool
	if o.Start.IsZero() {
		o.Start = DefaultStart
	}
	o.Start = o.Start.UTC()
	if o.Days == 0 {
		o.Days = DefaultDays
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return o, nil
}

// Report summarises a written corpus.
type Report struct {
	// Dir is the directory the files were written to.
	Dir string
	// Sessions is the number of files written, one session each.
	Sessions int
	// Events, ToolCalls and ToolFailures count over all sessions.
	Events       int64
	ToolCalls    int64
	ToolFailures int64
	// PlantedFailures counts the calls a Shift turned into failures (they
	// are in ToolFailures too).
	PlantedFailures int64
	// Bytes is the total size of the files.
	Bytes int64
	// First and Last are the earliest and latest session starts.
	First, Last time.Time
	// Faults are the planted faults, in session order; Write also
	// writes them to FaultsFile.
	Faults []Fault
}

// SessionInfo describes one generated session.
type SessionInfo struct {
	// ID is the session id; the file is named ID + ".jsonl".
	ID string
	// Events counts the lines written.
	Events       int
	ToolCalls    int
	ToolFailures int
	// PlantedFailures counts the calls a Shift turned into failures.
	PlantedFailures int
	// Bytes is the number of bytes written.
	Bytes int
	// Start and End are the timestamps of session_start and session_end.
	Start, End time.Time
	// Faults are the faults planted in the session.
	Faults []Fault
}

// Write generates opts.Sessions sessions and writes each to
// dir/<session-id>.jsonl, creating dir if needed. Sessions are generated in
// parallel; the files do not depend on the number of workers. On
// cancellation it stops early and returns ctx's error with what was written.
func Write(ctx context.Context, dir string, opts Options) (Report, error) {
	opts, err := opts.normalized()
	rep := Report{Dir: dir}
	if err != nil {
		return rep, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rep, fmt.Errorf("create the output directory: %w", err)
	}
	if !opts.Overwrite {
		if n, err := countRuns(dir); err != nil {
			return rep, err
		} else if n > 0 {
			return rep, fmt.Errorf("%s: %w (%d *%s files)", dir, ErrDirHasRuns, n, trajectory.Ext)
		}
	}

	var (
		mu       sync.Mutex
		firstErr error
		next     = make(chan int)
		wg       sync.WaitGroup
	)
	record := func(info SessionInfo, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		rep.Sessions++
		rep.Events += int64(info.Events)
		rep.ToolCalls += int64(info.ToolCalls)
		rep.ToolFailures += int64(info.ToolFailures)
		rep.PlantedFailures += int64(info.PlantedFailures)
		rep.Bytes += int64(info.Bytes)
		rep.Faults = append(rep.Faults, info.Faults...)
		if rep.First.IsZero() || info.Start.Before(rep.First) {
			rep.First = info.Start
		}
		if info.Start.After(rep.Last) {
			rep.Last = info.Start
		}
	}
	for range min(opts.Workers, opts.Sessions) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for i := range next {
				var info SessionInfo
				var err error
				buf, info, err = appendSession(buf[:0], opts, i)
				if err == nil {
					path := filepath.Join(dir, info.ID+trajectory.Ext)
					if werr := os.WriteFile(path, buf, 0o644); werr != nil {
						err = fmt.Errorf("write session %d: %w", i, werr)
					}
				}
				record(info, err)
			}
		}()
	}
feed:
	for i := range opts.Sessions {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			break
		}
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return rep, firstErr
	}
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("synth stopped after %d of %d sessions: %w", rep.Sessions, opts.Sessions, err)
	}
	if len(opts.Faults) == 0 {
		return rep, nil
	}
	return rep, writeFaults(dir, opts, &rep)
}

// writeFaults sorts the planted faults into session order, checks that
// every requested fault was planted, and writes FaultsFile.
func writeFaults(dir string, opts Options, rep *Report) error {
	slices.SortFunc(rep.Faults, func(a, b Fault) int {
		// Two faults can name one line (two calls of one reply); the
		// detector and the call break the tie, so the file does not depend
		// on which worker finished first.
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Detector, b.Detector), cmp.Compare(a.ToolUseID, b.ToolUseID))
	})
	var buf []byte
	planted := map[string]bool{}
	for _, f := range rep.Faults {
		planted[f.Detector] = true
		b, _ := json.Marshal(f) // a Fault always marshals
		buf = append(append(buf, b...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, FaultsFile), buf, 0o644); err != nil {
		return fmt.Errorf("write the planted faults: %w", err)
	}
	for _, f := range opts.Faults {
		if !planted[f] {
			return fmt.Errorf("%w: %s found no place in %d sessions; write more sessions", ErrFaultNotPlanted, f, opts.Sessions)
		}
	}
	return nil
}

// countRuns counts the trajectory files directly in dir.
func countRuns(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("read the output directory: %w", err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), trajectory.Ext) {
			n++
		}
	}
	return n, nil
}

// WriteSession writes session index of the corpus opts describes to w, the
// same bytes Write puts in that session's file.
func WriteSession(w io.Writer, opts Options, index int) (SessionInfo, error) {
	opts, err := opts.normalized()
	if err != nil {
		return SessionInfo{}, err
	}
	if index < 0 || index >= opts.Sessions {
		return SessionInfo{}, fmt.Errorf("%w: session index %d is outside 0..%d", ErrInvalidOptions, index, opts.Sessions-1)
	}
	buf, info, err := appendSession(nil, opts, index)
	if err != nil {
		return info, err
	}
	if _, err := w.Write(buf); err != nil {
		return info, fmt.Errorf("write session %s: %w", info.ID, err)
	}
	return info, nil
}

// appendSession generates session i of the corpus and appends its lines to
// buf, with its fault planted when it is to carry one. A session with no
// place for its fault is written clean, the same bytes as without
// Options.Faults.
func appendSession(buf []byte, opts Options, i int) ([]byte, SessionInfo, error) {
	fault := faultFor(opts, i)
	out, info, err := generate(buf, opts, i, fault)
	if err != nil || fault == "" {
		return out, info, err
	}
	planted, faults, err := plant(out, fault)
	if err != nil {
		return out, info, fmt.Errorf("plant %s in session %d (%s): %w", fault, i, info.ID, err)
	}
	if len(faults) == 0 {
		if fault == "denial_loop" {
			// It was generated to loop, and did not: generate it clean.
			return generate(out[:0], opts, i, "")
		}
		return out, info, nil
	}
	info.Faults, info.Bytes, info.Events = faults, len(planted), bytes.Count(planted, []byte("\n"))
	return planted, info, nil
}

// generate generates session i of the corpus into buf. Each session draws
// from its own source seeded by (seed, i), which is what keeps the corpus
// independent of the worker count.
func generate(buf []byte, opts Options, i int, fault string) ([]byte, SessionInfo, error) {
	r := rand.New(rand.NewPCG(uint64(opts.Seed), uint64(i)))
	start := sessionStart(opts, i, r)
	g := newSession(r, sessionID(start, r), start, buf)
	g.plant = fault
	g.fixedTurns = opts.Turns
	if len(opts.shiftByTool) > 0 {
		g.shifts, g.shiftR = opts.shiftByTool, newShiftRand(opts.Seed, i)
	}
	g.run()
	info := SessionInfo{ID: g.id, Events: int(g.seq), ToolCalls: g.calls, ToolFailures: g.failures, PlantedFailures: g.planted,
		Bytes: len(g.buf), Start: start, End: g.now}
	if g.err != nil {
		return g.buf, info, fmt.Errorf("generate session %d (%s): %w", i, g.id, g.err)
	}
	return g.buf, info, nil
}

// sessionStart gives session i a start within its own slot of the span,
// so that starts, and the ids made from them, increase with i.
func sessionStart(opts Options, i int, r *rand.Rand) time.Time {
	span := time.Duration(opts.Days) * 24 * time.Hour
	slot := span / time.Duration(opts.Sessions)
	offset := time.Duration(i)*slot + time.Duration(r.Int64N(int64(max(slot, time.Millisecond))))
	return opts.Start.Add(offset).Truncate(time.Millisecond)
}

// sessionID is a recorder session id with the 8 hex digits drawn from the
// session's source.
func sessionID(start time.Time, r *rand.Rand) string {
	v := r.Uint32()
	return recorder.SessionID(start, [4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
