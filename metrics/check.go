package metrics

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/retrace-dev/retrace/trajectory"
)

// Files larger than splitAbove are checked in parts of about partSize
// bytes, cut after a newline, so that one big file uses every core too.
// Tests make them small.
var (
	splitAbove int64 = 16 << 20
	partSize   int64 = 8 << 20
)

// bom is the UTF-8 byte order mark.
const bom = "\xef\xbb\xbf"

// part is a range of whole lines of one file for one check job, or a
// whole stream.
type part struct {
	file     int // index in the files being loaded
	off, len int64
	// lines is the number of lines of the file before off, so that the
	// lines staged for DuckDB carry their number in the file.
	lines int
	// stream is set for an input that is not a regular file (stdin, a
	// named pipe, a device): it is read once, front to back, whatever its
	// size says.
	stream bool
	// seed has, when a lenient load checks a file again, the highest seq
	// of each of its sessions in the files before it: the events at or
	// below it are copies, and are dropped.
	seed map[string]int64
	// dupes are, when a load checks a file again, the sessions whose
	// events it leaves out whole: copies of a session an earlier file
	// holds (see dupState).
	dupes map[string]bool
	// resume is set on the parts of a file a store read before up to
	// off and that only grew since: the lines before off are loaded.
	resume bool
}

// partResult is what checking one part found. Its line numbers count from
// the part's first line until merge makes them the file's.
type partResult struct {
	report FileReport
	lines  int // newlines in the part
	err    error
	// seqs has, for each session the part loaded events of, the seq and
	// line of its first event and its highest seq, for merge to check
	// across parts.
	seqs sessionSeqs
	// events are the events the part kept, when an Observer is to see
	// them; the feed hands them over and clears them.
	events []Located
}

// seqRange is what a part saw of one session's seqs.
type seqRange struct {
	session    string
	first, max int64
	firstLine  int
}

// sessionSeqs are the seqRanges of a part's sessions, in the order they
// first appear. Most parts hold one session, so a slice is enough and
// keeps a load of many files small; a map indexes the slice only once a
// part holds many.
type sessionSeqs struct {
	ranges []seqRange
	index  map[string]int
}

// indexAbove is the number of sessions past which sessionSeqs keeps a map.
const indexAbove = 8

// find returns the index of session's range, or -1.
func (s *sessionSeqs) find(session string) int {
	if s.index != nil {
		if i, ok := s.index[session]; ok {
			return i
		}
		return -1
	}
	for i := range s.ranges {
		if s.ranges[i].session == session {
			return i
		}
	}
	return -1
}

// add appends r and returns its index.
func (s *sessionSeqs) add(r seqRange) int {
	s.ranges = append(s.ranges, r)
	switch n := len(s.ranges); {
	case n == indexAbove+1:
		s.index = make(map[string]int, n)
		for i, r := range s.ranges {
			s.index[r.session] = i
		}
	case n > indexAbove+1:
		s.index[r.session] = n - 1
	}
	return len(s.ranges) - 1
}

// checkAll checks files on every core and stages the lines to load into
// chunk files under tmp, which an inserter reads into DuckDB within tx as
// soon as each is written, and deletes (see inserter); it reports progress
// in bytes. It returns the reports, and in strict mode the first problem
// of every bad file; a refused load rolls tx back, and with it every row
// inserted. obs, when not nil, sees the events the load keeps as the parts
// are checked.
//
// The rows go into the tables into names (typeTable, or a store's
// addedTable).
func (db *DB) checkAll(ctx context.Context, tx *sql.Tx, files []string, plan tracked, tmp string, obs Observer, dups *dupState, disk *diskUse, into func(trajectory.EventType) string) ([]FileReport, []error, error) {
	parts, total := split(files, plan)
	results, err := db.checkParts(ctx, tx, files, parts, total, tmp, "w", obs, dups.prior, disk, into)
	if err != nil {
		return nil, nil, err
	}
	reports, problems, redo, seeds, err := db.merge(files, parts, results, dups)
	if err != nil || len(redo) == 0 {
		return reports, problems, err
	}
	// A lenient check found a seq in one part that repeats one of an
	// earlier part of the same file, or of an earlier file holding the same
	// session. The part dropped only the repeats it could see, so the file
	// is checked again whole, knowing the seqs before it, and the rows of
	// its first check are deleted. This is rare: it takes a big file with a
	// repeated line where a part begins, or a copy of a session's file.
	// The Observer has seen what this check keeps already (see feed).
	again := make([]part, len(redo))
	names := make([]string, len(redo))
	var streams []error
	for i, f := range redo {
		var size int64
		for _, p := range parts {
			if p.file == f && p.stream {
				streams = append(streams, &trajectory.FileError{File: trajectory.Name(files[f]), Err: fmt.Errorf(
					"%w: it repeats seqs of a session in a file before it, and a stream cannot be read again to drop them; save it to a file, or leave it or the other copy out", ErrSeq)})
				break
			}
			if p.file == f {
				size = max(size, p.off+p.len)
			}
		}
		again[i] = part{file: f, len: size, seed: seeds[f], dupes: dups.byFile[f]}
		names[i] = trajectory.Name(files[f])
	}
	if len(streams) > 0 {
		return nil, nil, &LoadError{Problems: streams}
	}
	if err := deleteFiles(ctx, tx, names, into); err != nil {
		return nil, nil, err
	}
	results, err = db.checkParts(ctx, tx, files, again, 0, tmp, "again", nil, nil, disk, into)
	if err != nil {
		return nil, nil, err
	}
	whole, _, _, _, err := db.merge(files, again, results, nil)
	if err != nil {
		return nil, nil, err
	}
	for _, f := range redo {
		reports[f] = whole[f]
	}
	return reports, problems, nil
}

