package diff

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestAResultsPipeInAnOutDirectoryIsRefused checks an eval --out
// directory whose results.json is a named pipe: reading it would block
// until a writer came, past Ctrl-C. ResolveSide refuses it instead.
func TestAResultsPipeInAnOutDirectoryIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, ResultsFile)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, res, err := ResolveSide([]string{dir})
		if err == nil {
			_, err = ReadResults(res)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrSide) {
			t.Errorf("err = %v, want ErrSide naming the pipe", err)
		}
	case <-time.After(5 * time.Second):
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("reading a side whose results.json is a named pipe hangs")
	}
}
