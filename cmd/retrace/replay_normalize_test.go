package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplayDetailsShowTheChangedTextAsAUnifiedDiff(t *testing.T) {
	rec := recordDemo(t)
	cfg := filepath.Join(t.TempDir(), "stricter.yaml")
	if err := os.WriteFile(cfg, []byte("permissions:\n  mode: accept_edits\n  deny: [\"Edit(calc.go)\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, nil, "replay", rec, "--out", t.TempDir(), "--config", cfg, "--details")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"TURN  CALL", "toolu_demo_3", "── turn 2, toolu_demo_3", "--- recorded\n+++ replayed\n@@"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = runCLI(t, nil, "replay", rec, "--out", t.TempDir(), "--config", cfg, "--details", "--format", "markdown")
	if code != ExitOK || !strings.Contains(stdout, "```diff\n--- recorded") {
		t.Errorf("exit %d; the markdown report lacks a diff block:\n%s", code, stdout)
	}
}

func TestReplayRejectsBadNormalisationFlags(t *testing.T) {
	rec := "../../trajectory/testdata/valid/basic.jsonl"
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"a rule without => says how to write it", []string{"--normalize", "took [0-9]+ms"}, `write it as 'REGEX=>REPLACEMENT'`},
		{"a rule that does not compile says why", []string{"--normalize", "a(b=>x"}, "missing closing )"},
		{"a tool level without = says how to write it", []string{"--tool-level", "bash"}, "write it as TOOL=LEVEL"},
		{"an unknown tool level lists the levels", []string{"--tool-level", "bash=loose"}, "use one of exact, exit_code, ignore"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"replay", rec, "--out", t.TempDir()}, c.args...)
			code, _, stderr := runCLI(t, nil, args...)
			if code != ExitInvalid || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d stderr %q, want 2 and %q", code, stderr, c.want)
			}
		})
	}
}

func TestReplayRejectsABadReplaySectionInTheWhatIfConfig(t *testing.T) {
	rec := recordDemo(t)
	cfg := filepath.Join(t.TempDir(), "whatif.yaml")
	if err := os.WriteFile(cfg, []byte("replay:\n  normalize:\n    - pattern: '(unclosed'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, nil, "replay", rec, "--out", t.TempDir(), "--config", cfg)
	if code != ExitInvalid || !strings.Contains(stderr, "whatif.yaml:3: replay.normalize[0].pattern") {
		t.Fatalf("exit %d stderr %q, want 2 naming the file, line and field", code, stderr)
	}
}
