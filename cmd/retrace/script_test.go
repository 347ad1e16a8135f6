package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/retrace-dev/retrace/trajectory"
)

// update rewrites the golden sections of the scripts with the output of
// this run: go test ./cmd/retrace -run TestScripts -update.
var update = flag.Bool("update", false, "rewrite the golden output in testdata/script/*.txtar")

// TestScripts runs the end-to-end CLI suite in testdata/script: each
// .txtar file is a script of retrace command lines (the retrace command is
// this test binary, see TestMain) with their expected exit codes and
// golden output. Volatile parts of the output are normalised with scrub
// before they are compared, so the golden files are deterministic.
func TestScripts(t *testing.T) {
	// The scripts' retrace is this test binary under the name retrace (see
	// TestMain), linked rather than copied: the binary is large.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(self, filepath.Join(bin, "retrace")); err != nil {
		t.Fatal(err)
	}
	fixtures, err := filepath.Abs(filepath.Join("..", "..", "detectors", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	imports, err := filepath.Abs(filepath.Join("..", "..", "importer", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(filepath.ListSeparator)+env.Getenv("PATH"))
			// FIXTURES are the detectors' trajectories (must-fire and
			// clean), for scripts to copy rather than repeat.
			env.Setenv("FIXTURES", fixtures)
			// IMPORTS are the importer's transcripts of real clients.
			env.Setenv("IMPORTS", imports)
			// The user's configuration directory, where the recording
			// key lives, is the script's own.
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			// No timed progress lines on stderr: a slow machine must not
			// change a script's output (progress.txtar turns them on).
			env.Setenv("RETRACE_PROGRESS", "off")
			// So is the cache directory, where reading commands keep
			// their stores.
			env.Setenv("XDG_CACHE_HOME", filepath.Join(env.WorkDir, ".cache"))
			return nil
		},
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"scrub":    cmdScrub,
			"runfile":  cmdRunfile,
			"freeport": cmdFreeport,
			"waitfor":  cmdWaitfor,
			"post":     cmdPost,
			"exitcode": cmdExitcode,
		},
	})
}

// scrubRules replace what differs between two runs of the same script.
// They run in order; $WORK is replaced first, by cmdScrub.
var scrubRules = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{8}-\d{6}\.\d{3}-[0-9a-f]{8}`), "YYYYMMDD-HHMMSS.mmm-xxxxxxxx"},
	{regexp.MustCompile(`retrace-(demo|replay)-\d+`), "retrace-$1-N"},
	{regexp.MustCompile(`\b\d{2}:\d{2}:\d{2}\.\d{3}\b`), "HH:MM:SS.mmm"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:PORT"},
	{regexp.MustCompile(`\b\d+(?:\.\d+)?( ?)(ms|µs|s)\b`), "N$1$2"},
	{regexp.MustCompile(`sha256:[0-9a-f]{64}`), "sha256:HASH"},
}

// cmdScrub writes SRC (stdout, stderr or a file) to DST with the volatile
// parts normalised: scrub SRC DST.
func cmdScrub(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: scrub stdout|stderr|FILE DST")
	}
	var text string
	switch args[0] {
	case "stdout":
		text = ts.ReadFile("stdout")
	case "stderr":
		text = ts.ReadFile("stderr")
	default:
		text = ts.ReadFile(args[0])
	}
	text = strings.ReplaceAll(text, ts.Getenv("WORK"), "$WORK")
	for _, r := range scrubRules {
		text = r.re.ReplaceAllString(text, r.with)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(text), 0o644))
}

// cmdRunfile sets VAR to the one trajectory in DIR: runfile VAR DIR.
func cmdRunfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: runfile VAR DIR")
	}
	files, err := trajectory.Expand(ts.MkAbs(args[1]))
	ts.Check(err)
	if len(files) != 1 {
		ts.Fatalf("%s holds %d trajectories, want 1: %v", args[1], len(files), files)
	}
	rel, err := filepath.Rel(ts.Getenv("WORK"), files[0])
	ts.Check(err)
	ts.Setenv(args[0], rel)
}

// cmdFreeport sets VAR to a loopback port nothing listens on: freeport VAR.
func cmdFreeport(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := l.Addr().(*net.TCPAddr).Port
	ts.Check(l.Close())
	ts.Setenv(args[0], fmt.Sprint(port))
}

// cmdWaitfor waits up to 20 s until URL answers at all: waitfor URL.
func cmdWaitfor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfor URL")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(args[0])
		if err == nil {
			res.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not answer within 20s: %v", args[0], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdPost posts FILE as JSON to URL and writes the status line and the
// body to stdout; ! post expects a status that is not 2xx: post URL FILE.
func cmdPost(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: post URL FILE")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, args[0], strings.NewReader(ts.ReadFile(args[1])))
	ts.Check(err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	res, err := http.DefaultClient.Do(req)
	ts.Check(err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%s\n%s\n", res.Status, body)
	ok := res.StatusCode/100 == 2
	switch {
	case ok && neg:
		ts.Fatalf("post %s: %s, want a failure", args[0], res.Status)
	case !ok && !neg:
		ts.Fatalf("post %s: %s", args[0], res.Status)
	}
}

// cmdExitcode runs a command like exec, and passes when it exits with
// exactly N: exitcode N CMD [ARGS...]. Its output becomes stdout and
// stderr, so the lines after it can check what it said.
func cmdExitcode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N CMD [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %q is not a number", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("exitcode: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// The suite must not pass by finding no scripts.
func TestScriptsCoverEveryCommandTheSuitePromises(t *testing.T) {
	for _, name := range []string{"run", "replay", "replay_batch", "validate", "mock_serve", "detect_thresholds", "detect_width", "eval", "eval_shard", "eval_flaky", "eval_bad", "init", "version"} {
		if _, err := os.Stat(filepath.Join("testdata", "script", name+".txtar")); errors.Is(err, os.ErrNotExist) {
			t.Errorf("testdata/script/%s.txtar is missing", name)
		}
	}
}
