package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/report"
	"github.com/retrace-dev/retrace/terminal"
)

// The prompts of the interactive query prompt. The continuation prompt is
// as wide as the main one, so the lines of a statement stay aligned.
const (
	promptMain = "retrace> "
	promptMore = "    ...> "
)

const replHelp = `Statements end with ; and may span lines. Ctrl-C cancels the statement being
typed or the query running; Ctrl-D or .quit leaves.
  .tables          the views, their rows and columns
  .schema NAME     the columns of a view and their types
  .metrics         the named metrics
  .metric NAME     run a named metric
  .format [FMT]    show or set the output format: table, csv, json, markdown
  .help            this text
  .quit, .exit     leave
`

// errInterrupted is what a lineSource returns when the person pressed
// Ctrl-C while typing: the statement typed so far is dropped.
var errInterrupted = errors.New("interrupted")

// lineSource is where the prompt's input comes from: a terminal with line
// editing, or any reader.
type lineSource interface {
	// readLine returns the next line, without its end of line, after
	// showing prompt where the source shows prompts. It returns io.EOF when
	// the input ends and errInterrupted (with what was typed) on Ctrl-C.
	readLine(prompt string) (string, error)
}

// repl is one session of the interactive query prompt.
type repl struct {
	db     *metrics.DB
	src    lineSource
	out    io.Writer
	format string
	now    func() time.Time
	// interruptible derives the context one statement runs under, so that
	// Ctrl-C cancels that statement and not the session; nil means nothing
	// but the session's context cancels it.
	interruptible func(context.Context) (context.Context, context.CancelFunc)
	// echoesCtrlC is set when the terminal echoes a Ctrl-C as ^C, so that
	// the word cancelled goes on the next line.
	echoesCtrlC bool
}

// runREPL runs the query prompt over any reader and writer: statements
// and dot commands are read from in, results and errors written to out, in
// format until a .format command changes it. No prompts are shown; the
// terminal front end is runTerminalREPL. now is the clock the statement
// times are taken with (time.Now when nil).
func runREPL(ctx context.Context, db *metrics.DB, in io.Reader, out io.Writer, format string, now func() time.Time) error {
	if now == nil {
		now = time.Now
	}
	r := &repl{db: db, src: newScanSource(in, nil), out: out, format: format, now: now}
	return r.loop(ctx)
}

// runQueryPrompt loads the runs that opts names and opens the query prompt
// on the terminal that sys.In is.
func runQueryPrompt(ctx context.Context, sys *IO, opts *queryOptions) error {
	if err := opts.format.check(); err != nil {
		return err
	}
	db, err := openAndLoad(ctx, sys, opts.dbPath, opts.loadFlags, opts.paths)
	if err != nil {
		return err
	}
	defer db.Close()
	return runTerminalREPL(ctx, sys, db, opts.format.value)
}

// terminalFd returns the file descriptor of f when it is a terminal.
func terminalFd(f any) (int, bool) {
	file, ok := f.(*os.File)
	if !ok || file == nil {
		return 0, false
	}
	fd := int(file.Fd())
	return fd, term.IsTerminal(fd)
}

// stdinIsTerminal reports whether the query prompt can open on sys.In.
func stdinIsTerminal(sys *IO) bool {
	_, ok := terminalFd(sys.In)
	return ok
}

