package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// detect --defenses prints the liveness table in each format, gives the
// empty-input retry the verdict its fixture shows, and fails the gate on a
// dead defense only.
func TestDetectDefensesPrintsTheLivenessTableAndGatesOnDead(t *testing.T) {
	dir := t.TempDir()
	dead := copyFixture(t, dir, "fire", "dead_defense")
	never := copyFixture(t, dir, "clean", "dead_defense")
	live := filepath.Join(detectFixtures, "liveness", "live.jsonl")
	for _, tc := range []struct {
		name    string
		args    []string
		verdict string
		want    ExitCode
	}{
		{"A recording where the retry fired is live and exits 0.", []string{live}, "live", ExitOK},
		{"A clean recording is never_needed and exits 0.", []string{never}, "never_needed", ExitOK},
		{"The retry's condition without a trigger is dead, a warning, which passes the default gate.", []string{dead}, "dead", ExitOK},
		{"A dead defense fails --fail-on warning.", []string{dead, "--fail-on", "warning"}, "dead", ExitGate},
		{"A dead defense passes --fail-on never.", []string{dead, "--fail-on", "never"}, "dead", ExitOK},
		{"Next to a recording where it fired, the retry is live, so the corpus passes.", []string{dead, live, "--fail-on", "warning"}, "live", ExitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, append([]string{"detect", "--defenses", "--format", "json"}, tc.args...)...)
			if code != tc.want {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tc.want, stdout, stderr)
			}
			var lv struct {
				Defenses []struct {
					Defense, Verdict string
					Held             int
				}
			}
			if err := json.Unmarshal([]byte(stdout), &lv); err != nil {
				t.Fatalf("%v\n%s", err, stdout)
			}
			got := ""
			for _, d := range lv.Defenses {
				if d.Defense == "empty_input_retry" {
					got = d.Verdict
				}
			}
			if got != tc.verdict {
				t.Errorf("empty_input_retry is %q, want %s\n%s", got, tc.verdict, stdout)
			}
			if code == ExitGate && !strings.Contains(stderr, "dead") {
				t.Errorf("a failed gate should say why on stderr: %q", stderr)
			}
		})
	}
	t.Run("The table and markdown formats show the dead defense and where its condition held.", func(t *testing.T) {
		for _, format := range []string{"table", "markdown"} {
			_, stdout, _ := runCLI(t, nil, "detect", "--defenses", "--format", format, dead)
			if !strings.Contains(stdout, "empty_input_retry is dead") || !strings.Contains(stdout, dead+":4 (+7,10)") ||
				!strings.Contains(stdout, "not_observable") {
				t.Errorf("--format %s:\n%s", format, stdout)
			}
		}
	})
	t.Run("SARIF is not a liveness table format.", func(t *testing.T) {
		if code, _, stderr := runCLI(t, nil, "detect", "--defenses", "--format", "sarif", dead); code != ExitInvalid {
			t.Errorf("exit %d, want %d: %s", code, ExitInvalid, stderr)
		}
	})
}