// checkParts checks parts on every core, staging into chunk files named
// after name that an inserter reads into DuckDB within tx as they are
// written, and returns the results of the parts. When obs is not nil the
// parts' events are handed to it in order as soon as every part before
// them is checked, and the parts between being given to a worker and being
// handed over hold windowBytes of input at most (or one part), so a load
// that feeds an Observer holds the events of a few parts, never those of
// the whole input.
func (db *DB) checkParts(ctx context.Context, tx *sql.Tx, files []string, parts []part, total int64, tmp, name string, obs Observer, prior map[string]priorSession, disk *diskUse, into func(trajectory.EventType) string) ([]partResult, error) {
	var (
		mu       sync.Mutex
		done     int64
		results  = make([]partResult, len(parts))
		stageErr error
		// open are the chunks the workers had open when they ended.
		open []chunk
	)
	workers := min(runtime.GOMAXPROCS(0), max(len(parts), 1))
	// A part is given to a worker only once it has a place in the window,
	// and leaves it when the feed has handed it over. Parts are given out
	// in order, so the first part not handed over is always being checked
	// or checked, and the feed never waits for a part that waits for a
	// place.
	var win *window
	checked := make(chan int, len(parts))
	fed := make(chan struct{})
	if obs != nil {
		win = newWindow(ctx)
		defer win.stop()
		go func() {
			defer close(fed)
			f := newFeed(obs, files, parts, prior)
			ready := make([]bool, len(parts))
			first := 0
			for i := range checked {
				ready[i] = true
				for ; first < len(parts) && ready[first]; first++ {
					f.deliver(first, &results[first])
					win.release(parts[first].len)
				}
			}
		}()
	} else {
		close(fed)
	}
	defer lessGC()()
	ins := db.startInserter(ctx, tx, disk, into)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			st := &stage{dir: tmp, name: fmt.Sprintf("%s%d", name, w), ins: ins, disk: disk}
			for i := range next {
				res := db.checkPart(files[parts[i].file], parts[i], st, obs != nil)
				mu.Lock()
				results[i] = res
				done += parts[i].len
				db.progress("check", done, total, disk)
				mu.Unlock()
				checked <- i
			}
			last, err := st.close()
			mu.Lock()
			stageErr = errors.Join(stageErr, err)
			open = append(open, last...)
			mu.Unlock()
		})
	}
	for i := range parts {
		if win != nil && !win.acquire(parts[i].len) || ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	ins.putTogether(open)
	close(checked)
	<-fed
	insErr := ins.finish()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if stageErr != nil {
		return nil, fmt.Errorf("load: %w", stageErr)
	}
	if insErr != nil {
		return nil, insErr
	}
	return results, nil
}

