package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/synth"
	"github.com/retrace-dev/retrace/trajectory"
)

// TestValidateOnManyWorkersReportsWhatOneWorkerReports validates a corpus
// of good files, the invalid fixtures and a file that cannot be read with
// one worker and with eight, and wants the same reports at the same
// places: files checked in parallel must not mix their problems up.
func TestValidateOnManyWorkersReportsWhatOneWorkerReports(t *testing.T) {
	dir := t.TempDir()
	if _, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 20, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	bad, _ := filepath.Glob(fixtures + "/invalid/*.jsonl")
	for _, f := range bad {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, err := trajectory.ExpandInputs(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := append(in.Files, filepath.Join(dir, "gone.jsonl"))
	sys := &IO{In: strings.NewReader(""), Getenv: func(string) string { return "" }, Now: time.Now}
	one, oneErrs := validateFiles(sys, files, 1)
	many, manyErrs := validateFiles(sys, files, 8)
	if len(one) != len(files) || len(many) != len(files) {
		t.Fatalf("got %d and %d reports for %d files", len(one), len(many), len(files))
	}
	problems := 0
	for i := range files {
		if got, want := describe(many[i], manyErrs[i]), describe(one[i], oneErrs[i]); got != want {
			t.Errorf("%s on eight workers:\n%s\non one:\n%s", files[i], got, want)
		}
		problems += len(one[i].Problems)
	}
	if problems < len(bad) {
		t.Errorf("got %d problems over %d invalid fixtures, want one at least for each", problems, len(bad))
	}
	if oneErrs[len(files)-1] == nil {
		t.Error("a file that does not exist validated without error")
	}
}

// describe renders a report and error as text, problems and warnings in order.
func describe(rep trajectory.FileReport, err error) string {
	var b strings.Builder
	b.WriteString(rep.File + " events=" + strconv.Itoa(rep.Events) + " omitted=" + strconv.Itoa(rep.Omitted) + "\n")
	for _, p := range rep.Problems {
		b.WriteString("  " + p.Error() + "\n")
	}
	for _, w := range rep.Warnings {
		b.WriteString("  " + w.String() + "\n")
	}
	if err != nil {
		b.WriteString("  error: " + err.Error() + "\n")
	}
	return b.String()
}
