package recorder

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// SyncOnSignal makes r flush and fsync whenever the process receives one of
// sigs (os.Interrupt and SIGTERM when none are given), so that an
// interrupted session keeps every event already emitted, the batched ones
// included, even if the machine goes down next. It keeps listening until
// stop is called; stop is safe to call more than once. SIGKILL cannot be
// caught; what survives it is in the package doc.
//
// SyncOnSignal neither exits nor cancels anything: the caller (the CLI)
// still decides how to end the session, with its own signal.Notify or
// signal.NotifyContext, which receives the same signals. Note that, as with
// any signal.Notify, while SyncOnSignal is active the signals no longer
// terminate the process by default, so the caller must handle them.
func SyncOnSignal(r *Recorder, sigs ...os.Signal) (stop func()) {
	if len(sigs) == 0 {
		// signal.Notify with no signals would catch every signal.
		sigs = []os.Signal{os.Interrupt, syscall.SIGTERM}
	}
	ch := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(ch, sigs...)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ch:
				_ = r.Sync() // a failure is in r's stats; after Close there is nothing to sync
			case <-done:
				return
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			wg.Wait()
		})
	}
}
