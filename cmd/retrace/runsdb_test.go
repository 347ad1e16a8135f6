package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/metrics"
)

// sysFor returns the IO of a command whose stderr is w.
func sysFor(w io.Writer) *IO {
	return &IO{Err: w, Getenv: func(string) string { return "" }, Now: time.Now}
}

func TestTheLoadBarDrawsOnATerminalOnly(t *testing.T) {
	steps := []metrics.Progress{
		{Phase: "check", Done: 50, Total: 100}, {Phase: "check", Done: 100, Total: 100},
		{Phase: "load", Done: 50, Total: 100}, {Phase: "load", Done: 100, Total: 100},
	}
	t.Run("On a terminal both phases are drawn and cleared.", func(t *testing.T) {
		ptmx, tty := openPty(t)
		bar := newLoadBar(sysFor(tty))
		bar.min = 0
		for _, p := range steps {
			bar.update(p)
		}
		bar.finish()
		tty.Close()
		drawn, _ := io.ReadAll(ptmx)
		if !strings.HasSuffix(string(drawn), "                    \r") {
			t.Errorf("the bar was not cleared at the end: %q", drawn)
		}
		for _, want := range []string{"checking trajectories", "loading into DuckDB", "50%"} {
			if !strings.Contains(string(drawn), want) {
				t.Errorf("the terminal shows %q, without %q", drawn, want)
			}
		}
	})
	t.Run("An export's writing is counted in events, on a terminal from exportBarMin on.", func(t *testing.T) {
		ptmx, tty := openPty(t)
		bar := newLoadBar(sysFor(tty))
		bar.update(metrics.Progress{Phase: "export", Done: 50_000, Total: 2 * exportBarMin})
		bar.update(metrics.Progress{Phase: "export", Done: 2 * exportBarMin, Total: 2 * exportBarMin})
		tty.Close()
		drawn, _ := io.ReadAll(ptmx)
		if !strings.Contains(string(drawn), "export: events written: ") || !strings.Contains(string(drawn), "/200000") {
			t.Errorf("the terminal shows %q, without the export's description and events", drawn)
		}
		ptmx, tty = openPty(t)
		bar = newLoadBar(sysFor(tty))
		bar.update(metrics.Progress{Phase: "export", Done: exportBarMin - 1, Total: exportBarMin - 1})
		tty.Close()
		if drawn, _ := io.ReadAll(ptmx); len(drawn) != 0 {
			t.Errorf("an export of %d events drew %q", exportBarMin-1, drawn)
		}
	})
	t.Run("In a log an export's writing is a plain line now and then.", func(t *testing.T) {
		var buf bytes.Buffer
		sys := sysFor(&buf)
		sys.Getenv = func(k string) string { return map[string]string{progressEnv: "1"}[k] }
		bar := newLoadBar(sys)
		bar.update(metrics.Progress{Phase: "export", Done: 50_000, Total: 2 * exportBarMin})
		bar.update(metrics.Progress{Phase: "export", Done: 2 * exportBarMin, Total: 2 * exportBarMin})
		if !strings.Contains(buf.String(), "export: events written: 50000/200000") || !strings.HasSuffix(buf.String(), "\n") {
			t.Errorf("the log holds %q, want plain lines of the export's progress", buf.String())
		}
	})
	t.Run("A load smaller than the threshold draws nothing even on a terminal.", func(t *testing.T) {
		_, tty := openPty(t)
		bar := newLoadBar(sysFor(tty))
		bar.update(steps[0])
		if bar.bar != nil {
			t.Fatal("a bar was started for a 100-byte load")
		}
	})
	t.Run("A pipe or buffer gets nothing.", func(t *testing.T) {
		var buf bytes.Buffer
		bar := newLoadBar(sysFor(&buf))
		bar.min = 0
		for _, p := range steps {
			bar.update(p)
		}
		bar.finish()
		if buf.Len() != 0 {
			t.Fatalf("wrote %q to a non-terminal", buf.String())
		}
	})
}

// The count progress (import's files, the detectors' files) is drawn in
// place and erased on a terminal at or above its minimum; elsewhere short
// work writes nothing.
func TestTheCountProgressDrawsOnATerminalOnlyAtItsMinimum(t *testing.T) {
	t.Run("On a terminal it shows the count and is erased at the end.", func(t *testing.T) {
		ptmx, tty := openPty(t)
		bar := newCountProgress(sysFor(tty), "files read", 2)
		for done := 1; done <= 4; done++ {
			bar.update(done, 4)
		}
		bar.finish()
		tty.Close()
		drawn, _ := io.ReadAll(ptmx)
		if !strings.Contains(string(drawn), "files read: ") || !strings.Contains(string(drawn), "/4, ") {
			t.Errorf("the terminal shows %q, without the description and the count", drawn)
		}
		if !strings.HasSuffix(string(drawn), "\r\x1b[K") {
			t.Errorf("the line was not erased at the end: %q", drawn)
		}
	})
	t.Run("Fewer items than the minimum draw nothing even on a terminal.", func(t *testing.T) {
		ptmx, tty := openPty(t)
		bar := newCountProgress(sysFor(tty), "files read", 200)
		bar.update(1, 199)
		bar.finish()
		tty.Close()
		if drawn, _ := io.ReadAll(ptmx); len(drawn) != 0 {
			t.Fatalf("199 items under a minimum of 200 drew %q", drawn)
		}
	})
	t.Run("A pipe or buffer gets nothing for short work.", func(t *testing.T) {
		var buf bytes.Buffer
		bar := newCountProgress(sysFor(&buf), "files read", 1)
		bar.update(1, 1)
		bar.finish()
		if buf.Len() != 0 {
			t.Fatalf("wrote %q to a non-terminal", buf.String())
		}
	})
}
