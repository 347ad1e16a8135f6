package compare

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// decodeAll keeps every event the decoder could make sense of, as a
// replay command reading an outside file would.
func decodeAll(data []byte) []trajectory.Event {
	dec := trajectory.NewDecoder(bytes.NewReader(data), "fuzz")
	var evs []trajectory.Event
	for i := 0; i < 10000; i++ {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if ev.Payload != nil {
			evs = append(evs, ev)
		}
	}
	return evs
}

// FuzzCompare feeds outside trajectories to Compare: it must never panic,
// a session must compare identical with itself, and both renderers must
// succeed.
func FuzzCompare(f *testing.F) {
	names, _ := filepath.Glob(filepath.Join("..", "trajectory", "testdata", "valid", "*.jsonl"))
	for i, n := range names {
		a, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(names[(i+1)%len(names)])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(a, b)
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ra, rb := decodeAll(a), decodeAll(b)
		if r := Sessions(ra, decodeAll(a), Options{}); !r.Identical() {
			t.Fatalf("a session differs from itself: %+v", r.Divergences)
		}
		r := Sessions(ra, rb, Options{PathRewrites: []PathRewrite{{Old: "/tmp", New: "/x"}}})
		if err := r.Markdown(io.Discard); err != nil {
			t.Fatal(err)
		}
		if err := r.Table(io.Discard); err != nil {
			t.Fatal(err)
		}
	})
}
