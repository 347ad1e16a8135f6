//go:build unix

package recorder

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func TestSyncOnSignalPutsEmittedEventsOnDisk(t *testing.T) {
	r := create(t, Options{})
	stop := SyncOnSignal(r, syscall.SIGUSR1)
	defer stop()

	r.Emit(0, sessionStart())
	written := fileSize(t, r.Path())
	r.Emit(0, reminder("buffered until the signal"))
	if n := fileSize(t, r.Path()); n != written {
		t.Fatalf("the reminder was written before the signal (%d bytes, %d before it); the test needs it buffered", n, written)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		if evs := readEvents(t, r.Path()); len(evs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the events did not reach the file after SIGUSR1")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	stop() // stop is idempotent
}