// runTerminalREPL runs the query prompt on the terminal sys.In: raw mode
// with line editing and in-memory history when sys.Out is the terminal too,
// plain lines with the prompts on stderr when stdout is redirected. The
// terminal's mode is restored on the way out.
func runTerminalREPL(ctx context.Context, sys *IO, db *metrics.DB, format string) error {
	inFd, ok := terminalFd(sys.In)
	if !ok {
		return errors.New("the interactive query prompt needs stdin to be a terminal; give the SQL as an argument instead")
	}
	r := &repl{db: db, out: sys.Out, format: format, now: sys.Now}
	if r.now == nil {
		r.now = time.Now
	}
	outFd, outIsTerminal := terminalFd(sys.Out)
	if !outIsTerminal {
		// In cooked mode the terminal itself turns Ctrl-C into SIGINT.
		r.src = newScanSource(sys.In, sys.Err)
		r.interruptible = interruptOnSIGINT
		fmt.Fprint(sys.Err, replGreeting)
		return r.loop(ctx)
	}

	cooked, err := term.MakeRaw(inFd)
	if err != nil {
		return fmt.Errorf("open the query prompt: put the terminal in raw mode: %w", err)
	}
	defer term.Restore(inFd, cooked)
	keys := &ctrlCReader{r: sys.In}
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{keys, sys.Out}, promptMain)
	t.History = &history{keys: keys}
	src := &termSource{t: t, keys: keys, outFd: outFd}
	r.src, r.out, r.echoesCtrlC = src, t, true
	// A running query is not reading keys, so Ctrl-C must reach it as a
	// signal: the terminal goes back to cooked mode while a statement runs.
	r.interruptible = func(ctx context.Context) (context.Context, context.CancelFunc) {
		sctx, stop := interruptOnSIGINT(ctx)
		if err := term.Restore(inFd, cooked); err != nil {
			src.err = fmt.Errorf("query prompt: restore the terminal mode: %w", err)
		}
		return sctx, func() {
			if _, err := term.MakeRaw(inFd); err != nil {
				src.err = fmt.Errorf("query prompt: put the terminal back in raw mode: %w", err)
			}
			stop()
		}
	}
	fmt.Fprint(t, replGreeting)
	err = r.loop(ctx)
	if src.eof {
		// Ctrl-D leaves the cursor after the prompt.
		io.WriteString(sys.Out, "\r\n")
	}
	return err
}

// interruptOnSIGINT returns a context that SIGINT cancels, until stop is
// called: a cooked-mode terminal sends SIGINT on Ctrl-C.
func interruptOnSIGINT(ctx context.Context) (sctx context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt)
}

const replGreeting = "retrace query prompt: statements end with ;  .help lists the commands, Ctrl-D leaves.\n"

// loop reads statements and dot commands until the input ends or .quit.
// Errors of statements are printed and never end the session.
func (r *repl) loop(ctx context.Context) error {
	var pending string // the statement typed so far, without its ;
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		prompt := promptMain
		if pending != "" {
			prompt = promptMore
		}
		line, err := r.src.readLine(prompt)
		switch {
		case errors.Is(err, errInterrupted):
			if pending == "" && strings.TrimSpace(line) == "" {
				fmt.Fprintln(r.out, "(.quit or Ctrl-D leaves the prompt)")
			}
			pending = ""
			continue
		case errors.Is(err, io.EOF):
			if strings.TrimSpace(pending+line) != "" {
				fmt.Fprintln(r.out, "the last statement did not end with ; and was not run")
			}
			return nil
		case err != nil:
			return err
		}
		if pending == "" && strings.HasPrefix(strings.TrimSpace(line), ".") {
			if r.dot(ctx, strings.TrimSpace(line)) {
				return nil
			}
			continue
		}
		var stmts []string
		stmts, pending = splitStatements(pending + line + "\n")
		for _, s := range stmts {
			r.show(ctx, func(ctx context.Context) (metrics.Table, error) { return r.db.Query(ctx, s) })
		}
	}
}

// show runs one statement or metric under an interruptible context and
// prints its result, or its error, and then the row count and time.
func (r *repl) show(ctx context.Context, query func(context.Context) (metrics.Table, error)) {
	sctx, stop := context.WithCancel(ctx)
	if r.interruptible != nil {
		sctx, stop = r.interruptible(ctx)
	}
	start := r.now()
	t, err := query(sctx)
	elapsed := r.now().Sub(start)
	cancelled := sctx.Err() != nil && ctx.Err() == nil
	stop()
	if err != nil {
		if cancelled {
			if r.echoesCtrlC {
				fmt.Fprintln(r.out)
			}
			fmt.Fprintln(r.out, "cancelled")
			return
		}
		// DuckDB's message may quote the data (a value it could not cast).
		fmt.Fprintln(r.out, terminal.Text(strings.TrimRight(err.Error(), "\n")))
		return
	}
	if len(t.Columns) > 0 {
		if err := report.WriteTable(r.out, r.format, t); err != nil {
			fmt.Fprintf(r.out, "writing the result: %v\n", err)
			return
		}
	}
	fmt.Fprintf(r.out, "(%s, %d ms)\n", plural(len(t.Rows), "row"), elapsed.Milliseconds())
}

