package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadRefusesANamedPipeInsteadOfHanging checks a suite directory
// holding a named pipe called *.txtar: reading it blocks until a writer
// comes, and a blocked open ignores Ctrl-C, so eval hung for good. Load
// refuses it as no scenario file. (A pipe named on the command line is
// read as the stream it was given as, <(…) being one.)
func TestLoadRefusesANamedPipeInsteadOfHanging(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ok.txtar"), []byte(minimal), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe.txtar")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	for _, arg := range []string{dir} {
		done := make(chan error, 1)
		go func() {
			_, err := Load(arg)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "pipe.txtar") || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("Load(%s) = %v, want a problem naming pipe.txtar as not a regular file", arg, err)
			}
		case <-time.After(5 * time.Second):
			// Unblock the open so that the test can end.
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
			t.Fatalf("Load(%s) hangs on a named pipe", arg)
		}
	}
}
