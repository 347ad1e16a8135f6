package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A replay waiting for a named pipe's writer obeys SIGINT and SIGTERM: it
// reports the recording as interrupted and exits 130 or 143, as a shell
// says of a process the signal stopped.
func TestReplayOfAPipeWithNoWriterExitsOnSignal(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "retrace")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "rec.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: int(ExitInterrupted), syscall.SIGTERM: int(ExitTerminated)} {
		// The signal must come after the handler is in place; a loaded
		// machine may need longer, so a kill that came too early (the
		// default action: no exit code) is tried again, later.
		var code int
		var stdout, stderr bytes.Buffer
		for delay := 300 * time.Millisecond; delay < 10*time.Second; delay *= 2 {
			stdout.Reset()
			stderr.Reset()
			cmd := exec.Command(bin, "replay", fifo, "--out", filepath.Join(dir, "replays"))
			cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(delay)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("%v: the replay still waits for the pipe's writer", sig)
			}
			if code = cmd.ProcessState.ExitCode(); code != -1 {
				break
			}
		}
		if code != want || !strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("%v: exit %d, want %d; stdout %q stderr %q", sig, code, want, stdout.String(), stderr.String())
		}
	}
}
