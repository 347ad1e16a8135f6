package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
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

// part is a range of whole lines of one file for one check job.
type part struct {
	file     int // index in the files being loaded
	off, len int64
}

// partResult is what checking one part found. Its line numbers count from
// the part's first line until merge makes them the file's.
type partResult struct {
	report FileReport
	lines  int // newlines in the part
	err    error
}

// checkAll checks files on every core and stages the lines to load into
// chunk files under tmp, reporting progress in bytes.
func (db *DB) checkAll(ctx context.Context, files []string, tmp string) ([]FileReport, []chunk, error) {
	parts, total, err := split(files)
	if err != nil {
		return nil, nil, err
	}
	var (
		mu       sync.Mutex
		done     int64
		results  = make([]partResult, len(parts))
		chunks   []chunk
		stageErr error
	)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := range min(runtime.GOMAXPROCS(0), max(len(parts), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := &stage{dir: tmp, name: fmt.Sprintf("w%d", w)}
			for i := range next {
				res := db.checkPart(files[parts[i].file], parts[i], st)
				mu.Lock()
				results[i] = res
				done += parts[i].len
				db.progress("check", done, total)
				mu.Unlock()
			}
			err := st.close()
			mu.Lock()
			chunks = append(chunks, st.chunks...)
			stageErr = errors.Join(stageErr, err)
			mu.Unlock()
		}()
	}
	for i := range parts {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("load: %w", err)
	}
	if stageErr != nil {
		return nil, nil, fmt.Errorf("load: %w", stageErr)
	}
	reports, err := merge(files, parts, results)
	if err != nil {
		return nil, nil, err
	}
	return reports, chunks, nil
}

// split cuts files into parts and returns them with the total size.
func split(files []string) ([]part, int64, error) {
	var parts []part
	var total int64
	for i, f := range files {
		info, err := os.Stat(f)
		if err != nil {
			return nil, 0, fmt.Errorf("load: %w", err)
		}
		total += info.Size()
		if info.Size() <= splitAbove {
			parts = append(parts, part{file: i, len: info.Size()})
			continue
		}
		cuts, err := cutPoints(f, info.Size())
		if err != nil {
			return nil, 0, fmt.Errorf("load: %w", err)
		}
		for k, off := range cuts {
			end := info.Size()
			if k+1 < len(cuts) {
				end = cuts[k+1]
			}
			parts = append(parts, part{file: i, off: off, len: end - off})
		}
	}
	return parts, total, nil
}

// cutPoints returns the offsets the parts of a file start at: 0, then
// just after the first newline at or past every partSize bytes.
func cutPoints(file string, size int64) ([]int64, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	cuts := []int64{0}
	buf := make([]byte, 64<<10)
	for at := partSize; at < size; {
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
			return nil, err
		}
		at += int64(n)
	}
	return cuts, nil
}

// checkPart validates a part with the trajectory Decoder and stages the
// lines DuckDB should read: every line that decodes, without a torn last
// line or, when lenient, the bad lines. In strict mode the error is the
// part's first bad line.
func (db *DB) checkPart(file string, p part, st *stage) (res partResult) {
	res.report.File = file
	fh, err := os.Open(file)
	if err != nil {
		res.err = fmt.Errorf("load: %w", err)
		return res
	}
	defer fh.Close()
	name, err := json.Marshal(file)
	if err != nil {
		res.err = fmt.Errorf("load: %w", err)
		return res
	}
	lines := &lineCounter{r: io.NewSectionReader(fh, p.off, p.len)}
	dec := trajectory.NewDecoder(lines, file)
	defer func() { res.lines = lines.n }()
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
		if err := st.write(ev.Payload.EventType(), dec.Raw(), name); err != nil {
			res.err = fmt.Errorf("load: %w", err)
			return res
		}
		res.report.Events++
	}
	res.report.Warnings = dec.Warnings()
	return res
}

func (db *DB) progress(phase string, done, total int64) {
	if db.opts.Progress != nil {
		db.opts.Progress(Progress{Phase: phase, Done: done, Total: total})
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
// file's, and returns the reports, or the error that refuses the load: a
// LoadError naming the first bad line of every bad file, or any other
// failure.
func merge(files []string, parts []part, results []partResult) ([]FileReport, error) {
	reports := make([]FileReport, len(files))
	for i, f := range files {
		reports[i].File = f
	}
	problems := make([]error, len(files))
	offset := make([]int, len(files))
	for i, p := range parts {
		res, fr := results[i], &reports[p.file]
		renumber(res.err, offset[p.file])
		renumber(res.report.FirstSkipped, offset[p.file])
		var le *trajectory.LineError
		switch {
		case res.err != nil && errors.As(res.err, &le) && !errors.Is(res.err, trajectory.ErrBinary):
			if problems[p.file] == nil {
				problems[p.file] = res.err
			}
		case errors.Is(res.err, trajectory.ErrBinary):
			return nil, fmt.Errorf("load: %w; this does not look like a trajectory, leave it out of the paths", res.err)
		case res.err != nil:
			return nil, res.err
		}
		fr.Events += res.report.Events
		fr.Skipped += res.report.Skipped
		if fr.FirstSkipped == nil {
			fr.FirstSkipped = res.report.FirstSkipped
		}
		for _, w := range res.report.Warnings {
			w.Line += offset[p.file]
			fr.Warnings = append(fr.Warnings, w)
		}
		offset[p.file] += res.lines
	}
	var le LoadError
	for _, p := range problems {
		if p != nil {
			le.Problems = append(le.Problems, p)
		}
	}
	if len(le.Problems) > 0 {
		return nil, &le
	}
	return reports, nil
}

// renumber moves the line of err's *trajectory.LineError by offset.
func renumber(err error, offset int) {
	var le *trajectory.LineError
	if offset != 0 && errors.As(err, &le) {
		le.Line += offset
	}
}
