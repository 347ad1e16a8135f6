package detectors

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/retrace-dev/retrace/metrics"
)

// collector gathers what the Go detectors found, file by file, so that
// memory does not grow with the number of files where it need not: the
// findings stay by file (most files have none), the liveness rows are
// folded into one table at once, and, when the store keeps annexes, each
// file's annex is encoded as it comes and spooled to a temporary file, to
// be kept once every file is done (see annexes). The files of the load's
// pass, those read again and those whose annexes the store gives go
// through it one at a time, as each is done. At 10M events in 100k
// files, holding every file's result until the load was over took some
// 400 MB of Go heap.
type collector struct {
	mu       sync.Mutex
	findings map[string][]Finding
	live     fileLiveness
	// spool holds a line per file done (spooled) when annexes are kept;
	// nil otherwise. err is the first error writing it.
	spool *os.File
	w     *bufio.Writer
	err   error
	k     kept
	id    map[int]string
	// base are, by file, annexes of the store to add to (a file read
	// again because its annex lacked a key).
	base map[string]map[string]string
}

// spooled is a line of a collector's spool: a file's annex.
type spooled struct {
	File  string `json:"f"`
	Value string `json:"v"`
}

// newCollector returns a collector for pl; with spool set it keeps each
// file's annex, to be kept in the store by keep.
func (pl plan) newCollector(spool bool) (*collector, error) {
	c := &collector{findings: map[string][]Finding{}, k: pl.kept(), id: map[int]string{}, base: map[string]map[string]string{}}
	for i := range c.k.keys {
		c.id[i] = pl.ds[i].Info().ID
	}
	if spool {
		f, err := os.CreateTemp("", "retrace-annex-*.jsonl")
		if err != nil {
			return nil, fmt.Errorf("detect: %w", err)
		}
		c.spool, c.w = f, bufio.NewWriterSize(f, 1<<16)
	}
	return c, nil
}

// add takes what was found in file's sessions, all of them.
func (c *collector) add(file string, res *fileResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spool != nil && c.err == nil {
		m := c.base[file]
		if m == nil {
			m = map[string]string{}
		}
		delete(c.base, file)
		if c.err = c.k.put(c.id, res, m); c.err == nil {
			var b []byte
			if b, c.err = json.Marshal(spooled{File: file, Value: encodeAnnex(m)}); c.err == nil {
				c.w.Write(b)
				c.err = c.w.WriteByte('\n')
			}
		}
	}
	c.fold(file, res)
}

// fold adds res, found in file, to what c holds, without spooling it.
func (c *collector) fold(file string, res *fileResult) {
	if len(res.findings) > 0 {
		c.findings[file] = append(c.findings[file], res.findings...)
	}
	c.live.merge(res.live)
}

// result returns what c gathered, with the files that could not be read.
func (c *collector) result(unread []string) readResult {
	return readResult{findings: c.findings, live: c.live, unread: unread}
}

// close removes the spool.
func (c *collector) close() {
	if c.spool != nil {
		c.spool.Close()
		os.Remove(c.spool.Name())
	}
}

// annexes returns the spooled annexes of the files held whole, under
// their marks now, one at a time; err is set when the spool cannot be
// read back.
func (c *collector) annexes(held map[string]metrics.HeldFile, err *error) func(yield func(metrics.Annex) bool) {
	return func(yield func(metrics.Annex) bool) {
		if c.spool == nil {
			return
		}
		if *err = c.err; *err != nil {
			return
		}
		if *err = c.w.Flush(); *err != nil {
			return
		}
		if _, *err = c.spool.Seek(0, io.SeekStart); *err != nil {
			return
		}
		r := bufio.NewReaderSize(c.spool, 1<<16)
		for {
			line, rerr := r.ReadBytes('\n')
			if len(line) > 0 {
				var s spooled
				if *err = json.Unmarshal(line, &s); *err != nil {
					return
				}
				if h, ok := held[s.File]; ok && h.Whole {
					if !yield(metrics.Annex{File: s.File, Mark: h.Mark, Value: s.Value}) {
						return
					}
				}
			}
			if rerr == io.EOF {
				return
			}
			if rerr != nil {
				*err = rerr
				return
			}
		}
	}
}
