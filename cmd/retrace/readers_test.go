package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The acceptance tests of the readers (issue 12): every command that reads
// runs (validate, metrics, query, export) takes pipes, stdin, symlink loops,
// unreadable files, repeated seqs and empty files through the CLI with the
// exit codes of the contract, and never hangs.

const basicFixture = fixtures + "/valid/basic.jsonl"

// readerTimeout bounds one command of these tests: a reader that hangs
// fails the test instead of hanging it.
const readerTimeout = 2 * time.Minute

// reader is one command that reads runs, with the output that proves it
// read the basic fixture whole and each event once.
type reader struct {
	name string
	// args returns the command line before its inputs.
	args func(t *testing.T) []string
	// want is in stdout+stderr when the basic fixture's 11 events, and its
	// one tool call, were read once each.
	want string
}

var readers = []reader{
	{"validate", func(*testing.T) []string { return []string{"validate"} }, "ok: 1 file, 11 events, no problems"},
	{"metrics", func(*testing.T) []string { return []string{"metrics", "--metric", "funnel", "--format", "csv"} }, "(all),1,0,1,1,0,0\n"},
	{"query", func(*testing.T) []string {
		return []string{"query", "select count(*) AS n from events", "--format", "csv"}
	}, "n\n11\n"},
	{"export", func(t *testing.T) []string {
		// Writable by the unprivileged user of TestReadersThroughARealProcess.
		dir := t.TempDir()
		for d, mode := range map[string]os.FileMode{dir: 0o777, filepath.Dir(dir): 0o755} {
			if err := os.Chmod(d, mode); err != nil {
				t.Fatal(err)
			}
		}
		return []string{"export", "--parquet", filepath.Join(dir, "pq"), "--format", "json"}
	}, `"events": 11,`},
}

// loaders are the readers that load into DuckDB and take --lenient.
var loaders = readers[1:]

// runBounded runs one retrace command line in-process with stdin, failing
// the test if it does not end within readerTimeout. unblock, when set, is
// called on a timeout to let a stuck reader go.
func runBounded(t *testing.T, stdin io.Reader, unblock func(), args ...string) (code ExitCode, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	sys := &IO{In: stdin, Out: &out, Err: &errOut, Getenv: func(string) string { return "" }, Now: fixedClock}
	done := make(chan ExitCode, 1)
	go func() { done <- run(sys, args) }()
	select {
	case code = <-done:
		return code, out.String(), errOut.String()
	case <-time.After(readerTimeout):
		if unblock != nil {
			unblock()
		}
		t.Fatalf("retrace %s did not end within %v: a reader hangs", strings.Join(args, " "), readerTimeout)
		return 0, "", ""
	}
}

// fixtureLines returns the lines of the basic fixture, each with its newline.
func fixtureLines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(basicFixture)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	lines[len(lines)-1] += "\n"
	return lines
}

func writeFile(t *testing.T, path, content string, perm os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	return path
}

// mkfifo makes a named pipe and returns its path and a function that opens
// it for writing and closes it, which lets a reader blocked on it go.
func mkfifo(t *testing.T, path string) (string, func()) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
}

func TestEveryReaderReadsStdinAndANamedPipeAsAStream(t *testing.T) {
	basic := strings.Join(fixtureLines(t), "")
	for _, r := range readers {
		t.Run(r.name+" reads - from stdin.", func(t *testing.T) {
			code, stdout, stderr := runBounded(t, strings.NewReader(basic), nil, append(r.args(t), "-")...)
			if code != ExitOK || !strings.Contains(stdout+stderr, r.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, r.want)
			}
		})
		t.Run(r.name+" reads a named pipe named on the command line as it is written.", func(t *testing.T) {
			pipe, unblock := mkfifo(t, filepath.Join(t.TempDir(), "pipe.jsonl"))
			written := make(chan error, 1)
			go func() {
				f, err := os.OpenFile(pipe, os.O_WRONLY, 0)
				if err != nil {
					written <- err
					return
				}
				// Line by line, as a recorder would: the reader must not
				// take the pipe's size, or a first short read, for its end.
				for _, l := range fixtureLines(t) {
					if _, err := io.WriteString(f, l); err != nil {
						break
					}
					time.Sleep(time.Millisecond)
				}
				written <- f.Close()
			}()
			code, stdout, stderr := runBounded(t, strings.NewReader(""), unblock, append(r.args(t), pipe)...)
			if err := <-written; err != nil {
				t.Fatalf("writing the pipe: %v", err)
			}
			if code != ExitOK || !strings.Contains(stdout+stderr, r.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, r.want)
			}
		})
	}
}

