package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/report"
)

// fixedClock makes every statement take 0 ms, so outputs compare exactly.
func fixedClock() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }

// loadFixtures opens an in-memory database with the valid fixtures loaded.
func loadFixtures(t *testing.T) *metrics.DB {
	t.Helper()
	ctx := context.Background()
	db, err := metrics.Open(ctx, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Load(ctx, fixtures+"/valid"); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestREPLRunsAScriptOfStatementsAndDotCommands(t *testing.T) {
	db := loadFixtures(t)
	for _, tc := range []struct {
		name   string
		script string
		// want is the whole output when set; contains are parts of it.
		want     string
		contains []string
	}{
		// The scripts start in csv, whose output does not depend on widths.
		{"A statement spread over several lines runs when its ; arrives.",
			"select count(*) AS n\nfrom tool_calls\n;\n",
			"n\n13\n(1 row, 0 ms)\n", nil},
		{"Two statements on one line both run, and a ; inside a string or a comment ends neither.",
			"select 'a;b' AS x; /* ; */ select 2 AS y; -- a ; comment\n",
			"x\na;b\n(1 row, 0 ms)\ny\n2\n(1 row, 0 ms)\n", nil},
		{"A bad statement prints DuckDB's message with its line and caret, and the next statement still runs.",
			"select count(* from tool_calls;\nselect 1 AS one;\n",
			"query: Parser Error: syntax error at or near \"from\"\n\nLINE 1: select count(* from tool_calls;\n                       ^\none\n1\n(1 row, 0 ms)\n", nil},
		{".format switches how the following results are written, through table, csv, json and markdown.",
			".format table\nselect 1 AS a, 'x' AS b;\n.format csv\nselect 1 AS a, 'x' AS b;\n.format json\nselect 1 AS a;\n.format markdown\nselect 1 AS a;\n.format\n",
			"", []string{rendered("table", metrics.Table{Columns: []string{"a", "b"}, Rows: [][]any{{int32(1), "x"}}}) + "(1 row, 0 ms)\na,b\n1,x\n(1 row, 0 ms)\n[\n  {\n    \"a\": 1\n  }\n]\n(1 row, 0 ms)\n| a |\n| --- |\n| 1 |\n(1 row, 0 ms)\nformat markdown\n"}},
		{"An unknown format is refused and the format stays what it was.",
			".format xml\nselect 1 AS a;\n",
			"unknown format \"xml\"; use one of table, csv, json, markdown\na\n1\n(1 row, 0 ms)\n", nil},
		{".quit ends the session and nothing after it runs.",
			"select 1 AS a;\n.quit\nselect 2 AS b;\n",
			"a\n1\n(1 row, 0 ms)\n", nil},
		{".exit ends the session too, even written with a ;.",
			".exit;\nselect 2 AS b;\n",
			"", nil},
		{"An unfinished statement at the end of the input is reported and not run.",
			"select 1 AS a;\nselect 2\n",
			"a\n1\n(1 row, 0 ms)\nthe last statement did not end with ; and was not run\n", nil},
		{"A line starting with a dot inside a statement is SQL, not a command.",
			"select 1\n.5 AS x;\n",
			"", []string{"Parser Error"}},
		{"An unknown dot command names itself and points to .help.",
			".bogus\n.help\n",
			"", []string{"unknown command .bogus; .help lists the commands", ".schema NAME", ".metric NAME", "Ctrl-D"}},
		{".tables lists the views from the catalog with their rows, including a view made in the session.",
			"create view mine as select 1 AS a union all select 2;\n.format csv\n.tables\n",
			"", []string{"view,rows,columns\n", "\nevents,113,", "\ntool_calls,13,24\n", "\nsessions,7,", "\nmine,2,1\n"}},
		{".schema lists the columns of a view with their types, and a missing view is named.",
			".format csv\n.schema tool_calls\n.schema nope\n.schema\n",
			"", []string{"column,type\nsession,VARCHAR\nturn,INTEGER\n", "\nran,BOOLEAN\nduration_ms,DOUBLE\n", "(24 rows, 0 ms)",
				`no view named "nope"; .tables lists the views`, ".schema needs the name of a view"}},
		{".metrics lists every named metric with what it counts.",
			".format csv\n.metrics\n",
			"", append([]string{"metric,counts\n", "funnel,\"in total (tool '(all)', first) and per tool label, what became of the tool calls (the glossary's terms, doc.go).\"\n"}, metrics.Metrics()...)},
		{".metric runs a named metric, and an unknown name lists the known ones.",
			".format csv\n.metric funnel\n.metric nope\n.metric\n",
			"", []string{"tool,calls,denied,ran,successes,failures,lost\n(all),13,2,9,7,6,0\nbash,5,2,2,0,5,0\nread,7,0,7,7,0,0\nwrite,1,0,0,0,1,0\n(4 rows, 0 ms)\n",
				`unknown metric "nope"; use one of cache,`, ".metric needs a metric's name, one of cache,"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := runREPL(context.Background(), db, strings.NewReader(tc.script), &out, "csv", fixedClock); err != nil {
				t.Fatalf("runREPL: %v", err)
			}
			got := out.String()
			if tc.want != "" || tc.contains == nil {
				if got != tc.want {
					t.Fatalf("output:\n%s\nwant:\n%s", got, tc.want)
				}
			}
			for _, c := range tc.contains {
				if !strings.Contains(got, c) {
					t.Errorf("output:\n%s\ndoes not contain %q", got, c)
				}
			}
		})
	}
}

// rendered is t as writeTable writes it in format.
func rendered(format string, t metrics.Table) string {
	var b strings.Builder
	report.WriteTable(&b, format, t)
	return b.String()
}

func TestSplitStatements(t *testing.T) {
	for _, tc := range []struct {
		name  string
		text  string
		stmts []string
		rest  string
	}{
		{"A line without ; is kept as the unfinished rest.", "select 1\n", nil, "select 1\n"},
		{"A ; ends the statement and nothing is left.", "select 1;\n", []string{"select 1;"}, ""},
		{"Blanks around statements are trimmed.", "  select 1 ;  select 2;\n", []string{"select 1 ;", "select 2;"}, ""},
		{"A ; in a string does not end the statement.", "select 'a;b'\n", nil, "select 'a;b'\n"},
		{"A doubled quote stays inside the string.", "select 'it''s;';\n", []string{"select 'it''s;';"}, ""},
		{"A ; in a quoted identifier does not end the statement.", "select 1 AS \"a;b\";", []string{"select 1 AS \"a;b\";"}, ""},
		{"A ; in a line comment does not end the statement.", "select 1 -- no;\n", nil, "select 1 -- no;\n"},
		{"A ; in a block comment does not end the statement.", "select /* ; */ 1;", []string{"select /* ; */ 1;"}, ""},
		{"A comment after the last ; is dropped, so the prompt does not wait for more.", "select 1; -- done\n", []string{"select 1;"}, ""},
		{"An open block comment keeps the prompt waiting.", "select 1; /* more\n", []string{"select 1;"}, " /* more\n"},
		{"An open string keeps the prompt waiting.", "select 'a\n", nil, "select 'a\n"},
		{"A lone ; runs nothing.", " ; \n", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stmts, rest := splitStatements(tc.text)
			if !reflect.DeepEqual(stmts, tc.stmts) || rest != tc.rest {
				t.Fatalf("splitStatements(%q) = %q, %q; want %q, %q", tc.text, stmts, rest, tc.stmts, tc.rest)
			}
		})
	}
}

func TestREPLCtrlCCancelsTheRunningQueryAndTheSessionGoesOn(t *testing.T) {
	db := loadFixtures(t)
	var out bytes.Buffer
	statements := 0
	r := &repl{db: db, out: &out, format: "csv", now: fixedClock,
		src: newScanSource(strings.NewReader("select sum(i) AS s from range(1000000000000) t(i);\nselect 1 AS after;\n"), nil),
		// The real SIGINT path, with the signal a terminal sends on Ctrl-C
		// sent by the test while the long query runs.
		interruptible: func(ctx context.Context) (context.Context, context.CancelFunc) {
			sctx, stop := interruptOnSIGINT(ctx)
			if statements++; statements == 1 {
				// Received before stop, since the query cannot end by itself.
				time.AfterFunc(200*time.Millisecond, func() { syscall.Kill(os.Getpid(), syscall.SIGINT) })
			}
			return sctx, stop
		},
	}
	done := make(chan error, 1)
	go func() { done <- r.loop(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("loop: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the query was not cancelled by SIGINT")
	}
	if want := "cancelled\nafter\n1\n(1 row, 0 ms)\n"; out.String() != want {
		t.Fatalf("output %q, want %q", out.String(), want)
	}
}

// ptyOutput collects what a program writes to a pty, for waiting on.
type ptyOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (p *ptyOutput) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.Write(b)
}

func (p *ptyOutput) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// waitFor waits until the output holds want n times.
func (p *ptyOutput) waitFor(t *testing.T, want string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(p.String(), want) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal did not show %q %d times; it shows:\n%q", want, n, p.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openPty opens a pseudo-terminal, or skips the test where there is none.
func openPty(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close(); tty.Close() })
	return ptmx, tty
}

