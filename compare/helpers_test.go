package compare

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// load decodes a fixture afresh, so each side of a comparison owns its
// payloads and editing one never changes the other.
func load(t testing.TB, name string) []trajectory.Event {
	t.Helper()
	path := filepath.Join("..", "trajectory", "testdata", "valid", name)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := trajectory.NewDecoder(f, path)
	var evs []trajectory.Event
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatalf("decode %s: %v", path, err)
		}
		evs = append(evs, ev)
	}
}

// revolatile changes everything a second run always changes: session id,
// seq numbers, timestamps and measured durations.
func revolatile(evs []trajectory.Event) []trajectory.Event {
	out := make([]trajectory.Event, 0, len(evs)+3)
	for i, ev := range evs {
		ev.Session = "20261201-120000.000-ffffffff"
		ev.Seq = int64(i) + 100
		ev.TS = ev.TS.Add(37*time.Hour + 123*time.Millisecond)
		switch p := ev.Payload.(type) {
		case *trajectory.ModelResponse:
			p.DurationMs += 11.5
			p.TTFTMs += 3
		case *trajectory.ToolEnd:
			p.DurationMs *= 3
		case *trajectory.HookRun:
			p.DurationMs += 1
		case *trajectory.ModelError:
			p.DurationMs += 2
		case *trajectory.SessionEnd:
			p.DurationMs += 1000
		}
		out = append(out, ev)
	}
	return out
}

// edit applies fn to every payload of type P.
func edit[P trajectory.Payload](evs []trajectory.Event, fn func(P)) []trajectory.Event {
	for _, ev := range evs {
		if p, ok := ev.Payload.(P); ok {
			fn(p)
		}
	}
	return evs
}

// without drops the events keep rejects.
func without(evs []trajectory.Event, drop func(trajectory.Event) bool) []trajectory.Event {
	var out []trajectory.Event
	for _, ev := range evs {
		if !drop(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// insertAfter puts ev right after the first event whose type is after.
func insertAfter(t testing.TB, evs []trajectory.Event, after trajectory.EventType, ev trajectory.Event) []trajectory.Event {
	for i, e := range evs {
		if e.Type() == after {
			out := append([]trajectory.Event{}, evs[:i+1]...)
			ev.Turn = e.Turn
			out = append(out, ev)
			return append(out, evs[i+1:]...)
		}
	}
	t.Fatalf("no %s event", after)
	return nil
}

func classes(r Result) []Class {
	var out []Class
	for _, d := range r.Divergences {
		out = append(out, d.Class)
	}
	return out
}
