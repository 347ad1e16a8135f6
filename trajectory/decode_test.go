package trajectory

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodLine = `{"v":1,"session":"s1","seq":1,"ts":"2026-11-30T09:00:00Z","turn":0,"type":"tool_success","tool_use_id":"toolu_1","tool":"read"}`

func decodeAll(t *testing.T, input string) (events []Event, errs []error, dec *Decoder) {
	t.Helper()
	dec = NewDecoder(strings.NewReader(input), "in.jsonl")
	for i := 0; i < 1000; i++ {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return events, errs, dec
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		events = append(events, ev)
	}
	t.Fatal("decoder did not reach the end")
	return
}

func TestDecoderRejectsBadLinesWithFileLineFieldAndSentinel(t *testing.T) {
	replace := func(old, new string) string { return strings.Replace(goodLine, old, new, 1) }
	tests := []struct {
		name     string
		line     string
		sentinel error
		want     string
	}{
		{"a line that is not JSON at all", "hello", ErrMalformed, "invalid JSON"},
		{"a JSON array instead of an object", `[1,2]`, ErrMalformed, "got an array"},
		{"an envelope without a version", replace(`"v":1,`, ""), ErrMissingField, `field "v"`},
		{"a version from the future", replace(`"v":1`, `"v":7`), ErrUnsupportedVersion, "got 7"},
		{"a version that is not a number", replace(`"v":1`, `"v":"1"`), ErrMalformed, `field "v"`},
		{"a seq that is a fraction", replace(`"seq":1`, `"seq":1.5`), ErrMalformed, `field "seq"`},
		{"a seq of zero", replace(`"seq":1`, `"seq":0`), ErrMalformed, `field "seq"`},
		{"a timestamp that is not RFC 3339", replace(`2026-11-30T09:00:00Z`, `yesterday`), ErrMalformed, `field "ts"`},
		{"a negative turn", replace(`"turn":0`, `"turn":-1`), ErrMalformed, `field "turn"`},
		{"an unknown event type", replace(`tool_success`, `tool_maybe`), ErrUnknownValue, `"tool_maybe"`},
		{"a field that belongs to another event type", replace(`"tool":"read"`, `"tool":"read","failure_kind":"timeout"`), ErrMalformed, `field "failure_kind"`},
		{"a missing required payload field", replace(`,"tool":"read"`, ""), ErrMissingField, `field "tool"`},
		{"a payload field of the wrong JSON type", replace(`"tool":"read"`, `"tool":42`), ErrMalformed, `field "tool": malformed event: got JSON number, want a string`},
		{"a duplicated field", replace(`"tool":"read"`, `"tool":"read","tool":"bash"`), ErrMalformed, `field "tool": malformed event: appears twice`},
		{"a session id that is not a string", replace(`"session":"s1"`, `"session":1`), ErrMalformed, `field "session"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs, _ := decodeAll(t, goodLine+"\n"+tt.line+"\n")
			if len(errs) != 1 {
				t.Fatalf("got %d errors (%v), want 1", len(errs), errs)
			}
			err := errs[0]
			var le *LineError
			if !errors.As(err, &le) || le.File != "in.jsonl" || le.Line != 2 {
				t.Fatalf("error %q is not located at in.jsonl:2", err)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("error %q does not wrap %v", err, tt.sentinel)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

func TestDecoderAcceptsWhatHandWrittenFilesContain(t *testing.T) {
	input := "\xef\xbb\xbf" + goodLine + "\r\n\n   \n" + strings.Replace(goodLine, `"seq":1`, `"seq":2`, 1) // BOM, CRLF, blank lines, no final newline
	events, errs, dec := decodeAll(t, input)
	if len(errs) != 0 || len(events) != 2 || len(dec.Warnings()) != 0 {
		t.Fatalf("got %d events, errors %v, warnings %v; want 2 events and nothing else", len(events), errs, dec.Warnings())
	}
	if events[1].Seq != 2 || dec.Line() != 5 {
		t.Fatalf("second event seq %d at line %d, want seq 2 at line 5", events[1].Seq, dec.Line())
	}
}

func TestDecoderRawIsTheLineWithoutBOMOrLineEnd(t *testing.T) {
	dec := NewDecoder(strings.NewReader("\xef\xbb\xbf"+goodLine+"\r\n"), "in.jsonl")
	if _, err := dec.Next(); err != nil {
		t.Fatal(err)
	}
	if got := string(dec.Raw()); got != goodLine {
		t.Fatalf("Raw() = %q, want %q", got, goodLine)
	}
}

func TestDecoderMemberIsWhereAValueSitsInRaw(t *testing.T) {
	line := "\xef\xbb\xbf" + `{"v":1, "session":"s1","seq":1,"ts" : "2026-11-30T11:00:00+02:00" ,"turn":0,"type":"tool_success","tool_use_id":"toolu_1","tool":"read"}`
	dec := NewDecoder(strings.NewReader(line+"\n"), "in.jsonl")
	if _, err := dec.Next(); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"ts": `"2026-11-30T11:00:00+02:00"`, "seq": "1", "tool": `"read"`} {
		start, end, ok := dec.Member(key)
		if got := string(dec.Raw()[start:end]); !ok || got != want {
			t.Errorf("Member(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
	if _, _, ok := dec.Member("exit_code"); ok {
		t.Error("Member found a member the line does not have")
	}
	if _, err := dec.Next(); !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if _, _, ok := dec.Member("ts"); ok {
		t.Error("Member found a member after the end of the input")
	}
}

func TestDecoderKeepsGoingAfterABadLine(t *testing.T) {
	input := goodLine + "\n{broken\n" + strings.Replace(goodLine, `"seq":1`, `"seq":3`, 1) + "\n"
	events, errs, _ := decodeAll(t, input)
	if len(events) != 2 || len(errs) != 1 {
		t.Fatalf("got %d events and %d errors, want 2 and 1", len(events), len(errs))
	}
}

func TestDecoderReturnsWhatItDecodedWhenOnlyAFieldValueIsWrong(t *testing.T) {
	line := strings.Replace(goodLine, `"type":"tool_success","tool_use_id":"toolu_1","tool":"read"`,
		`"type":"tool_failure","tool_use_id":"toolu_1","tool":"read","failure_kind":"crashed"`, 1)
	dec := NewDecoder(strings.NewReader(line+"\n"), "in.jsonl")
	ev, err := dec.Next()
	if !errors.Is(err, ErrUnknownValue) {
		t.Fatalf("err = %v, want ErrUnknownValue", err)
	}
	if f, ok := ev.Payload.(*ToolFailure); !ok || f.ToolUseID != "toolu_1" {
		t.Fatalf("payload = %#v, want the decoded tool_failure", ev.Payload)
	}
}

func TestDecoderStopsAtBinaryData(t *testing.T) {
	_, errs, _ := decodeAll(t, goodLine+"\n\x00\x01\x02garbage\nmore\n")
	if len(errs) != 1 || !errors.Is(errs[0], ErrBinary) || !strings.HasPrefix(errs[0].Error(), "in.jsonl:2: ") {
		t.Fatalf("errors = %v, want one ErrBinary at line 2", errs)
	}
}

func TestDecoderSkipsALineOverItsLimitAndReadsTheNext(t *testing.T) {
	input := goodLine + "\n" + `{"v":1,"pad":"` + strings.Repeat("x", 5000) + `"}` + "\n" + goodLine + "\n"
	dec := NewDecoder(strings.NewReader(input), "in.jsonl")
	dec.SetMaxLineBytes(1024)
	var got []error
	n := 0
	for {
		_, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			got = append(got, err)
			continue
		}
		n++
	}
	if n != 2 || len(got) != 1 || !errors.Is(got[0], ErrLineTooLong) {
		t.Fatalf("got %d events and errors %v; want 2 events and one ErrLineTooLong", n, got)
	}
}

func TestValidateFileReportsAGigabyteBinaryFileOnceWithoutReadingItIntoMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file: 1 GiB of NUL bytes that take no disk space.
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rep, err := ValidateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || !errors.Is(rep.Problems[0], ErrBinary) {
		t.Fatalf("problems = %v, want exactly one ErrBinary", rep.Problems)
	}
}

func TestValidateStreamCapsTheProblemsOfAForeignFile(t *testing.T) {
	rep, err := ValidateStream(strings.NewReader(strings.Repeat("not json\n", 500)), "foreign.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != MaxProblems || rep.Omitted != 500-MaxProblems {
		t.Fatalf("kept %d problems and omitted %d, want %d and %d", len(rep.Problems), rep.Omitted, MaxProblems, 500-MaxProblems)
	}
}

func TestExpandResolvesFilesDirectoriesAndGlobs(t *testing.T) {
	dir := t.TempDir()
	write := func(rel string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(goodLine+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, c := write("runs/a.jsonl"), write("runs/sub/b.jsonl"), write("other/c.txt")
	write("runs/blobs/notes.txt")
	if err := os.MkdirAll(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}

	got, err := Expand(filepath.Join(dir, "runs"), c, filepath.Join(dir, "runs", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{c, a, b} // sorted
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Expand = %v, want %v (sorted, deduplicated, only .jsonl in directories)", got, want)
	}
	if _, err := Expand(filepath.Join(dir, "empty")); !errors.Is(err, ErrNoRuns) || !strings.Contains(err.Error(), "holds no .jsonl files") {
		t.Fatalf("empty directory: err = %v, want ErrNoRuns saying so", err)
	}
	if _, err := Expand(filepath.Join(dir, "nope", "*.jsonl")); !errors.Is(err, ErrNoRuns) {
		t.Fatalf("glob without matches: err = %v, want ErrNoRuns", err)
	}
	if _, err := Expand(filepath.Join(dir, "missing.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: err = %v, want fs.ErrNotExist", err)
	}
}

func TestEventJSONMethodsRoundTrip(t *testing.T) {
	var ev Event
	if err := ev.UnmarshalJSON([]byte(goodLine)); err != nil {
		t.Fatal(err)
	}
	b, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(goodLine, `09:00:00Z`, `09:00:00.000000000Z`, 1)
	if !bytes.Equal(b, []byte(want)) {
		t.Fatalf("MarshalJSON = %s\nwant          %s", b, want)
	}
}

func TestDecoderFindsADuplicateKeyAmongThousands(t *testing.T) {
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(goodLine, "}"))
	for i := 0; i < 5000; i++ {
		b.WriteString(`,"k` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `":1`)
	}
	b.WriteString(`,"tool":"again"}`)
	_, errs, _ := decodeAll(t, b.String()+"\n")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "appears twice") {
		t.Fatalf("errors = %v, want one duplicate-key error", errs)
	}
}

func TestReaderStreamsEveryFileOfADirectoryInOrder(t *testing.T) {
	r, err := Open("testdata/valid")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	perFile := map[string]int{}
	var lastFile string
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s:%d: %v", r.File(), r.Line(), err)
		}
		if r.File() < lastFile {
			t.Fatalf("files out of order: %s after %s", r.File(), lastFile)
		}
		lastFile = r.File()
		if ev.Seq != int64(perFile[r.File()]+1) {
			t.Fatalf("%s:%d: seq %d, want %d", r.File(), r.Line(), ev.Seq, perFile[r.File()]+1)
		}
		perFile[r.File()]++
	}
	if len(perFile) != len(r.Files()) || len(r.Warnings()) != 1 {
		t.Fatalf("read %d of %d files with warnings %v; want all files and the torn-line warning", len(perFile), len(r.Files()), r.Warnings())
	}
}
