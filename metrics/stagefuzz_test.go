package metrics

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// stageFile checks file whole as a load's check does, strict or lenient,
// with the fast decoder or the encoding/json reference, and returns what
// the check said (error and report) and what it staged for DuckDB, chunk
// by chunk, in the order the chunks were closed.
func stageFile(t *testing.T, file string, lenient, reference bool) (said string, staged []string, events []Located) {
	t.Helper()
	trajectory.SetReferenceDecoding(reference)
	defer trajectory.SetReferenceDecoding(false)
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	db := &DB{opts: Options{Lenient: lenient}}
	ins := &inserter{chunks: make(chan chunk, 64)}
	st := &stage{dir: t.TempDir(), name: "w", ins: ins, disk: &diskUse{}}
	res := db.checkPart(file, part{len: info.Size()}, st, true)
	last, err := st.close()
	if err != nil {
		t.Fatal(err)
	}
	ins.putTogether(last)
	close(ins.chunks)
	for c := range ins.chunks {
		data, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		staged = append(staged, string(c.typ)+"\n"+string(data))
	}
	// The chunks close in map order.
	slices.Sort(staged)
	return fmt.Sprintf("err %v\nreport %+v\nlines %d\nseqs %+v", res.err, res.report, res.lines, res.seqs.ranges), staged, res.events
}

// FuzzStagingAgreesWithReference checks, on any input, that the load's
// check with the fast decoder and with the encoding/json decoder it
// replaced agree, strict and lenient: the same error (file, line and field
// named, word for word), the same report, the same events handed to an
// Observer, and the same bytes staged for DuckDB. The seeds are the
// trajectory fixtures, valid and invalid, and the trajectory fuzz corpus.
func FuzzStagingAgreesWithReference(f *testing.F) {
	for _, dir := range []string{validDir, invalidDir, "../trajectory/testdata/fuzz/FuzzRead"} {
		files, err := filepath.Glob(filepath.Join(dir, "*"))
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			if dir == validDir || dir == invalidDir {
				f.Add(data)
				continue
			}
			// A go test fuzz v1 file: its one value is the input.
			lines := strings.SplitN(string(data), "\n", 3)
			if len(lines) < 2 {
				continue
			}
			v, ok := strings.CutPrefix(strings.TrimSpace(lines[1]), "[]byte(")
			if v, ok = strings.CutSuffix(v, ")"); !ok {
				continue
			}
			if s, err := strconv.Unquote(v); err == nil {
				f.Add([]byte(s))
			}
		}
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, lenient := range []bool{false, true} {
			fastSaid, fastStaged, fastEvents := stageFile(t, p, lenient, false)
			refSaid, refStaged, refEvents := stageFile(t, p, lenient, true)
			if fastSaid != refSaid {
				t.Fatalf("lenient=%v: the fast decoder's check said\n%s\nthe reference's\n%s", lenient, fastSaid, refSaid)
			}
			if !slices.Equal(fastStaged, refStaged) {
				t.Fatalf("lenient=%v: the fast decoder staged\n%q\nthe reference\n%q", lenient, fastStaged, refStaged)
			}
			if !reflect.DeepEqual(fastEvents, refEvents) {
				t.Fatalf("lenient=%v: the fast decoder's check kept\n%+v\nthe reference's\n%+v", lenient, fastEvents, refEvents)
			}
		}
	})
}
