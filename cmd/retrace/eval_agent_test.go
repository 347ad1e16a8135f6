package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// agentScenarios are the scenarios of testdata/agents that retrace eval
// runs with a real agent CLI: the program each needs, and the findings
// each run must have (nil: none at all).
var agentScenarios = []struct {
	file     string
	bin      string
	findings map[string]int
	// calls are the tool calls per tool the run's funnel must hold.
	calls map[string]int
}{
	{"claude_code_clean.txtar", "claude", nil, map[string]int{"Read": 1, "Bash": 1}},
	{"claude_code_hallucinated.txtar", "claude", map[string]int{"hallucinated_tool": 1}, map[string]int{"read_file": 1, "Read": 1, "Bash": 1}},
	{"codex_clean.txtar", "codex", nil, map[string]int{"exec_command": 2}},
	{"codex_hallucinated.txtar", "codex", map[string]int{"hallucinated_tool": 1}, map[string]int{"read_file": 1, "exec_command": 2}},
	{"claude_code_denied.txtar", "claude", nil, map[string]int{"Bash": 1}},
	{"claude_code_retry.txtar", "claude", nil, map[string]int{"Read": 1}},
	// The subagent's session is recorded beside the main one: the funnel
	// over both holds its Read.
	{"claude_code_subagent.txtar", "claude", nil, map[string]int{"Agent": 1, "Read": 1}},
	// A background subagent starts after its Agent call was answered: its
	// session is still linked, by the prompt the call gave it.
	{"claude_code_background_subagent.txtar", "claude", nil, map[string]int{"Agent": 1, "Read": 1}},
	{"codex_refused.txtar", "codex", nil, map[string]int{"exec_command": 1}},
	{"command_isolated.txtar", "curl", nil, map[string]int{}},
	// A mock that answers 500 to every attempt: the profile caps the
	// client's retries, so the run fails after a few attempts (the
	// scenario bounds the model_errors), not after 30.
	{"codex_500.txtar", "codex", nil, map[string]int{}},
	{"claude_code_500.txtar", "claude", nil, map[string]int{}},
	// opencode's title request starts first; main: longest judges the
	// session, and the title's conversation is the run's one side
	// session (its recording holds no call).
	{"opencode_clean.txtar", "opencode", nil, map[string]int{"read": 1, "bash": 1}},
}

// TestEvalOfRealAgentCLIs runs `retrace eval` on scenarios that name an
// agent instead of retrace's runtime (agent: claude-code, agent: codex,
// agent: {command: ...}): each real client runs offline in its own
// network namespace against the mock serving the scenario's script, and
// its session (the wire recording merged with the client's own
// transcript) must pass the scenario's expectations, fire exactly the
// detectors it names, validate, and hold the scripted calls in its
// funnel. --require-isolation makes a run without a namespace an error,
// so a pass proves the agent had no network but the mock.
func TestEvalOfRealAgentCLIs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the real clients take seconds each")
	}
	if out, err := exec.Command("unshare", "-n", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare -n is not permitted here (%v: %s); the real clients run only in a network namespace of their own, never online", err, strings.TrimSpace(string(out)))
	}
	for _, sc := range agentScenarios {
		t.Run(strings.TrimSuffix(sc.file, ".txtar"), func(t *testing.T) {
			if _, err := exec.LookPath(sc.bin); err != nil {
				t.Skipf("%s is not installed (.ci/run installs the agent CLIs with npm): %v", sc.bin, err)
			}
			out := t.TempDir()
			code, stdout, stderr := runCLI(t, nil, "eval", filepath.Join("testdata", "agents", sc.file),
				"--format", "json", "--out", out, "--require-agents", "--require-isolation")
			if code != ExitOK {
				t.Fatalf("retrace eval %s: exit %d\n%s\n%s", sc.file, code, stdout, stderr)
			}
			var res results.Results
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatalf("eval --format json: %v\n%s", err, stdout)
			}
			if len(res.Scenarios) != 1 || len(res.Scenarios[0].Runs) != 1 {
				t.Fatalf("want one scenario with one run, got %+v", res.Scenarios)
			}
			run := res.Scenarios[0].Runs[0]
			if res.Scenarios[0].Verdict != results.VerdictPass || len(run.Warnings) > 0 {
				t.Fatalf("verdict %s, warnings %q, failures %+v; want a pass without warnings", res.Scenarios[0].Verdict, run.Warnings, run.Failures)
			}
			// The client's version is recorded; the pinned one draws no warning.
			if pinned := map[string]string{"claude": "2.1.328", "codex": "0.171.0", "opencode": "1.18.33"}[sc.bin]; run.AgentVersion != pinned || strings.Contains(stderr, "is version") {
				t.Fatalf("agent_version %q, want %q without a warning; stderr:\n%s", run.AgentVersion, pinned, stderr)
			}
			if fmt.Sprint(run.Findings) != fmt.Sprint(sc.findings) {
				t.Fatalf("findings %v, want %v", run.Findings, sc.findings)
			}
			runs := filepath.Join(out, "runs")
			if code, stdout, stderr := runCLI(t, nil, "validate", runs); code != ExitOK {
				t.Fatalf("the merged session does not validate (exit %d):\n%s%s", code, stdout, stderr)
			}
			if got := funnelCalls(t, runs); fmt.Sprint(got) != fmt.Sprint(sc.calls) {
				t.Fatalf("the funnel holds the calls %v, want %v", got, sc.calls)
			}
			// Every session is linked to a parent of the run, is the run's,
			// or is one of its side sessions; only opencode has one (its
			// title request).
			counts, _ := recordingCounts(t, runs)
			if counts["sessions"] != 1+counts["linked"]+len(run.SideSessions) {
				t.Fatalf("%d sessions, %d linked to their parent's call, side sessions %q: want every session but the run's and its sides linked",
					counts["sessions"], counts["linked"], run.SideSessions)
			}
			if wantSides := map[bool]int{true: 1}[sc.bin == "opencode"]; len(run.SideSessions) != wantSides {
				t.Fatalf("side sessions %q, want %d", run.SideSessions, wantSides)
			}
		})
	}
}

// funnelCalls returns the calls per tool of retrace metrics' funnel over
// the recordings in dir.
func funnelCalls(t *testing.T, dir string) map[string]int {
	t.Helper()
	code, stdout, stderr := runCLI(t, nil, "metrics", dir, "--format", "json")
	if code != ExitOK {
		t.Fatalf("metrics: exit %d: %s", code, stderr)
	}
	var m struct {
		Funnel []struct {
			Tool  string `json:"tool"`
			Calls int    `json:"calls"`
		} `json:"funnel"`
	}
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("metrics --format json: %v\n%s", err, stdout)
	}
	got := map[string]int{}
	for _, row := range m.Funnel {
		if row.Tool != "(all)" {
			got[row.Tool] = row.Calls
		}
	}
	return got
}