// dot runs a dot command and reports whether it asks to leave.
func (r *repl) dot(ctx context.Context, line string) (quit bool) {
	// A ; out of habit after a dot command is not part of it.
	line = strings.TrimSpace(strings.TrimSuffix(line, ";"))
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case ".quit", ".exit":
		return true
	case ".help":
		io.WriteString(r.out, replHelp)
	case ".tables":
		r.show(ctx, r.db.Views)
	case ".schema":
		if arg == "" {
			fmt.Fprintln(r.out, ".schema needs the name of a view, e.g. .schema tool_calls; .tables lists them")
			return false
		}
		r.show(ctx, func(ctx context.Context) (metrics.Table, error) { return r.db.Describe(ctx, arg) })
	case ".metrics":
		if err := report.WriteTable(r.out, r.format, metricList()); err != nil {
			fmt.Fprintf(r.out, "writing the list: %v\n", err)
		}
	case ".metric":
		if arg == "" {
			fmt.Fprintf(r.out, ".metric needs a metric's name, one of %s\n", strings.Join(metrics.Metrics(), ", "))
			return false
		}
		r.show(ctx, func(ctx context.Context) (metrics.Table, error) { return r.db.Metric(ctx, arg) })
	case ".format":
		switch {
		case arg == "":
			fmt.Fprintf(r.out, "format %s\n", r.format)
		case slices.Contains(tableFormats, arg):
			r.format = arg
		default:
			fmt.Fprintf(r.out, "unknown format %q; use one of %s\n", arg, strings.Join(tableFormats, ", "))
		}
	default:
		fmt.Fprintf(r.out, "unknown command %s; .help lists the commands\n", name)
	}
	return false
}

// metricList is the named metrics with what each counts.
func metricList() metrics.Table {
	t := metrics.Table{Columns: []string{"metric", "counts"}}
	for _, name := range metrics.Metrics() {
		about, err := metrics.About(name)
		if err != nil {
			about = err.Error()
		}
		t.Rows = append(t.Rows, []any{name, about})
	}
	return t
}

// splitStatements returns the complete statements at the start of text,
// each ending with its ;, and the unfinished rest. A ; inside a quoted
// string or identifier or a comment does not end a statement. Statements
// of only comments are dropped, and so is a rest of only blanks and
// comments, so that a trailing comment does not hold the prompt open.
func splitStatements(text string) (stmts []string, rest string) {
	start := 0
	code := false // the current statement has more than blanks and comments
	var quote byte
	lineComment, blockComment := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		next := byte(0)
		if i+1 < len(text) {
			next = text[i+1]
		}
		switch {
		case quote != 0:
			// A doubled quote closes and reopens, which is the same.
			if c == quote {
				quote = 0
			}
		case lineComment:
			lineComment = c != '\n'
		case blockComment:
			if c == '*' && next == '/' {
				blockComment = false
				i++
			}
		case c == '-' && next == '-':
			lineComment = true
			i++
		case c == '/' && next == '*':
			blockComment = true
			i++
		case c == '\'' || c == '"':
			quote, code = c, true
		case c == ';':
			if code {
				stmts = append(stmts, strings.TrimSpace(text[start:i+1]))
			}
			start, code = i+1, false
		case c != ' ' && c != '\t' && c != '\n' && c != '\r':
			code = true
		}
	}
	if !code && quote == 0 && !blockComment {
		return stmts, ""
	}
	return stmts, text[start:]
}

// scanSource reads lines from any reader, writing the prompts to prompts
// when it is not nil.
type scanSource struct {
	sc      *bufio.Scanner
	prompts io.Writer
}

func newScanSource(in io.Reader, prompts io.Writer) *scanSource {
	sc := bufio.NewScanner(in)
	// A pasted statement can be one long line.
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	return &scanSource{sc: sc, prompts: prompts}
}

func (s *scanSource) readLine(prompt string) (string, error) {
	if s.prompts != nil {
		io.WriteString(s.prompts, prompt)
	}
	if s.sc.Scan() {
		return strings.TrimSuffix(s.sc.Text(), "\r"), nil
	}
	if err := s.sc.Err(); err != nil {
		return "", fmt.Errorf("query prompt: read the input: %w", err)
	}
	return "", io.EOF
}

