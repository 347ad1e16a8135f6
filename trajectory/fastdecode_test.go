package trajectory_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/retrace-dev/retrace/synth"
	"github.com/retrace-dev/retrace/trajectory"
)

// result is what one call to Decoder.Next gave.
type result struct {
	ev   trajectory.Event
	err  string
	line int
}

// decodeWith decodes data with the fast decoder, or with the reference
// (encoding/json) one, and returns every result and the warnings.
func decodeWith(t testing.TB, data []byte, reference bool) ([]result, []trajectory.Warning) {
	t.Helper()
	dec := trajectory.NewDecoder(bytes.NewReader(data), "in.jsonl")
	dec.SetMaxLineBytes(1 << 16)
	if reference {
		trajectory.UseReferenceDecoder(dec)
	}
	var out []result
	for i := 0; ; i++ {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return out, dec.Warnings()
		}
		if i > len(data)+1 {
			t.Fatal("the decoder returned more results than there are lines")
		}
		r := result{ev: ev, line: dec.Line()}
		if err != nil {
			r.err = err.Error()
		}
		out = append(out, r)
	}
}

// sentinels are the error classes a line error can wrap.
var sentinels = []error{trajectory.ErrMalformed, trajectory.ErrUnsupportedVersion, trajectory.ErrUnknownValue,
	trajectory.ErrMissingField, trajectory.ErrBinary, trajectory.ErrLineTooLong}

// agree fails t unless the fast and the reference decoder give the same
// events, the same errors (class and words) and the same warnings on data.
func agree(t testing.TB, data []byte) {
	t.Helper()
	fast, fastWarn := decodeWith(t, data, false)
	ref, refWarn := decodeWith(t, data, true)
	if len(fast) != len(ref) {
		t.Fatalf("fast decoder gave %d results, reference %d", len(fast), len(ref))
	}
	for i := range fast {
		f, r := fast[i], ref[i]
		if f.line != r.line || f.err != r.err {
			t.Fatalf("result %d: fast decoder gave line %d error %q, reference line %d error %q", i, f.line, f.err, r.line, r.err)
		}
		if !reflect.DeepEqual(f.ev, r.ev) {
			t.Fatalf("line %d: fast decoder decoded\n%#v\nreference decoded\n%#v", f.line, f.ev.Payload, r.ev.Payload)
		}
	}
	if !reflect.DeepEqual(fastWarn, refWarn) {
		t.Fatalf("fast decoder warned %v, reference %v", fastWarn, refWarn)
	}
}

// synthLines returns the lines of synth sessions with every fault planted
// (which takes a few hundred sessions).
func synthLines(t testing.TB) [][]byte {
	t.Helper()
	dir := t.TempDir()
	if _, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 400, Seed: 3, Faults: synth.Faults}); err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	var lines [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))...)
	}
	return lines
}

