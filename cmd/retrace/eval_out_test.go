package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/results"
)

// selfAsRetrace returns this test binary linked under the name retrace
// (TestMain makes it the CLI), to run as a process of its own.
func selfAsRetrace(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "retrace")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// slowScenario runs bash sleep SECONDS, so that an eval of it lasts.
func slowScenario(name, seconds string) string {
	return `-- scenario.yaml --
name: ` + name + `
prompt: Wait.
config:
  permissions: {mode: bypass}
limits: {timeout: 60s}
model:
  turns:
    - content: [{tool_use: {name: bash, input: {command: "sleep ` + seconds + `"}}}]
    - content: [{text: Done.}]
expect:
  outcome: {reason: end_turn}
`
}

const fastScenario = `-- scenario.yaml --
name: a_fast
prompt: Say done.
model: {turns: [{content: [{text: Done.}]}]}
expect:
  outcome: {reason: end_turn}
`

func processExit(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// Two evals started at once into one --out: one writes it, the other is
// refused (exit 2) naming the holder; never two green results over a
// directory whose results.json and runs/ disagree.
func TestTwoEvalsIntoOneOutNeverBothGoGreen(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two evals as processes")
	}
	bin := selfAsRetrace(t)
	dir := t.TempDir()
	suite := filepath.Join(dir, "suite")
	if err := os.MkdirAll(suite, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(suite, "slow.txtar"), []byte(slowScenario("slow", "2")), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	type proc struct {
		cmd            *exec.Cmd
		stdout, stderr bytes.Buffer
		code           int
	}
	ps := []*proc{{}, {}}
	for _, p := range ps {
		p.cmd = exec.Command(bin, "eval", suite, "--out", out)
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range ps {
		p.code = processExit(p.cmd.Wait())
	}
	codes := []int{ps[0].code, ps[1].code}
	var winner, loser *proc
	switch {
	case codes[0] == 0 && codes[1] == 2:
		winner, loser = ps[0], ps[1]
	case codes[0] == 2 && codes[1] == 0:
		winner, loser = ps[1], ps[0]
	default:
		t.Fatalf("exit codes %v, want one 0 and one 2\nfirst: %s%s\nsecond: %s%s", codes, ps[0].stdout.String(), ps[0].stderr.String(), ps[1].stdout.String(), ps[1].stderr.String())
	}
	want := "pid " + itoa(winner.cmd.Process.Pid) + " started "
	if msg := loser.stderr.String(); !strings.Contains(msg, "being written by another eval") || !strings.Contains(msg, want) {
		t.Errorf("the refused eval says %q, want it to name the holder (%q)", msg, want)
	}
	if loser.stdout.Len() != 0 {
		t.Errorf("the refused eval printed a summary: %s", loser.stdout.String())
	}
	// The directory tells one story: results.json's runs are runs/.
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := results.Read(data, "results.json")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, s := range res.Scenarios {
		for _, r := range s.Runs {
			named[filepath.Base(r.Trajectory)] = true
		}
	}
	files, _ := filepath.Glob(filepath.Join(out, "runs", "*.jsonl"))
	if len(files) != len(named) || len(files) != 1 {
		t.Errorf("runs/ holds %d recordings, results.json names %d; want 1 and 1", len(files), len(named))
	}
	for _, f := range files {
		if !named[filepath.Base(f)] {
			t.Errorf("runs/%s is not in results.json", filepath.Base(f))
		}
	}
}

// An eval stopped by SIGINT or SIGTERM still writes results.json, marked
// interrupted, with the runs that finished, and prints their summary.
func TestAnInterruptedEvalKeepsWhatFinished(t *testing.T) {
	if testing.Short() {
		t.Skip("interrupts an eval process")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { interruptEval(t, sig) })
	}
}

func interruptEval(t *testing.T, sig syscall.Signal) {
	bin := selfAsRetrace(t)
	dir := t.TempDir()
	suite := filepath.Join(dir, "suite")
	if err := os.MkdirAll(suite, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{"a_fast.txtar": fastScenario, "b_slow.txtar": slowScenario("b_slow", "30"), "c_later.txtar": strings.Replace(fastScenario, "a_fast", "c_later", 1)} {
		if err := os.WriteFile(filepath.Join(suite, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "eval", suite, "--out", out, "-j", "1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The slow scenario is running once two recordings exist.
	deadline := time.Now().Add(30 * time.Second)
	for {
		files, _ := filepath.Glob(filepath.Join(out, "runs", "*.jsonl"))
		if len(files) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the slow scenario did not start: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	code := processExit(cmd.Wait())
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the eval took %s to stop", took)
	}
	if code != 4 {
		t.Errorf("exit %d, want 4\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "PASS  a_fast  1/1 runs passed") || strings.Contains(stdout.String(), "c_later") {
		t.Errorf("the summary does not hold exactly what finished:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "retrace: interrupted: the summary holds the runs that finished; 2 runs did not") {
		t.Errorf("stderr does not say the eval was interrupted:\n%s", stderr.String())
	}
	data, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := results.Read(data, "results.json")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.NotRun != 2 || len(res.Scenarios) != 1 || res.Scenarios[0].Name != "a_fast" {
		t.Errorf("results.json: interrupted %v, not run %d, scenarios %+v", res.Interrupted, res.NotRun, res.Scenarios)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
