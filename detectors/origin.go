package detectors

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strconv"
)

// resolveOrigins sets the Origin of every evidence that points at an
// event imported from a client's transcript: the session_start's
// origin_file and the event's origin_line. Only the files findings cite
// are read again, and of each only up to its last cited line; a line
// that does not hold an origin, or a file that cannot be read again
// (standard input), leaves its evidence as it is.
func resolveOrigins(fs []Finding) error {
	lines := map[string][]int{}
	for _, f := range fs {
		for _, e := range f.Evidence {
			if e.File != "" && e.Line > 0 {
				lines[e.File] = append(lines[e.File], e.Line)
			}
		}
	}
	origins := map[string]map[int]string{}
	// One buffer for every file: a findings' file each, at 10M events
	// tens of thousands of files, allocated 1.5 GB of buffers.
	buf := make([]byte, 0, 64<<10)
	for file, want := range lines {
		slices.Sort(want)
		want = slices.Compact(want)
		o, err := originsOf(file, want, buf)
		if err != nil {
			return err
		}
		origins[file] = o
	}
	for i := range fs {
		for j := range fs[i].Evidence {
			e := &fs[i].Evidence[j]
			if o := origins[e.File][e.Line]; o != "" {
				e.Origin = o
			}
		}
	}
	return nil
}

// originLine holds the members of a trajectory line that say where an
// imported event came from.
type originLine struct {
	OriginFile string `json:"origin_file"`
	OriginLine int    `json:"origin_line"`
}

// originsOf reads the trajectory file up to the last of the sorted lines
// want and returns each wanted line's origin, "file:line". A session's
// origin_file is its session_start's, which comes before its events.
// buf is the scanner's first buffer.
func originsOf(file string, want []int, buf []byte) (map[int]string, error) {
	out := map[int]string{}
	if len(want) == 0 {
		return out, nil
	}
	fh, err := os.Open(file)
	if err != nil {
		// Standard input, or a file gone since it was loaded: its
		// evidence keeps no origin, and the findings stand.
		return out, nil
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(buf, 256<<20)
	origin, n, k := "", 0, 0
	for k < len(want) && sc.Scan() {
		n++
		b := sc.Bytes()
		// Only lines that name an origin are decoded.
		if bytes.Contains(b, []byte(`"origin_`)) {
			var l originLine
			if json.Unmarshal(b, &l) == nil {
				if l.OriginFile != "" {
					origin = l.OriginFile
				}
				if want[k] == n && origin != "" && l.OriginLine > 0 {
					out[n] = origin + ":" + strconv.Itoa(l.OriginLine)
				}
			}
		}
		for k < len(want) && want[k] <= n {
			k++
		}
	}
	return out, sc.Err()
}
