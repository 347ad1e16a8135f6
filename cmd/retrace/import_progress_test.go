package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A directory of many transcripts shows a progress bar on a terminal's
// stderr while it is imported, and the summary still counts every file.
func TestImportOfADirectoryOfManyTranscriptsShowsProgressOnATerminal(t *testing.T) {
	dir := t.TempDir()
	const n = 120 // above the bar's minimum of 50 files
	for i := range n {
		body := fmt.Sprintf(`{"timestamp":"2026-12-01T00:00:%02d.%03dZ","type":"session_meta","payload":{"id":"p-%d","cli_version":"0.171.0","cwd":"/w"}}
{"timestamp":"2026-12-01T00:01:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}
{"timestamp":"2026-12-01T00:01:01Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}
`, i%60, i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("rollout-%04d.jsonl", i)), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ptmx, tty := openPty(t)
	drawn := make(chan string)
	go func() {
		b, _ := io.ReadAll(ptmx) // ends when tty is closed
		drawn <- string(b)
	}()
	var out strings.Builder
	sys := &IO{In: strings.NewReader(""), Out: &out, Err: tty, Getenv: func(string) string { return "" }, Now: time.Now}
	code := run(sys, []string{"import", "codex", dir, "--runs", t.TempDir()})
	tty.Close()
	shown := <-drawn
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, shown)
	}
	if !strings.Contains(shown, "importing transcripts") || !strings.Contains(shown, fmt.Sprintf("/%d, ", n)) {
		t.Errorf("the terminal shows %q, without the bar's description and count", shown)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("%d sessions from %d files: %d imported", n, n, n)) {
		t.Errorf("summary %q does not count every file", out.String())
	}
}