// Lines the fast decoder must give up on or get exactly right: each is a
// way encoding/json's reading differs from the plain case.
var trickyLines = []string{
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":1,"type":"model_response","content":[{"TYPE":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1,"cache_read_tokens":0,"cache_creation_tokens":0},"duration_ms":1}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":1,"type":"model_response","content":[{"type":"text","text":"a","text":"b"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1,"cache_read_tokens":0,"cache_creation_tokens":0},"duration_ms":1}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":1,"type":"model_response","content":[],"stop_reason":"end_turn","usage":{"input_tokens":1.5,"output_tokens":1,"cache_read_tokens":0,"cache_creation_tokens":0},"duration_ms":1}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":1,"type":"model_response","content":null,"stop_reason":"end_turn","usage":null,"duration_ms":null}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":1,"type":"model_response","content":[{"type":"tool_use","id":"a","name":"b","input": {"x" : [1, 2e3, -0.5, "\ud83d\ude00", null, true]} }],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1,"cache_read_tokens":0,"cache_creation_tokens":0,"cache_read_tokens":2},"duration_ms":1e400}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"tool_result","tool_use_id":"t\u00e9","tool":"r\u0000","text":"a\nb\"c\\d\/e\u2028\ud800x\xff","display":"full"}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"tool_call","tool_use_id":"t","tool":"r","input":null,"index":01,"batch":0}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"tool_call","tool_use_id":"t","tool":"r","input":{"a":tru},"index":0,"batch":-0}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"tool_call","tool_use_id":"t","tool":"r","input":"x","index":9223372036854775808,"batch":0,"bogus":1}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"hook_run","tool_use_id":"t","tool":"r","phase":"pre","hook":"h","outcome":"continue","duration_ms":1,"exit_code":null}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"hook_run","tool_use_id":"t","tool":"r","phase":"pre","hook":"h","outcome":"continue","duration_ms":1,"exit_code":3}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"defense_trigger","defense":"loop_detection","action":"stop","evidence":{"a":"1","a":"2","b\u0041":"3"}}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"session_start","harness_version":"1","provider":"p","model":"m","mode":"headless","permission_mode":"default","config_hash":"0123456789abcdef","system_prompt_hash":"0123456789abcdef","tools":[{"name":"read","definition_hash":"0123456789abcdef","source":"builtin","display":"full","Deferred":true}],"defenses":[],"limits":{"max_turns":3,"max_turns":4},"tags":{}}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"session_start","harness_version":"1","provider":"p","model":"m","mode":"headless","permission_mode":"default","config_hash":"0123456789abcdef","system_prompt_hash":"0123456789abcdef","tools":[],"defenses":["loop_detection"],"limits":null}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"session_start","harness_version":"1","provider":"p","model":"m","mode":"headless","permission_mode":"default","config_hash":"0123456789abcdef","system_prompt_hash":"0123456789abcdef","tools":[],"defenses":[]}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"tool_end","tool_use_id":"t","tool":"r","duration_ms":"1","output_bytes":1}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"tool_end","tool_use_id":"t","tool":"r","duration_ms":1,"output_bytes":1,"truncated":"yes"}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"tool_end","tool_use_id":"t","tool":"r","duration_ms":1,"output_bytes":1,"truncated":null}`,
	`{"v":1,"session":"s","seq":1,"ts":"2026-01-01T00:00:00Z","turn":0,"type":"tool_end","tool_use_id":"t","tool":"r","duration_ms":1.,"output_bytes":1}`,
}

// TestFastDecoderAgreesWithReferenceOnSynthAndTrickyLines checks the fast
// decoder against encoding/json on every line of a synth corpus, of the
// fixtures, and on lines built to hit the corners of encoding/json.
func TestFastDecoderAgreesWithReferenceOnSynthAndTrickyLines(t *testing.T) {
	lines := synthLines(t)
	agree(t, bytes.Join(lines, []byte("\n")))
	for _, l := range trickyLines {
		agree(t, []byte(l+"\n"))
	}
	files, _ := filepath.Glob("testdata/*/*.jsonl")
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		agree(t, data)
	}
}

// TestFastDecoderFallsBackWhereEncodingJSONIsLenient checks that what
// encoding/json accepts beyond the plain case (a nested key in another
// case, a nested key given twice) still reads as it did, through the
// fallback.
func TestFastDecoderFallsBackWhereEncodingJSONIsLenient(t *testing.T) {
	tests := []struct {
		name      string
		line      string
		typ, text string
	}{
		{"a nested key in upper case is matched as encoding/json matches it", trickyLines[0], "text", "hi"},
		{"a nested key given twice keeps the last value", trickyLines[1], "text", "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := decodeWith(t, []byte(tt.line+"\n"), false)
			if len(res) != 1 || res[0].err != "" {
				t.Fatalf("got %+v, want one event without error", res)
			}
			r, ok := res[0].ev.Payload.(*trajectory.ModelResponse)
			if !ok || len(r.Content) != 1 {
				t.Fatalf("got payload %#v, want a model_response with one block", res[0].ev.Payload)
			}
			if b := r.Content[0]; string(b.Type) != tt.typ || b.Text != tt.text {
				t.Errorf("got block type %q text %q, want %q %q", b.Type, b.Text, tt.typ, tt.text)
			}
		})
	}
}

// FuzzFastDecoderAgreesWithReference feeds arbitrary lines to the fast
// decoder and to the encoding/json path it replaced, which must give the
// same events, errors and warnings.
func FuzzFastDecoderAgreesWithReference(f *testing.F) {
	// Every line type, not every line: a seed corpus of thousands
	// slows every fuzz run down.
	for i, l := range synthLines(f) {
		if i%40 == 0 {
			f.Add(l)
		}
	}
	for _, l := range trickyLines {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		agree(t, data)
	})
}
