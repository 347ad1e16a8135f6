package detectors

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/retrace-dev/retrace/trajectory"
)

// typeFilter reads a trajectory and blanks the lines whose event type no
// Go detector reads, keeping the newline, so that the Decoder skips them
// without decoding and still counts every line. A line is blanked only
// when its type is certain: its first "type" key comes before any nested
// object or array, which is where the recorder writes the envelope; any
// other line is passed on whole and decoded.
type typeFilter struct {
	r    *bufio.Reader
	skip map[string]bool
	buf  []byte // the rest of the current line to hand out
	err  error
	// long is set while a line longer than the buffer is passed on: its
	// later pieces start mid-line and are never blanked.
	long bool
}

func newTypeFilter(r io.Reader, skip map[string]bool) *typeFilter {
	return &typeFilter{r: bufio.NewReaderSize(r, 256<<10), skip: skip}
}

var typeKey = []byte(`"type":"`)

// skipped reports whether line is an event of a type in f.skip.
func (f *typeFilter) skipped(line []byte) bool {
	i := bytes.Index(line, typeKey)
	if i < 0 || bytes.ContainsAny(line[1:i], "{[") {
		return false
	}
	rest := line[i+len(typeKey):]
	end := bytes.IndexByte(rest, '"')
	return end > 0 && f.skip[string(rest[:end])]
}

func (f *typeFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		line, err := f.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: pass it on whole, in pieces.
			f.buf, f.long = line, true
			break
		}
		f.err = err
		if !f.long && len(line) > 0 && line[len(line)-1] == '\n' && f.skipped(line) {
			line = line[len(line)-1:]
		}
		f.buf, f.long = line, false
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// filterTypes turns the typeFilter on for Run, and Detect's leaving out of
// the same types; the benchmark turns it off to measure a catalog whose Go
// detectors read every type.
var filterTypes = true

// skipTypes returns the event types none of ds reads, by their
// declaration; a Go detector that declares nothing reads every type.
func skipTypes(ds []Detector) map[string]bool {
	need := map[trajectory.EventType]bool{}
	for _, d := range ds {
		if _, ok := d.(*deadDefense); ok {
			d = &goDetector{reads: livenessReads}
		}
		g, ok := d.(*goDetector)
		if !ok {
			continue
		}
		if len(g.reads) == 0 {
			return nil
		}
		for _, t := range g.reads {
			need[t] = true
		}
	}
	skip := map[string]bool{}
	for _, t := range trajectory.EventTypes() {
		if !need[t] {
			skip[string(t)] = true
		}
	}
	return skip
}