func TestEveryReaderSkipsANamedPipeInARunsDirectoryWithoutWaitingForIt(t *testing.T) {
	for _, r := range readers {
		t.Run(r.name+" skips the pipe with a warning and reads the rest.", func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "basic.jsonl"), strings.Join(fixtureLines(t), ""), 0o644)
			_, unblock := mkfifo(t, filepath.Join(dir, "pipe.jsonl"))
			code, stdout, stderr := runBounded(t, strings.NewReader(""), unblock, append(r.args(t), dir)...)
			if code != ExitOK || !strings.Contains(stdout+stderr, r.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, r.want)
			}
			if !strings.Contains(stderr, filepath.Join(dir, "pipe.jsonl")+": warning: skipped: a named pipe") {
				t.Fatalf("stderr %q does not warn that the pipe was skipped", stderr)
			}
		})
	}
}

// badInputCase is a runs directory with one bad entry beside the basic
// fixture, and what every reader must say about it.
type badInputCase struct {
	name string
	// make adds the bad entry to dir and returns its path.
	make func(t *testing.T, dir string) string
	// says is in the message naming the bad entry, after "path".
	says string
	// lenient is what a lenient load says about it on stderr.
	lenient string
	// alone is set when the bad entry is a damaged copy of the basic
	// fixture, which a lenient load reads alone.
	alone bool
	// loadersOnly is set for what only a load finds: validate checks each
	// file on its own.
	loadersOnly bool
	// also is in the message too.
	also string
}

var badInputCases = []badInputCase{
	{
		name: "A symlink loop",
		make: func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "loop.jsonl")
			if err := os.Symlink("loop.jsonl", p); err != nil {
				t.Fatal(err)
			}
			return p
		},
		says:    ": cannot read: too many levels of symbolic links; a symlink loop: fix or remove the link",
		lenient: "warning: left out: cannot read",
	},
	{
		name: "A 0-byte file",
		make: func(t *testing.T, dir string) string {
			return writeFile(t, filepath.Join(dir, "empty.jsonl"), "", 0o644)
		},
		says:    ": no events (no complete line, so no session_start); delete it if a crash left it, or leave it out of the paths",
		lenient: "warning: left out: no events",
	},
	{
		name: "A repeated tool_call line",
		make: func(t *testing.T, dir string) string {
			lines := fixtureLines(t)
			dup := append(append(append([]string{}, lines[:4]...), lines[3]), lines[4:]...)
			// Its own session, or it would be a copy of the basic fixture's.
			content := strings.ReplaceAll(strings.Join(dup, ""), "1a2b3c4d", "d0d0d0d0")
			return writeFile(t, filepath.Join(dir, "dup.jsonl"), content, 0o644)
		},
		says:    ":5: ",
		also:    "seq 4 after 4",
		lenient: "warning: dropped 1 event whose seq repeats or goes back, each counted once",
		alone:   true,
	},
}

