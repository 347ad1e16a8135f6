package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/metrics"
)

func TestTheLoadBarDrawsOnATerminalOnly(t *testing.T) {
	steps := []metrics.Progress{
		{Phase: "check", Done: 50, Total: 100}, {Phase: "check", Done: 100, Total: 100},
		{Phase: "load", Done: 50, Total: 100}, {Phase: "load", Done: 100, Total: 100},
	}
	t.Run("On a terminal both phases are drawn and cleared.", func(t *testing.T) {
		ptmx, tty := openPty(t)
		bar := newLoadBar(tty)
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
	t.Run("A load smaller than the threshold draws nothing even on a terminal.", func(t *testing.T) {
		_, tty := openPty(t)
		bar := newLoadBar(tty)
		bar.update(steps[0])
		if bar.bar != nil {
			t.Fatal("a bar was started for a 100-byte load")
		}
	})
	t.Run("A pipe or buffer gets nothing.", func(t *testing.T) {
		var buf bytes.Buffer
		bar := newLoadBar(&buf)
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