// checkGC is the garbage collector's percent while a load checks lines.
// The check allocates a payload and its strings per event and drops them
// at once, over a live heap of a few megabytes: at the default of 100 the
// collector runs every few megabytes allocated, hundreds of times a load.
// At 400 decoding 1M events took 2.0-2.1 CPU-s against 2.5
// (BenchmarkColdPhases), for a heap of a few tens of megabytes. A load
// that feeds an Observer (detect) holds the events of a few parts and the
// sessions its detectors judge, a live heap of 10-35 MB at 1M events: at
// 400 it collected 40 times instead of 164, and detect --no-cache took
// about 0.5 CPU-s less at the same peak RSS; checkMemory bounds it.
const checkGC = 400

// checkMemory is the Go heap's soft limit (debug.SetMemoryLimit) while a
// load checks lines, unless the process set a lower one: at checkGC a
// heap whose live part is some 50 MB (the reports of 100k files, at 10M
// events) grows to 250-270 MB between collections, which DuckDB's memory
// during the load comes on top of. Under the limit the collector runs
// more often only when the live heap is that large; at 1M events (10k
// files) the heap stays under it and nothing changes.
const checkMemory = 160 << 20

// gcLoads counts the loads checking under checkGC, so that the percent
// and the soft limit the process had are put back when the last of them
// ends.
var gcLoads struct {
	sync.Mutex
	n        int
	was      int
	wasLimit int64
}

// lessGC raises the garbage collector's percent to checkGC, unless it is
// higher already or off, lowers the Go heap's soft limit to checkMemory,
// unless it is lower already, and returns the function that puts both
// back.
func lessGC() func() {
	gcLoads.Lock()
	defer gcLoads.Unlock()
	if gcLoads.n == 0 {
		gcLoads.was = debug.SetGCPercent(checkGC)
		if gcLoads.was < 0 || gcLoads.was > checkGC {
			debug.SetGCPercent(gcLoads.was)
		}
		gcLoads.wasLimit = debug.SetMemoryLimit(-1)
		debug.SetMemoryLimit(min(gcLoads.wasLimit, checkMemory))
	}
	gcLoads.n++
	return func() {
		gcLoads.Lock()
		defer gcLoads.Unlock()
		if gcLoads.n--; gcLoads.n == 0 {
			debug.SetGCPercent(gcLoads.was)
			debug.SetMemoryLimit(gcLoads.wasLimit)
			// The heap the check grew is returned to the system now,
			// not over minutes, before DuckDB's work after the check
			// (the commit, the queries) takes memory of its own.
			debug.FreeOSMemory()
		}
	}
}

// split cuts files into parts and returns them with the total size of the
// regular files. Only a regular file's size is known before it is read:
// anything else is one stream part, and so is a file that cannot be
// examined, whose error checkPart reports when it fails to open it. A
// regular file is read up to the size its stamp in plan says, so that
// what a store remembers of it is what was read while it grows, and a
// file plan resumes from where a store stopped.
func split(files []string, plan tracked) ([]part, int64) {
	var parts []part
	var total int64
	for i, f := range files {
		info, err := os.Stat(f)
		if f == trajectory.Stdin || err != nil || !info.Mode().IsRegular() {
			parts = append(parts, part{file: i, stream: true})
			continue
		}
		size := info.Size()
		name := trajectory.Name(f)
		if s, ok := plan.stamps[name]; ok {
			size = s.size
		}
		var start int64
		var startLines int
		m, resume := plan.resume[name]
		if resume {
			start, startLines = m.stop, int(m.lines)
		}
		total += size - start
		if size-start <= splitAbove {
			parts = append(parts, part{file: i, off: start, len: size - start, lines: startLines, resume: resume})
			continue
		}
		cuts, lines, err := cutPoints(f, start, size)
		if err != nil {
			// Checked whole, the file's read error is reported as one.
			parts = append(parts, part{file: i, off: start, len: size - start, lines: startLines, resume: resume})
			continue
		}
		for k, off := range cuts {
			end := size
			if k+1 < len(cuts) {
				end = cuts[k+1]
			}
			parts = append(parts, part{file: i, off: off, len: end - off, lines: startLines + lines[k], resume: resume})
		}
	}
	return parts, total
}