func TestEveryReaderNamesTheBadFileExitsTwoAndStillChecksTheRest(t *testing.T) {
	for _, bc := range badInputCases {
		for _, r := range readers {
			if bc.loadersOnly && r.name == "validate" {
				continue
			}
			t.Run(bc.name+": "+r.name+" exits 2 naming it.", func(t *testing.T) {
				dir := t.TempDir()
				writeFile(t, filepath.Join(dir, "basic.jsonl"), strings.Join(fixtureLines(t), ""), 0o644)
				bad := bc.make(t, dir)
				code, stdout, stderr := runBounded(t, strings.NewReader(""), nil, append(r.args(t), dir)...)
				if code != ExitInvalid || !strings.Contains(stdout+stderr, bad+bc.says) || !strings.Contains(stdout+stderr, bc.also) {
					t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and %q", code, stdout, stderr, bad+bc.says)
				}
				if r.name == "validate" && !strings.Contains(stderr, " in 1 of 2 files") {
					t.Fatalf("stderr %q: the good file was not checked too", stderr)
				}
				if r.name != "validate" && !strings.Contains(stderr, "--lenient") {
					t.Fatalf("stderr %q does not say what to do", stderr)
				}
			})
		}
		for _, r := range loaders {
			t.Run(bc.name+": "+r.name+" --lenient leaves it out with a warning and reads the rest once.", func(t *testing.T) {
				dir := t.TempDir()
				bad, input := bc.make(t, dir), dir
				if bc.alone {
					input = bad
				} else {
					writeFile(t, filepath.Join(dir, "basic.jsonl"), strings.Join(fixtureLines(t), ""), 0o644)
				}
				code, stdout, stderr := runBounded(t, strings.NewReader(""), nil, append(r.args(t), "--lenient", input)...)
				if code != ExitOK || !strings.Contains(stdout+stderr, r.want) {
					t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, r.want)
				}
				if !strings.Contains(stderr, bad+": "+bc.lenient) {
					t.Fatalf("stderr %q does not say %q", stderr, bad+": "+bc.lenient)
				}
			})
		}
	}
}

func TestJSONFormatPrintsJSONEvenWhenTheCommandFails(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop.jsonl")
	if err := os.Symlink("loop.jsonl", loop); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		// file is the file the first problem names; empty for none.
		file string
	}{
		{"validate of a missing path prints an error document.", []string{"validate", missing}, ""},
		{"metrics of a missing path prints an error document.", []string{"metrics", missing}, ""},
		{"metrics of a symlink loop names it among the problems.", []string{"metrics", dir}, loop},
		{"query with bad SQL prints an error document.", []string{"query", "select count(* from events", basicFixture}, ""},
		{"query of a symlink loop names it among the problems.", []string{"query", "select 1", loop}, loop},
		{"export of a symlink loop names it among the problems.", []string{"export", "--parquet", filepath.Join(dir, "pq"), loop}, loop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runBounded(t, strings.NewReader(""), nil, append(tc.args, "--format", "json")...)
			var doc struct {
				Error *errorJSON `json:"error"`
			}
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
			}
			if code != ExitInvalid || doc.Error == nil || doc.Error.Code != ExitInvalid || doc.Error.Message == "" || stderr == "" {
				t.Fatalf("exit %d, document %+v, stderr %q; want 2, an error document with code 2, and the message on stderr too", code, doc.Error, stderr)
			}
			if tc.file != "" && (len(doc.Error.Problems) != 1 || doc.Error.Problems[0].File != tc.file || doc.Error.Problems[0].Kind != "unreadable") {
				t.Fatalf("problems %+v, want one unreadable problem naming %s", doc.Error.Problems, tc.file)
			}
		})
	}
	t.Run("validate of a directory with a symlink loop reports it in its document.", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "basic.jsonl"), strings.Join(fixtureLines(t), ""), 0o644)
		code, stdout, _ := runBounded(t, strings.NewReader(""), nil, "validate", "--format", "json", dir)
		var doc validateJSON
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
		}
		if code != ExitInvalid || doc.Valid || len(doc.Files) != 2 || doc.Files[0].Events != 11 || doc.Files[1].File != loop || doc.Files[1].Problems[0].Kind != "unreadable" {
			t.Fatalf("exit %d, document %+v; want 2, the good file's 11 events and the loop unreadable", code, doc)
		}
	})
}

