package trajectory

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzRead feeds arbitrary bytes to the decoder and the invariants checker.
// They must never panic, and every event the decoder accepts must survive
// an encode/decode round trip unchanged.
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.jsonl")
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		for _, line := range bytes.Split(data, []byte("\n")) {
			f.Add(line)
		}
	}
	f.Add([]byte("\x00\x01"))
	f.Add([]byte(`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"tool_end","tool_use_id":"a","tool":"b","duration_ms":1e308,"output_bytes":-0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := NewDecoder(bytes.NewReader(data), "fuzz.jsonl")
		dec.SetMaxLineBytes(1 << 16)
		chk := NewChecker("fuzz.jsonl")
		for i := 0; ; i++ {
			ev, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if i > len(data)+1 {
				t.Fatal("decoder returned more results than there are lines")
			}
			if err != nil {
				var le *LineError
				if !errors.As(err, &le) {
					t.Fatalf("error %v is not a *LineError", err)
				}
				continue
			}
			chk.Add(dec.Line(), ev)
			line, err := AppendEvent(nil, ev)
			if err != nil {
				t.Fatalf("cannot re-encode an accepted event: %v", err)
			}
			again, err := NewDecoder(bytes.NewReader(line), "again").Next()
			if err != nil {
				t.Fatalf("re-encoded event does not decode: %v\n%s", err, line)
			}
			if !reflect.DeepEqual(normalizeRaw(again), normalizeRaw(ev)) {
				t.Fatalf("round trip changed the event:\n in: %#v\nout: %#v", ev, again)
			}
		}
		chk.Finish()
	})
}

// normalizeRaw re-encodes the event so that json.RawMessage fields compare
// by content, not by the white space the input happened to use.
func normalizeRaw(ev Event) string {
	b, _ := AppendEvent(nil, ev)
	return string(b)
}