// cutPoints returns the offsets the parts of a file's bytes from start to
// size start at: start, then just after the first newline at or past
// every partSize bytes, and the number of lines between start and each.
// Counting the lines reads the whole file once more, at memory speed; it
// is what lets every event loaded from a part carry its line in the file.
func cutPoints(file string, start, size int64) ([]int64, []int, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	cuts := []int64{start}
	buf := make([]byte, 64<<10)
	for at := start + partSize; at < size; {
		n, err := fh.ReadAt(buf, at)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			// A part's Decoder drops a byte order mark opening its first
			// line, which in the middle of a file is a malformed line.
			if bytes.HasPrefix(buf[i+1:n], []byte(bom)) {
				at += int64(i) + 1
				continue
			}
			if cut := at + int64(i) + 1; cut < size {
				cuts = append(cuts, cut)
			}
			at += int64(i) + 1 + partSize
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		at += int64(n)
	}
	lines := make([]int, len(cuts))
	for k := 1; k < len(cuts); k++ {
		n, err := countLines(io.NewSectionReader(fh, cuts[k-1], cuts[k]-cuts[k-1]), buf)
		if err != nil {
			return nil, nil, err
		}
		lines[k] = lines[k-1] + n
	}
	return cuts, lines, nil
}

// countLines counts the newlines r holds, reading through buf.
func countLines(r io.Reader, buf []byte) (int, error) {
	n := 0
	for {
		m, err := r.Read(buf)
		n += bytes.Count(buf[:m], []byte{'\n'})
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// checkPart validates a part with the trajectory Decoder and stages the
// lines DuckDB should read: every line that decodes and whose seq is
// greater than every seq before it in the part, without a torn last line
// or, when lenient, the bad lines and repeated seqs. In strict mode the
// error is the part's first bad line; a file that cannot be opened is a
// *trajectory.FileError. With keep, the part's result holds the events it
// kept, for an Observer.
func (db *DB) checkPart(file string, p part, st *stage, keep bool) (res partResult) {
	display := trajectory.Name(file)
	res.report.File = display
	in, err := trajectory.OpenInput(file, db.opts.Stdin)
	if err != nil {
		res.err = err
		return res
	}
	defer in.Close()
	name, err := json.Marshal(display)
	if err != nil {
		res.err = fmt.Errorf("load: %w", err)
		return res
	}
	var r io.Reader = in
	if !p.stream {
		fh, ok := in.(io.ReaderAt)
		if !ok {
			res.err = fmt.Errorf("load %s: cannot read parts of it", display)
			return res
		}
		r = io.NewSectionReader(fh, p.off, p.len)
	}
	lines := &lineCounter{r: r}
	dec := trajectory.NewDecoder(lines, display)
	defer func() { res.lines = lines.n }()
	// cur is the index in res.seqs of the session of the last event, -1
	// before the first.
	cur := -1
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var le *trajectory.LineError
		if errors.As(err, &le) {
			// The Decoder stops at binary data, so the lines after it were
			// never checked: even a lenient load cannot keep them.
			if errors.Is(err, trajectory.ErrBinary) || !db.opts.Lenient {
				res.err = err
				return res
			}
			res.report.Skipped++
			if res.report.FirstSkipped == nil {
				res.report.FirstSkipped = err
			}
			continue
		}
		if err != nil {
			res.err = fmt.Errorf("load: %w", err)
			return res
		}
		if p.dupes[ev.Session] {
			res.report.Duplicates++
			continue
		}
		// Files usually hold one session, and a file of many holds each
		// in one block, so a session is looked up once per block.
		if cur < 0 || ev.Session != res.seqs.ranges[cur].session {
			cur = res.seqs.find(ev.Session)
		}
		after, repeats := int64(0), false
		switch {
		case cur >= 0:
			after = res.seqs.ranges[cur].max
			repeats = ev.Seq <= after
		default:
			var seeded bool
			if after, seeded = p.seed[ev.Session]; seeded {
				repeats = ev.Seq <= after
			}
		}
		if repeats {
			err := &trajectory.LineError{File: display, Line: dec.Line(), Err: seqError(ev.Seq, after)}
			if !db.opts.Lenient {
				res.err = err
				return res
			}
			res.report.Dropped++
			if res.report.FirstDropped == nil {
				res.report.FirstDropped = err
			}
			continue
		}
		if cur < 0 {
			cur = res.seqs.add(seqRange{session: ev.Session, first: ev.Seq, firstLine: dec.Line()})
		}
		res.seqs.ranges[cur].max = ev.Seq
		line := dec.Raw()
		if start, end, ok := dec.Member("ts"); ok {
			line = st.utcTS(line, start, end, ev.TS)
		}
		if err := st.write(ev.Payload.EventType(), line, name, p.lines+dec.Line()); err != nil {
			res.err = fmt.Errorf("load: %w", err)
			return res
		}
		if keep {
			res.events = append(res.events, Located{Event: ev, Line: p.lines + dec.Line()})
		}
		res.report.Events++
	}
	res.report.Warnings = dec.Warnings()
	return res
}

// seqError says what is wrong with a seq that does not increase.
func seqError(seq, after int64) error {
	return fmt.Errorf("%w: seq %d after %d, a repeated or replayed event (validate reports it too); remove the line, or pass --lenient to drop it and count the event once", ErrSeq, seq, after)
}

// dupError says what is wrong with a session found in two files when
// Options.StrictDupes makes it an error.
func dupError(session, kept string) error {
	return fmt.Errorf("%w: session %s is in %s too; the same run given twice (or a copy of its file) would be counted twice; leave one out, or drop --strict-dupes to load it once, from the first file", ErrDuplicateSession, session, kept)
}

// copyError says what is wrong with a session found in two files.
func copyError(seq int64, session string, after int64, file string) error {
	return fmt.Errorf("%w: seq %d of session %s, which %s holds up to seq %d: a copy of the session would be counted twice; leave one copy out, or pass --lenient to drop the repeated events", ErrSeq, seq, session, file, after)
}

func (db *DB) progress(phase string, done, total int64, disk *diskUse) {
	if db.opts.Progress != nil {
		db.opts.Progress(Progress{Phase: phase, Done: done, Total: total, StagedPeak: disk.peak.Load()})
	}
}

// lineCounter counts the newlines read through it.
type lineCounter struct {
	r io.Reader
	n int
}

func (c *lineCounter) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += bytes.Count(b[:n], []byte{'\n'})
	return n, err
}

