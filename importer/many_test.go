package importer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// writeCodexTranscripts writes n small Codex rollouts under dir, each with
// a tool output of outBytes, and returns dir.
func writeCodexTranscripts(t testing.TB, dir string, n, outBytes int) string {
	t.Helper()
	out := strings.Repeat("x", outBytes)
	for i := range n {
		day := filepath.Join(dir, "2026", "12", fmt.Sprintf("%02d", i%28+1))
		if err := os.MkdirAll(day, 0o700); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf(`{"timestamp":"2026-12-01T00:00:%02d.%03dZ","type":"session_meta","payload":{"id":"m-%d","cli_version":"0.171.0","cwd":"/w"}}
{"timestamp":"2026-12-01T00:01:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}
{"timestamp":"2026-12-01T00:01:01Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}}
{"timestamp":"2026-12-01T00:01:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Process exited with code 0\nOutput:\n%s\n"}}
{"timestamp":"2026-12-01T00:01:03Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}
`, i%60, i%1000, i, out)
		if err := os.WriteFile(filepath.Join(day, fmt.Sprintf("rollout-%05d.jsonl", i)), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Importing a directory of thousands of transcripts holds one file at a
// time: what stays live per file is its line of the report, far less than
// the file. Were the transcripts' contents kept, each file would add at
// least its 8 KiB tool output.
func TestThousandsOfTranscriptsAreImportedInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 2000 transcripts")
	}
	const n, from, outBytes, perFile = 2000, 200, 8 << 10, 2 << 10
	dir := writeCodexTranscripts(t, t.TempDir(), n, outBytes)
	var atFrom, atEnd uint64
	rep, err := Import(context.Background(), Options{Format: Codex, Paths: []string{dir}, RunsDir: t.TempDir(),
		Progress: func(done, total int) {
			switch done {
			case from:
				atFrom = heapInUse()
			case total:
				atEnd = heapInUse()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != n || len(rep.Sessions) != n || len(rep.Problems) != 0 {
		t.Fatalf("%d files, %d sessions, problems %v; want %d, %d, none", rep.Files, len(rep.Sessions), rep.Problems, n, n)
	}
	grown := int64(atEnd) - int64(atFrom)
	if per := grown / (n - from); per > perFile {
		t.Errorf("the live heap grew %d bytes over %d files (%d per file), want at most %d per file", grown, n-from, per, perFile)
	}
	t.Logf("live heap after %d files %d KiB, after %d files %d KiB", from, atFrom>>10, n, atEnd>>10)
}