// runProcess runs a command line in a real process, bounded in time, and
// returns its exit code and output.
func runProcess(t *testing.T, name string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readerTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "RETRACE_DIR="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v did not end within %v: a reader hangs", name, args, readerTimeout)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s: %v", name, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// unprivileged returns the command prefix that runs a program as the
// nobody user, or "" when there is none.
func unprivileged(t *testing.T) []string {
	t.Helper()
	for _, prefix := range [][]string{
		{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"},
		{"runuser", "-u", "nobody", "--"},
	} {
		if _, err := exec.LookPath(prefix[0]); err != nil {
			continue
		}
		if code, out, _ := runProcess(t, prefix[0], append(prefix[1:], "id", "-u")...); code == 0 && strings.TrimSpace(out) == "65534" {
			return prefix
		}
	}
	return nil
}

func TestReadersThroughARealProcess(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	// Another user must be able to reach the binary and the runs.
	binDir := t.TempDir()
	bin := buildRetrace(t, binDir)
	runs := t.TempDir()
	for _, d := range []string{binDir, filepath.Dir(binDir), runs, filepath.Dir(runs)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	basic := writeFile(t, filepath.Join(runs, "basic.jsonl"), strings.Join(fixtureLines(t), ""), 0o644)

	for _, r := range readers {
		t.Run(r.name+" reads a bash process substitution.", func(t *testing.T) {
			args := append([]string{bin}, r.args(t)...)
			code, stdout, stderr := runProcess(t, "bash", append([]string{"-c", `"$@" <(cat "$0")`, basic}, args...)...)
			if code != 0 || !strings.Contains(stdout+stderr, r.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, r.want)
			}
		})
		t.Run(r.name+" reads - from a pipe.", func(t *testing.T) {
			args := append([]string{bin}, r.args(t)...)
			code, stdout, stderr := runProcess(t, "bash", append([]string{"-c", `cat "$0" | "$@" -`, basic}, args...)...)
			if code != 0 || !strings.Contains(stdout+stderr, r.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, r.want)
			}
		})
	}

	// Root reads every file whatever its mode, so unreadable files are
	// only unreadable to another user.
	var as []string
	if os.Geteuid() == 0 {
		if as = unprivileged(t); as == nil {
			t.Log("skipping the unreadable-file cases: running as root and neither setpriv nor runuser can switch to nobody")
			return
		}
	}
	secret := writeFile(t, filepath.Join(runs, "secret.jsonl"), strings.Join(fixtureLines(t), ""), 0o600)
	locked := filepath.Join(runs, "locked")
	if err := os.Mkdir(locked, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(locked, "x.jsonl"), strings.Join(fixtureLines(t), ""), 0o644)
	if os.Geteuid() != 0 {
		// Not root: the modes alone keep this user out.
		if err := os.Chmod(secret, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(locked, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(locked, 0o700) })
	}
	const denied = ": cannot read: permission denied; make it readable (chmod) or leave it out of the paths"
	for _, r := range readers {
		t.Run(r.name+" names each unreadable file and directory, exits 2 and checks the rest.", func(t *testing.T) {
			line := append(append(append([]string{}, as...), bin), append(r.args(t), runs)...)
			code, stdout, stderr := runProcess(t, line[0], line[1:]...)
			if code != int(ExitInvalid) || !strings.Contains(stdout+stderr, secret+denied) || !strings.Contains(stdout+stderr, locked+denied) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2 naming %s and %s", code, stdout, stderr, secret, locked)
			}
			if r.name == "validate" && !strings.Contains(stderr, "2 problems in 2 of 3 files") {
				t.Fatalf("stderr %q: the readable file was not checked too", stderr)
			}
		})
	}
	for _, r := range loaders {
		t.Run(r.name+" --lenient leaves the unreadable ones out and reads the rest.", func(t *testing.T) {
			line := append(append(append([]string{}, as...), bin), append(r.args(t), "--lenient", runs)...)
			code, stdout, stderr := runProcess(t, line[0], line[1:]...)
			if code != 0 || !strings.Contains(stdout+stderr, r.want) || !strings.Contains(stderr, secret+": warning: left out: cannot read: permission denied") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0, %q and a warning for %s", code, stdout, stderr, r.want, secret)
			}
		})
	}
}