// termSource reads lines from a terminal in raw mode with line editing.
type termSource struct {
	t     *term.Terminal
	keys  *ctrlCReader
	outFd int
	width int
	// err is a failure to switch the terminal's mode around a statement,
	// reported by the next readLine.
	err error
	// eof is set when the person left with Ctrl-D.
	eof bool
}

func (s *termSource) readLine(prompt string) (string, error) {
	if s.err != nil {
		return "", s.err
	}
	// The window may have been resized while the last statement ran.
	if w, h, err := term.GetSize(s.outFd); err == nil && w != s.width {
		s.width = w
		s.t.SetSize(w, h)
	}
	s.t.SetPrompt(prompt)
	line, err := s.t.ReadLine()
	if errors.Is(err, io.EOF) {
		s.eof = true
		return "", io.EOF
	}
	if err != nil {
		return "", fmt.Errorf("query prompt: read the terminal: %w", err)
	}
	if typed, ok := strings.CutSuffix(line, ctrlCMark); ok && s.keys.takeInterrupt() {
		return typed, errInterrupted
	}
	return line, nil
}

// ctrlCMark is what Ctrl-C shows at the end of the abandoned line.
const ctrlCMark = "^C"

// ctrlCKeys replace a Ctrl-C in the input: end of line (^E), the mark, and
// Enter. term.Terminal takes Ctrl-C for the end of the input and would
// leave the prompt; typed this way, it ends the line on screen as a shell
// does, and readLine recognises the mark.
var ctrlCKeys = []byte("\x05" + ctrlCMark + "\r")

// ctrlCReader passes terminal input through, replacing each Ctrl-C with
// ctrlCKeys and counting them.
type ctrlCReader struct {
	r       io.Reader
	pending []byte
	err     error

	mu         sync.Mutex
	interrupts int
}

func (c *ctrlCReader) Read(b []byte) (int, error) {
	if len(c.pending) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		buf := make([]byte, len(b))
		n, err := c.r.Read(buf)
		c.err = err
		for _, k := range buf[:n] {
			if k == 3 {
				c.pending = append(c.pending, ctrlCKeys...)
				c.mu.Lock()
				c.interrupts++
				c.mu.Unlock()
				continue
			}
			c.pending = append(c.pending, k)
		}
		if len(c.pending) == 0 {
			c.err = nil
			return 0, err
		}
	}
	n := copy(b, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// takeInterrupt consumes one counted Ctrl-C, reporting whether there was one.
func (c *ctrlCReader) takeInterrupt() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.interrupts == 0 {
		return false
	}
	c.interrupts--
	return true
}

// interrupted reports whether a Ctrl-C is counted and not yet taken.
func (c *ctrlCReader) interrupted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.interrupts > 0
}

// history is the in-memory line history of the terminal prompt (the up and
// down keys), without blank lines and lines abandoned with Ctrl-C.
type history struct {
	keys    *ctrlCReader
	entries []string // oldest first
}

const historySize = 1000

func (h *history) Add(entry string) {
	if strings.TrimSpace(entry) == "" || (strings.HasSuffix(entry, ctrlCMark) && h.keys.interrupted()) {
		return
	}
	if n := len(h.entries); n > 0 && h.entries[n-1] == entry {
		return
	}
	if len(h.entries) == historySize {
		h.entries = h.entries[1:]
	}
	h.entries = append(h.entries, entry)
}

func (h *history) Len() int { return len(h.entries) }

func (h *history) At(idx int) string { return h.entries[len(h.entries)-1-idx] }

// opensPrompt reports whether retrace query with args opens the prompt:
// stdin is a terminal and there is no SQL, that is no arguments or a first
// argument that is an existing path and does not look like SQL (in which
// case every argument is a path of runs).
func opensPrompt(sys *IO, args []string) bool {
	if !stdinIsTerminal(sys) {
		return false
	}
	if len(args) == 0 {
		return true
	}
	if strings.ContainsAny(args[0], " \t\r\n;()") {
		return false
	}
	_, err := os.Stat(args[0])
	return err == nil
}
