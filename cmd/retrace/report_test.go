package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/synth"
)

// TestTheDiffReportShowsThePlantedRegressions writes a base corpus and a
// candidate whose generator differs in two planted ways (bash fails 5
// points more often, read's p95 is 1.5 times longer) and checks that the
// diff report shows both sides and names those rows regressed.
func TestTheDiffReportShowsThePlantedRegressions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	base, cand := filepath.Join(dir, "base"), filepath.Join(dir, "cand")
	if _, err := synth.Write(ctx, base, synth.Options{Sessions: 400, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	var shifts []synth.Shift
	for _, s := range []string{"bash.failure+0.05", "read.p95*1.5"} {
		sh, err := synth.ParseShift(s)
		if err != nil {
			t.Fatal(err)
		}
		shifts = append(shifts, sh)
	}
	if _, err := synth.Write(ctx, cand, synth.Options{Sessions: 400, Seed: 1, Shifts: shifts}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "diff.html")
	code, stdout, stderr := runCLI(t, nil, "report", "--base", base, "--cand", cand, "--title", "prompt <v2>", "-o", out)
	if code != ExitOK || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and the page in the file", code, stdout, stderr)
	}
	if !regexp.MustCompile(`wrote .*diff.html: \d+ metrics: [1-9]\d* regressed`).MatchString(stderr) {
		t.Errorf("stderr %q should say what was written and count the regressions", stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{"<title>prompt &lt;v2&gt;</title>", `class="row-regressed"`, "rate(failure, tool=bash, among=executed)", "p95(duration, tool=read)", base, cand} {
		if !strings.Contains(page, want) {
			t.Errorf("the diff report lacks %q", want)
		}
	}
	// The regressed rows come first, and they are the planted ones.
	rows := regexp.MustCompile(`<tr class="row-(\w+)"><td><b class="mono">([^<]+)</b>`).FindAllStringSubmatch(page, -1)
	if len(rows) == 0 {
		t.Fatal("the diff report has no metric rows")
	}
	seenOther := false
	for _, r := range rows {
		if r[1] != "regressed" {
			seenOther = true
			continue
		}
		if seenOther {
			t.Errorf("regressed row %s comes after a row that is not", r[2])
		}
		if !strings.Contains(r[2], "tool=bash") && !strings.Contains(r[2], "tool=read") {
			t.Errorf("%s is regressed; only bash's failures and read's latency were planted", r[2])
		}
	}
	if strings.Contains(strings.ToLower(page), "<script") || regexp.MustCompile(`(?i)https?://`).MatchString(page) {
		t.Error("the diff report holds a script or a URL")
	}

	// Selectors need RUNS-free sides to be runs; runs and RUNS together
	// are refused, as is half a diff.
	if code, _, stderr := runCLI(t, nil, "report", "--base", base, "-o", out); code != ExitInvalid || !strings.Contains(stderr, "needs both --base and --cand") {
		t.Errorf("--base alone: exit %d, stderr %q; want 2 and what is missing", code, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "report", "--base", base, "--cand", cand, base, "-o", out); code != ExitInvalid || !strings.Contains(stderr, "RUNS") {
		t.Errorf("runs and RUNS: exit %d, stderr %q; want 2", code, stderr)
	}
}
