package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// On a terminal, eval lists each run above its progress line as the run
// finishes, counts the failures on the line, and erases the line before
// the results are printed.
func TestEvalOnATerminalListsRunsAboveTheProgressLine(t *testing.T) {
	dir := t.TempDir()
	scenarios := map[string]string{
		"failing.txtar": "-- scenario.yaml --\nname: failing\nprompt: Say done.\nmodel: {turns: [{content: [{text: Done.}]}]}\nexpect:\n  outcome: {reason: max_turns}\n",
		"passing.txtar": "-- scenario.yaml --\nname: passing\nprompt: Say done.\nmodel: {turns: [{content: [{text: Done.}]}]}\nexpect:\n  outcome: {reason: end_turn}\n",
	}
	for name, body := range scenarios {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
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
	code := run(sys, []string{"eval", dir, "-j", "1"})
	tty.Close()
	shown := <-drawn
	if code != ExitGate {
		t.Fatalf("exit %d, stderr %q", code, shown)
	}
	for _, want := range []string{
		"failed failing (", "expect.outcome", "ran    passing (",
		"\reval: runs: 1/2, 1 failed, ", "\reval: runs: 2/2, 1 failed, ",
	} {
		if !strings.Contains(shown, want) {
			t.Errorf("the terminal shows %q, without %q", shown, want)
		}
	}
	if last := shown[strings.LastIndex(shown, "eval: runs"):]; !strings.Contains(last, "\r\x1b[K") {
		t.Errorf("the progress line was not erased at the end: %q", shown)
	}
	if strings.Contains(out.String(), "eval: runs") {
		t.Errorf("the progress reached stdout: %q", out.String())
	}
}
