// Package progress shows how far long work counted in items has come
// (sessions imported, scenarios run, recordings replayed, metrics
// compared): done of total, the failures so far and the time spent, on a
// stream that is usually stderr, so the results on stdout stay clean.
//
// On a terminal it is one line, redrawn in place with a carriage return
// at most ten times a second and erased when the work ends, so the screen
// keeps only the results. Anywhere else (a CI log, a pipe, a file) a
// redrawn line would pile up as garbage, so it writes a plain line now
// and then instead: one every Every (default 10 s) and, when EveryItems is
// set, one every that many items, and a last one when the work ends if it
// wrote any before. Short work thus prints nothing in a log.
//
// Results that stream while the line is drawn go through Above, which
// erases the line, lets the caller write, and draws it again.
package progress

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// DefaultEvery is the time between two plain lines.
const DefaultEvery = 10 * time.Second

// redrawEvery is the least time between two redraws of a terminal line:
// faster is flicker, not information.
const redrawEvery = 100 * time.Millisecond

// Mode says how the progress is shown.
type Mode int

const (
	// Auto draws a line in place when the writer is a terminal and writes
	// plain lines otherwise.
	Auto Mode = iota
	// Terminal always draws the line in place.
	Terminal
	// Plain always writes plain lines.
	Plain
	// Off shows nothing.
	Off
)

// Options tune a Printer; the zero value is Auto with plain lines every
// DefaultEvery.
type Options struct {
	Mode Mode
	// Min is the least total worth a line drawn on a terminal; below it
	// the work is too quick to follow. Plain lines are timed instead, so
	// they do not need it.
	Min int
	// Every is the time between plain lines; 0 is DefaultEvery.
	Every time.Duration
	// EveryItems, when above 0, also writes a plain line every that many
	// items.
	EveryItems int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// ErrBadEvery is wrapped by ParseEvery's errors.
var ErrBadEvery = errors.New("not a progress period")

// ParseEvery reads the period of plain lines as a user gives it (the
// RETRACE_PROGRESS environment variable): a duration ("30s") for a line
// every that long, a whole number ("25") for a line every that many
// items, or "off" for none. "" leaves opts as they are.
func ParseEvery(s string, opts *Options) error {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return nil
	case s == "off":
		opts.Mode = Off
		return nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 {
			return fmt.Errorf("%q: %w: give a number of items above 0, a duration such as 30s, or off", s, ErrBadEvery)
		}
		opts.EveryItems = n
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("%q: %w: give a duration such as 30s, a number of items such as 25, or off", s, ErrBadEvery)
	}
	opts.Every = d
	return nil
}

// IsTerminal reports whether w writes to a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && f != nil && term.IsTerminal(int(f.Fd()))
}

// Printer shows the progress of one piece of work. Its methods may be
// called from several goroutines.
type Printer struct {
	w             io.Writer
	opts          Options
	terminal, off bool

	mu    sync.Mutex
	label string
	start time.Time
	// The last update.
	done, total, failed int
	// drawn is set while a terminal line is on the screen; drawnAt is
	// when it was drawn.
	drawn   bool
	drawnAt time.Time
	// lines counts the plain lines written; lineAt and lineDone are when
	// the last one was written and the count it showed.
	lines    int
	lineAt   time.Time
	lineDone int
}

// New returns a Printer of the work named label ("importing
// transcripts"), which starts now.
func New(w io.Writer, label string, opts Options) *Printer {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Every <= 0 {
		opts.Every = DefaultEvery
	}
	p := &Printer{w: w, opts: opts, label: label}
	switch opts.Mode {
	case Auto:
		p.terminal = IsTerminal(w)
	case Terminal:
		p.terminal = true
	case Off:
		p.off = true
	}
	p.start = opts.Now()
	p.lineAt = p.start
	return p
}

// Terminal reports whether the progress is a line drawn in place, above
// which results can be listed as they come (Above); plain lines are for
// logs, where the results are printed once at the end.
func (p *Printer) Terminal() bool { return p.terminal && !p.off }

// Update says that done of total items are done, failed of them failed.
func (p *Printer) Update(done, total, failed int) {
	if p.off {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.total, p.failed = done, total, failed
	now := p.opts.Now()
	if p.terminal {
		if total >= p.opts.Min && (!p.drawn || now.Sub(p.drawnAt) >= redrawEvery || done == total) {
			p.draw(now)
		}
		return
	}
	if now.Sub(p.lineAt) >= p.opts.Every || (p.opts.EveryItems > 0 && done-p.lineDone >= p.opts.EveryItems) {
		p.line(now)
	}
}

// Phase starts the next part of the work, named label, whose items are
// counted afresh; the time spent runs on.
func (p *Printer) Phase(label string) {
	if p.off {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.erase()
	p.label = label
	p.done, p.total, p.failed, p.lineDone = 0, 0, 0, 0
}

// Above writes what write writes above the progress: on a terminal the
// line is erased first and drawn again after, so a result printed while
// the work goes on does not run into it. write gets no writer: it writes
// where it always does (stdout, or the Printer's own stream).
func (p *Printer) Above(write func()) {
	if p.off || !p.terminal {
		write()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.drawn
	p.erase()
	write()
	if was {
		p.draw(p.opts.Now())
	}
}

// Finish ends the work: a terminal line is erased; in plain mode a last
// line shows the end when earlier lines were written and did not.
func (p *Printer) Finish() {
	if p.off {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal {
		p.erase()
		return
	}
	if p.lines > 0 && p.lineDone != p.done {
		p.line(p.opts.Now())
	}
}

// status is the line's text: "label: 37/120, 2 failed, 12s".
func (p *Printer) status(now time.Time) string {
	var b strings.Builder
	b.WriteString(p.label)
	b.WriteString(": ")
	b.WriteString(strconv.Itoa(p.done))
	b.WriteByte('/')
	b.WriteString(strconv.Itoa(p.total))
	if p.failed > 0 {
		b.WriteString(", ")
		b.WriteString(strconv.Itoa(p.failed))
		b.WriteString(" failed")
	}
	b.WriteString(", ")
	b.WriteString(elapsed(now.Sub(p.start)))
	return b.String()
}

// draw redraws the terminal line: back to the start of the line, the
// status, and the rest of the old line erased (ESC [ K).
func (p *Printer) draw(now time.Time) {
	fmt.Fprintf(p.w, "\r%s\x1b[K", p.status(now))
	p.drawn, p.drawnAt = true, now
}

// erase clears the terminal line, if one is drawn.
func (p *Printer) erase() {
	if p.drawn {
		io.WriteString(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

// line writes a plain line.
func (p *Printer) line(now time.Time) {
	fmt.Fprintln(p.w, p.status(now))
	p.lines++
	p.lineAt, p.lineDone = now, p.done
}

// elapsed is d in whole seconds, or minutes and seconds from a minute on:
// "12s", "3m05s".
func elapsed(d time.Duration) string {
	s := int(d / time.Second)
	if s < 60 {
		return strconv.Itoa(s) + "s"
	}
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}