// merge adds up the parts of every file, renumbering their lines as the
// file's, and returns the reports with, in strict mode, the first problem
// of every bad file: a malformed line, a seq that does not increase, a file
// that cannot be read or holds no event. In lenient mode a file that cannot
// be read or holds no event gets its FileReport.Err instead, and redo lists
// the files whose seqs repeat those of an earlier part or file, which only
// checking them whole, with their seeds, can drop correctly. err is any
// other failure, or binary data.
//
// A session's seqs must increase across the files in their sorted order
// too: a session is recorded in one file, so the same session in a second
// file is a copy, and loading both would count it twice.
//
// A session whose seqs in a file overlap those an earlier file holds of it
// is a duplicate (the same run given twice, or a copy of its file): dups,
// when not nil, records it, and the file is checked again without it, so
// that the session is loaded once, from the first file; with
// Options.StrictDupes it is a problem instead. The second check of the
// files to check again passes a nil dups.
func (db *DB) merge(files []string, parts []part, results []partResult, dups *dupState) (reports []FileReport, problems []error, redo []int, seeds map[int]map[string]int64, err error) {
	reports = make([]FileReport, len(files))
	for i, f := range files {
		reports[i].File = trajectory.Name(f)
	}
	first := make([]error, len(files))
	offset := make([]int, len(files))
	// The highest seq of each session: in the file being merged (here),
	// and in the files merged before it (before, with the file it is in).
	type seen struct {
		max  int64
		file string
	}
	here, before := map[string]int64{}, map[string]seen{}
	if dups != nil && dups.priorOf != nil {
		// The sessions a store holds from files not read again (or read
		// from where it stopped) come before every file of this load:
		// asked for the sessions the parts hold only, as a store holds
		// many more.
		var sessions []string
		for _, res := range results {
			for _, r := range res.seqs.ranges {
				sessions = append(sessions, r.session)
			}
		}
		prior, err := dups.priorOf(sessions)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		for session, p := range prior {
			before[session] = seen{max: p.max, file: p.file}
		}
	}
	var strictDupes []error
	seeds = map[int]map[string]int64{}
	file := -1
	done := func() {
		if file < 0 {
			return
		}
		if slices.Contains(redo, file) {
			seed := map[string]int64{}
			for session := range here {
				if b, ok := before[session]; ok {
					seed[session] = b.max
				}
			}
			seeds[file] = seed
		}
		for session, m := range here {
			if b, ok := before[session]; !ok || m > b.max {
				before[session] = seen{max: m, file: trajectory.Name(files[file])}
			}
		}
		clear(here)
	}
	resumed := map[int]bool{}
	for i, p := range parts {
		if p.file != file {
			done()
			file = p.file
			// A grown file read from a store's stop on counts its lines
			// from there.
			offset[p.file] = p.lines
		}
		if p.resume {
			resumed[p.file] = true
		}
		res, fr := results[i], &reports[p.file]
		renumber(res.err, offset[p.file])
		renumber(res.report.FirstSkipped, offset[p.file])
		renumber(res.report.FirstDropped, offset[p.file])
		// Checked alone, the part could not see the seqs before it.
		var repeat *trajectory.LineError
		for _, r := range res.seqs.ranges {
			session := r.session
			var why error
			_, inFile := here[session]
			switch b, ok := before[session]; {
			case dups != nil && dups.byFile[p.file][session]:
				continue
			case dups != nil && !inFile && ok && r.first <= b.max && b.file != fr.File:
				at := &trajectory.LineError{File: fr.File, Line: r.firstLine + offset[p.file], Err: dupError(session, b.file)}
				if db.opts.StrictDupes {
					strictDupes = append(strictDupes, at)
					continue
				}
				dups.add(p.file, Duplicate{Session: session, File: fr.File, Line: at.Line, Kept: b.file})
				if !slices.Contains(redo, p.file) {
					redo = append(redo, p.file)
				}
				continue
			}
			if m, ok := here[session]; ok && r.first <= m {
				why = seqError(r.first, m)
			} else if b, ok := before[session]; ok && r.first <= b.max && b.file == fr.File {
				// The lines a store holds of a grown file come before.
				why = seqError(r.first, b.max)
			} else if b, ok := before[session]; ok && r.first <= b.max {
				why = copyError(r.first, session, b.max, b.file)
			}
			if line := r.firstLine + offset[p.file]; why != nil && (repeat == nil || line < repeat.Line) {
				repeat = &trajectory.LineError{File: fr.File, Line: line, Err: why}
			}
		}
		switch {
		case repeat != nil && db.opts.Lenient:
			if !slices.Contains(redo, p.file) {
				redo = append(redo, p.file)
			}
		case repeat != nil && first[p.file] == nil:
			first[p.file] = repeat
		}
		for _, r := range res.seqs.ranges {
			if dups == nil || !dups.byFile[p.file][r.session] {
				here[r.session] = max(here[r.session], r.max)
			}
		}
		var le *trajectory.LineError
		var fe *trajectory.FileError
		switch {
		case errors.Is(res.err, trajectory.ErrBinary):
			return nil, nil, nil, nil, fmt.Errorf("load: %w; this does not look like a trajectory, leave it out of the paths", res.err)
		case errors.As(res.err, &fe) && db.opts.Lenient:
			fr.Err = res.err
		case errors.As(res.err, &le) || errors.As(res.err, &fe):
			if first[p.file] == nil {
				first[p.file] = res.err
			}
		case res.err != nil:
			return nil, nil, nil, nil, res.err
		}
		fr.Events += res.report.Events
		fr.Skipped += res.report.Skipped
		fr.Dropped += res.report.Dropped
		fr.Duplicates += res.report.Duplicates
		if fr.FirstSkipped == nil {
			fr.FirstSkipped = res.report.FirstSkipped
		}
		if fr.FirstDropped == nil {
			fr.FirstDropped = res.report.FirstDropped
		}
		for _, w := range res.report.Warnings {
			w.Line += offset[p.file]
			fr.Warnings = append(fr.Warnings, w)
		}
		offset[p.file] += res.lines
	}
	done()
	for i := range reports {
		fr := &reports[i]
		fr.lines = offset[i]
		// The lines a store holds of a grown file hold its events.
		if resumed[i] {
			continue
		}
		if first[i] != nil || fr.Err != nil || fr.Events > 0 || fr.Skipped > 0 || fr.Dropped > 0 || fr.Duplicates > 0 {
			continue
		}
		// No event and no bad line: validate calls such a file invalid,
		// and so does the load.
		if db.opts.Lenient {
			fr.Err = trajectory.Empty(fr.File)
		} else {
			first[i] = trajectory.Empty(fr.File)
		}
	}
	for _, p := range first {
		if p != nil {
			problems = append(problems, p)
		}
	}
	if dups != nil {
		dups.strict = strictDupes
	}
	return reports, problems, redo, seeds, nil
}

// renumber moves the line of err's *trajectory.LineError by offset.
func renumber(err error, offset int) {
	var le *trajectory.LineError
	if offset != 0 && errors.As(err, &le) {
		le.Line += offset
	}
}
