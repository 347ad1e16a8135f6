//go:build linux

package scenarios

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// fakeClaude is a claude on PATH that says it is version 9.9.9 and, run
// as the profile runs it, asks the mock for one reply with curl.
const fakeClaude = `#!/bin/sh
if [ "$1" = --version ]; then echo "9.9.9 (Claude Code)"; exit 0; fi
curl -sS -o /dev/null -H "content-type: application/json" -H "anthropic-version: 2023-06-01" \
  -d "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"$2\"}]}" "$ANTHROPIC_BASE_URL/v1/messages"
`

// TestTheClientsVersionIsRecordedAndAMismatchWarnedOnce checks that a
// profile's client is asked its version once per eval: the version is in
// every run's result and session_start tags, and a version other than
// the profile's tested one is warned of in one line, once.
func TestTheClientsVersionIsRecordedAndAMismatchWarnedOnce(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skipf("curl is not installed: %v", err)
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(fakeClaude), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Parse([]byte(strings.Replace(agentMinimal, "name: agent_minimal", "name: agent_minimal\nrepeat: 2", 1)), "s.txtar")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var warned []string
	res, err := Run(t.Context(), []*Scenario{s}, Options{Parallel: 2, Out: t.TempDir(), AgentPath: bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		Warn: func(m string) { mu.Lock(); warned = append(warned, m); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	var versionWarnings []string
	for _, w := range warned {
		if strings.Contains(w, "is version") {
			versionWarnings = append(versionWarnings, w)
		}
	}
	want := "WARNING: claude is version 9.9.9; retrace's claude-code profile is tested with 2.1.328 (its flags, environment and wire may differ; npm install -g @anthropic-ai/claude-code@2.1.328)"
	if len(versionWarnings) != 1 || versionWarnings[0] != want {
		t.Fatalf("version warnings %q, want once %q", versionWarnings, want)
	}
	runs := res.Scenarios[0].Runs
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2", len(runs))
	}
	for _, run := range runs {
		if run.Error != "" || run.AgentVersion != "9.9.9" {
			t.Fatalf("run %d: error %q, agent_version %q; want 9.9.9", run.Repeat, run.Error, run.AgentVersion)
		}
		evs, err := trajectory.ReadFile(run.Trajectory)
		if err != nil {
			t.Fatal(err)
		}
		if st := evs[0].Payload.(*trajectory.SessionStart); st.Tags["agent_version"] != "9.9.9" {
			t.Fatalf("session_start tags %v, want agent_version 9.9.9", st.Tags)
		}
	}
}

func TestParseVersionReadsTheClientsOutputs(t *testing.T) {
	for out, want := range map[string]string{
		"2.1.328 (Claude Code)": "2.1.328", "codex-cli 0.171.0": "0.171.0", "1.18.33": "1.18.33",
		"tool 2.0.0-beta.1\n": "2.0.0-beta.1", "no version here": "",
	} {
		if got := parseVersion(out); got != want {
			t.Errorf("parseVersion(%q) = %q, want %q", out, got, want)
		}
	}
	p := profiles[ProfileCodex]
	if w := versionMismatch(ProfileCodex, p, p.tested); w != "" {
		t.Errorf("the tested version is warned of: %q", w)
	}
	if w := versionMismatch(ProfileCodex, p, "0.172.0"); w == "" || strings.Contains(w, "\n") {
		t.Errorf("another version: warning %q, want one line", w)
	}
}
