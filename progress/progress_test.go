package progress

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clock is a fake clock the test moves by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// screen is a fake terminal: it keeps what was written and replays the
// carriage returns and erase-line sequences to tell what a person sees.
type screen struct{ raw strings.Builder }

func (s *screen) Write(b []byte) (int, error) { return s.raw.Write(b) }

// visible is the screen's text: finished lines, then the current line.
func (s *screen) visible() string {
	var lines []string
	cur := ""
	raw := s.raw.String()
	for len(raw) > 0 {
		switch {
		case strings.HasPrefix(raw, "\x1b[K"):
			raw = raw[3:]
		case raw[0] == '\r':
			cur, raw = "", raw[1:]
		case raw[0] == '\n':
			lines, cur, raw = append(lines, cur), "", raw[1:]
		default:
			cur, raw = cur+raw[:1], raw[1:]
		}
	}
	return strings.Join(append(lines, cur), "\n")
}

func TestTerminalRedrawsOneLineInPlaceAndErasesIt(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	var s screen
	p := New(&s, "replaying", Options{Mode: Terminal, Now: c.now})
	c.advance(1500 * time.Millisecond)
	p.Update(1, 4, 0)
	if got, want := s.raw.String(), "\rreplaying: 1/4, 1s\x1b[K"; got != want {
		t.Fatalf("first draw %q, want %q", got, want)
	}
	// Within a tenth of a second of the last draw nothing is redrawn.
	c.advance(50 * time.Millisecond)
	p.Update(2, 4, 1)
	if strings.Contains(s.raw.String(), "2/4") {
		t.Fatalf("redrawn within 100ms: %q", s.raw.String())
	}
	c.advance(100 * time.Millisecond)
	p.Update(3, 4, 1)
	if got, want := s.visible(), "replaying: 3/4, 1 failed, 1s"; got != want {
		t.Fatalf("the screen shows %q, want %q", got, want)
	}
	// A result written above the line does not run into it.
	p.Above(func() { s.Write([]byte("FAIL a.jsonl\n")) })
	if got, want := s.visible(), "FAIL a.jsonl\nreplaying: 3/4, 1 failed, 1s"; got != want {
		t.Fatalf("after a result the screen shows %q, want %q", got, want)
	}
	// The last item is always drawn, however soon.
	p.Update(4, 4, 1)
	if got, want := s.visible(), "FAIL a.jsonl\nreplaying: 4/4, 1 failed, 1s"; got != want {
		t.Fatalf("the screen shows %q, want %q", got, want)
	}
	p.Finish()
	if got, want := s.visible(), "FAIL a.jsonl\n"; got != want {
		t.Fatalf("after Finish the screen shows %q, want %q", got, want)
	}
	if strings.Count(s.raw.String(), "\n") != 1 {
		t.Fatalf("the progress wrote newlines of its own: %q", s.raw.String())
	}
}

func TestTerminalShowsNothingBelowMin(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	var s screen
	p := New(&s, "importing", Options{Mode: Terminal, Min: 50, Now: c.now})
	for i := 1; i <= 10; i++ {
		c.advance(time.Second)
		p.Update(i, 10, 0)
	}
	p.Above(func() {})
	p.Finish()
	if s.raw.Len() != 0 {
		t.Fatalf("10 items under a minimum of 50 drew %q", s.raw.String())
	}
}

func TestTerminalPhaseCountsAfreshAndKeepsTheClock(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	var s screen
	p := New(&s, "diff: comparing metrics", Options{Mode: Terminal, Now: c.now})
	p.Update(13, 13, 0)
	c.advance(75 * time.Second)
	p.Phase("diff: A/A calibration")
	if got := s.visible(); got != "" {
		t.Fatalf("a new phase left %q on the screen", got)
	}
	p.Update(1, 20, 0)
	if got, want := s.visible(), "diff: A/A calibration: 1/20, 1m15s"; got != want {
		t.Fatalf("the screen shows %q, want %q", got, want)
	}
}

func TestPlainWritesALineEveryPeriodAndALastOne(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	var out strings.Builder
	p := New(&out, "eval", Options{Mode: Plain, Now: c.now})
	for i := 1; i <= 5; i++ {
		c.advance(4 * time.Second)
		failed := 0
		if i >= 3 {
			failed = 1
		}
		p.Update(i, 5, failed)
	}
	p.Finish()
	// 12 s: the first line; 20 s: the end, 8 s later, is a last line.
	want := "eval: 3/5, 1 failed, 12s\neval: 5/5, 1 failed, 20s\n"
	if out.String() != want {
		t.Fatalf("plain lines %q, want %q", out.String(), want)
	}
	if strings.ContainsAny(out.String(), "\r\x1b") {
		t.Fatalf("plain lines hold terminal controls: %q", out.String())
	}
}

func TestPlainShortWorkWritesNothing(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	var out strings.Builder
	p := New(&out, "importing", Options{Now: c.now}) // Auto on a non-terminal
	for i := 1; i <= 100; i++ {
		c.advance(10 * time.Millisecond)
		p.Update(i, 100, 0)
	}
	p.Finish()
	if out.Len() != 0 {
		t.Fatalf("one second of work wrote %q", out.String())
	}
}

func TestPlainEveryItems(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	var out strings.Builder
	opts := Options{Now: c.now}
	if err := ParseEvery("2", &opts); err != nil {
		t.Fatal(err)
	}
	p := New(&out, "replayed", opts)
	for i := 1; i <= 5; i++ {
		p.Update(i, 5, 0)
	}
	p.Finish()
	want := "replayed: 2/5, 0s\nreplayed: 4/5, 0s\nreplayed: 5/5, 0s\n"
	if out.String() != want {
		t.Fatalf("plain lines %q, want %q", out.String(), want)
	}
}

func TestParseEvery(t *testing.T) {
	for _, c := range []struct {
		in    string
		every time.Duration
		items int
		mode  Mode
	}{
		{"", 0, 0, Auto}, {"30s", 30 * time.Second, 0, Auto}, {"25", 0, 25, Auto}, {" 1m ", time.Minute, 0, Auto}, {"off", 0, 0, Off},
	} {
		var o Options
		if err := ParseEvery(c.in, &o); err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if o.Every != c.every || o.EveryItems != c.items || o.Mode != c.mode {
			t.Fatalf("%q gave %+v", c.in, o)
		}
	}
	for _, bad := range []string{"0", "-3", "soon", "-5s", "0s"} {
		var o Options
		if err := ParseEvery(bad, &o); !errors.Is(err, ErrBadEvery) {
			t.Fatalf("%q: error %v, want ErrBadEvery", bad, err)
		}
	}
}

func TestOffShowsNothing(t *testing.T) {
	var out strings.Builder
	p := New(&out, "x", Options{Mode: Off, EveryItems: 1})
	p.Update(1, 1, 1)
	ran := false
	p.Above(func() { ran = true })
	p.Finish()
	if out.Len() != 0 || !ran {
		t.Fatalf("off wrote %q, ran the write above it: %v", out.String(), ran)
	}
}

func TestIsTerminalOfAFile(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || IsTerminal(&strings.Builder{}) {
		t.Fatal("a file or a buffer taken for a terminal")
	}
}