func TestQueryOpensThePromptOnATerminal(t *testing.T) {
	ptmx, tty := openPty(t)
	before, err := term.GetState(int(tty.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	screen := &ptyOutput{}
	go func() { _, _ = copyUntilClosed(screen, ptmx) }()
	var stderr bytes.Buffer
	sys := &IO{In: tty, Out: tty, Err: &stderr, Getenv: func(string) string { return "" }, Now: fixedClock}
	code := make(chan ExitCode, 1)
	// The first argument is a directory, not SQL: every argument is runs.
	go func() { code <- run(sys, []string{"query", fixtures + "/valid", "--format", "csv"}) }()

	// Each step waits for the n-th prompt (or text) before typing.
	steps := []struct {
		wait  string
		n     int
		typed string
	}{
		{promptMain, 1, "select 42\r"},
		{promptMore, 1, "AS answer;\r"},
		{promptMain, 2, "select 1234567 AS dropped\x03"}, // Ctrl-C abandons the line
		{promptMain, 3, "\x03"},                          // and on an empty line says how to leave
		{promptMain, 4, ".format json\r"},
		{promptMain, 5, "select 7 AS seven;\r"},
		{promptMain, 6, "\x1b[A\r"}, // the up key recalls the last line
	}
	for _, s := range steps {
		screen.waitFor(t, s.wait, s.n)
		if _, err := ptmx.Write([]byte(s.typed)); err != nil {
			t.Fatal(err)
		}
	}
	screen.waitFor(t, `"seven": 7`, 2)
	screen.waitFor(t, promptMain, 7)
	ptmx.Write([]byte{4}) // Ctrl-D leaves
	select {
	case c := <-code:
		if c != ExitOK {
			t.Fatalf("exit %d, stderr %q", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Ctrl-D did not end the prompt; the terminal shows:\n%q", screen.String())
	}
	got := screen.String()
	for _, want := range []string{"answer\r\n42\r\n(1 row, 0 ms)\r\n", "dropped^C\r\n", "(.quit or Ctrl-D leaves the prompt)"} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal does not show %q:\n%q", want, got)
		}
	}
	if strings.Contains(got, "1234567\r\n(1 row") {
		t.Errorf("the statement abandoned with Ctrl-C ran:\n%q", got)
	}
	if !strings.Contains(stderr.String(), "torn_last_line.jsonl:11: warning") {
		t.Errorf("stderr %q should carry the load's warnings", stderr.String())
	}
	after, err := term.GetState(int(tty.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatal("the terminal's mode was not restored after the prompt")
	}
}

// copyUntilClosed copies the pty's output until it is closed.
func copyUntilClosed(dst *ptyOutput, src *os.File) (int64, error) {
	var n int64
	b := make([]byte, 4096)
	for {
		m, err := src.Read(b)
		dst.Write(b[:m])
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
}

func TestOpensPromptOnlyOnATerminalWithoutSQL(t *testing.T) {
	_, tty := openPty(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		in   io.Reader
		args []string
		want bool
	}{
		{"No arguments on a terminal open the prompt.", tty, nil, true},
		{"An existing directory as the first argument on a terminal opens the prompt on it.", tty, []string{dir}, true},
		{"SQL as the first argument runs it.", tty, []string{"select 1", dir}, false},
		{"A single word that is no existing path is SQL.", tty, []string{"checkpoint"}, false},
		{"A path that looks like SQL is SQL.", tty, []string{filepath.Join(dir, "a;b")}, false},
		{"No arguments without a terminal do not open the prompt.", strings.NewReader(""), nil, false},
		{"A directory without a terminal does not open the prompt.", strings.NewReader(""), []string{dir}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := &IO{In: tc.in}
			if got := opensPrompt(sys, tc.args); got != tc.want {
				t.Fatalf("opensPrompt(%q) = %v, want %v", tc.args, got, tc.want)
			}
		})
	}
}

// TestQueryWithoutSQLOrTerminalSaysThePromptNeedsOne checks the usage error
// mentions the prompt, since stdin in tests is not a terminal.
func TestQueryWithoutSQLOrTerminalSaysThePromptNeedsOne(t *testing.T) {
	code, _, stderr := runCLI(t, nil, "query")
	if code != ExitInvalid || !strings.Contains(stderr, "needs the SQL") || !strings.Contains(stderr, "interactive prompt opens instead when stdin is a terminal") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	code, stdout, _ := runCLI(t, nil, "query", "--help")
	if code != ExitOK || !strings.Contains(stdout, "interactive prompt") || !strings.Contains(stdout, ".schema NAME") {
		t.Fatalf("query --help does not describe the prompt: exit %d\n%s", code, stdout)
	}
}

// TestREPLHelperProcess is not a test: it runs retrace's CLI in a child
// process, so that a test can give it a controlling terminal.
func TestREPLHelperProcess(t *testing.T) {
	args := os.Getenv("RETRACE_REPL_HELPER_ARGS")
	if args == "" {
		t.Skip("runs only as the child process of TestCtrlCOnTheTerminalCancelsTheRunningQuery")
	}
	sys := &IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Getenv: os.Getenv, Now: fixedClock}
	os.Exit(int(run(sys, strings.Split(args, "\n"))))
}

func TestCtrlCOnTheTerminalCancelsTheRunningQuery(t *testing.T) {
	// Only a terminal's own session gets its SIGINT, so retrace runs in a
	// child process whose controlling terminal is the pty.
	cmd := exec.Command(os.Args[0], "-test.run=^TestREPLHelperProcess$")
	cmd.Env = append(os.Environ(), "RETRACE_REPL_HELPER_ARGS=query\n"+fixtures+"/valid\n--format\ncsv")
	ptmx, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer cmd.Process.Kill()
	screen := &ptyOutput{}
	go func() { _, _ = copyUntilClosed(screen, ptmx) }()

	screen.waitFor(t, promptMain, 1)
	ptmx.Write([]byte("select sum(i) AS s from range(1000000000000) t(i);\r"))
	// Ctrl-C typed before the query has started is taken by the prompt
	// instead, so it is typed until the query says it was cancelled.
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(screen.String(), "^C\r\ncancelled\r\n") {
		if time.Now().After(deadline) {
			t.Fatalf("Ctrl-C did not cancel the query; the terminal shows:\n%q", screen.String())
		}
		ptmx.Write([]byte{3})
		for i := 0; i < 30 && !strings.Contains(screen.String(), "cancelled"); i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
	n := strings.Count(screen.String(), promptMain)
	screen.waitFor(t, promptMain, n)
	ptmx.Write([]byte("select 5 AS five;\r"))
	screen.waitFor(t, "five\r\n5\r\n(1 row, 0 ms)", 1)
	ptmx.Write([]byte{4})
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("retrace exited with %v; the terminal shows:\n%q", err, screen.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Ctrl-D did not end the prompt; the terminal shows:\n%q", screen.String())
	}
}

func TestThePromptWritesResultsToARedirectedStdoutAndPromptsToStderr(t *testing.T) {
	ptmx, tty := openPty(t)
	var stdout bytes.Buffer
	stderr := &ptyOutput{}
	sys := &IO{In: tty, Out: &stdout, Err: stderr, Getenv: func(string) string { return "" }, Now: fixedClock}
	code := make(chan ExitCode, 1)
	go func() { code <- run(sys, []string{"query", "--format", "csv", fixtures + "/valid"}) }()
	stderr.waitFor(t, promptMain, 1)
	// The terminal stays in cooked mode: it edits the line itself, and
	// Ctrl-D at the start of a line ends the input.
	ptmx.Write([]byte("select 3\n"))
	stderr.waitFor(t, promptMore, 1)
	ptmx.Write([]byte("AS three;\n"))
	stderr.waitFor(t, promptMain, 2)
	ptmx.Write([]byte{4})
	select {
	case c := <-code:
		if c != ExitOK {
			t.Fatalf("exit %d, stderr %q", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Ctrl-D did not end the prompt; stderr shows:\n%q", stderr.String())
	}
	if want := "three\n3\n(1 row, 0 ms)\n"; stdout.String() != want {
		t.Fatalf("stdout %q, want %q", stdout.String(), want)
	}
}
