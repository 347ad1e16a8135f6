package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// importerFixtures are the transcripts the real clients wrote against
// retrace mock serve (see importer/testdata/gen).
const importerFixtures = "../../importer/testdata"

// The acceptance line of issue 17: an imported Claude Code session and an
// imported Codex session validate, and metrics, detect and report work on
// them with tool-level results, through the CLI as a user runs it.
func TestImportedClaudeCodeAndCodexSessionsServeValidateMetricsDetectAndReport(t *testing.T) {
	runs := t.TempDir()
	for _, imp := range []struct{ format, dir, want string }{
		{"claude-code", "claudecode", "2 sessions from 1 file: 2 imported"},
		{"codex", "codex", "1 session from 1 file: 1 imported"},
	} {
		code, stdout, stderr := runCLI(t, nil, "import", imp.format, filepath.Join(importerFixtures, imp.dir), "--runs", runs)
		if code != ExitOK || !strings.Contains(stdout, imp.want) {
			t.Fatalf("import %s: exit %d, stdout %q, stderr %q; want 0 and %q", imp.format, code, stdout, stderr, imp.want)
		}
	}

	code, stdout, stderr := runCLI(t, nil, "validate", runs)
	if code != ExitOK || !strings.Contains(stderr, "ok: 3 files") || !strings.Contains(stderr, "no problems") {
		t.Fatalf("validate: exit %d, stdout %q, stderr %q; want 0, 3 files, no problems", code, stdout, stderr)
	}

	// The funnel counts every call of the transcripts: Claude Code's main
	// session made 5 (Read ×2, Bash ×2, Agent), its subagent 1 Read, and
	// Codex 4 exec_command calls.
	funnel := metricRows(t, runs, "funnel")
	want := map[string][3]float64{ // calls, successes, failures
		"(all)":        {10, 6, 4},
		"Read":         {3, 2, 1},
		"Bash":         {2, 1, 1},
		"Agent":        {1, 1, 0},
		"exec_command": {4, 2, 2},
	}
	if len(funnel) != len(want) {
		t.Errorf("funnel has %d rows, want %d: %v", len(funnel), len(want), funnel)
	}
	for _, row := range funnel {
		tool, _ := row["tool"].(string)
		w, ok := want[tool]
		got := [3]float64{num(row["calls"]), num(row["successes"]), num(row["failures"])}
		if !ok || got != w {
			t.Errorf("funnel row %s = %v, want %v", tool, got, w)
		}
	}
	// A denied call is permission_denied, a failed one tool_error.
	kinds := map[string]float64{}
	for _, row := range metricRows(t, runs, "failure_kinds") {
		kinds[row["failure_kind"].(string)] = num(row["failures"])
	}
	if kinds["tool_error"] != 3 || kinds["permission_denied"] != 1 {
		t.Errorf("failure_kinds %v, want tool_error 3 and permission_denied 1", kinds)
	}
	// Codex states each command's wall time in its output's header;
	// Claude Code logs none, so only exec_command has latency rows (never
	// a batch split into calls).
	latency := metricRows(t, runs, "latency")
	if len(latency) != 1 || latency[0]["tool"] != "exec_command" || num(latency[0]["calls_with_duration"]) != 4 {
		t.Errorf("latency rows %v, want one for exec_command with its 4 calls", latency)
	}

	code, stdout, stderr = runCLI(t, nil, "detect", runs, "--format", "json")
	if code != ExitOK {
		t.Fatalf("detect: exit %d, stderr %q", code, stderr)
	}
	var det struct {
		Sessions int            `json:"sessions"`
		Events   int            `json:"events"`
		Counts   map[string]int `json:"counts"`
	}
	if err := json.Unmarshal([]byte(stdout), &det); err != nil {
		t.Fatalf("detect --format json: %v\n%s", err, stdout)
	}
	// The sessions are clean: every call paired and ended, so the
	// detectors that check tool-level pairing find nothing, over all
	// three sessions.
	if det.Sessions != 3 || det.Events == 0 || len(det.Counts) == 0 || det.Counts["lost_call"] != 0 || det.Counts["unpaired_tool_use"] != 0 {
		t.Errorf("detect ran over %d sessions, %d events, counts %v; want 3 sessions, no lost or unpaired call", det.Sessions, det.Events, det.Counts)
	}

	out := filepath.Join(t.TempDir(), "report.html")
	code, _, stderr = runCLI(t, nil, "report", runs, "-o", out)
	if code != ExitOK || !strings.Contains(stderr, "3 sessions") {
		t.Fatalf("report: exit %d, stderr %q; want 0 and 3 sessions", code, stderr)
	}
	html, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"exec_command", "Read", "Bash", "Agent"} {
		if !strings.Contains(string(html), ">"+tool+"<") {
			t.Errorf("report has no cell for tool %s", tool)
		}
	}
}

// metricRows runs one named metric over runs and returns its rows.
func metricRows(t *testing.T, runs, metric string) []map[string]any {
	t.Helper()
	code, stdout, stderr := runCLI(t, nil, "metrics", runs, "--metric", metric, "--format", "json")
	if code != ExitOK {
		t.Fatalf("metrics --metric %s: exit %d, stderr %q", metric, code, stderr)
	}
	var out map[string][]map[string]any
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("metrics --metric %s --format json: %v\n%s", metric, err, stdout)
	}
	return out[metric]
}

// num reads a JSON number.
func num(v any) float64 {
	f, _ := v.(float64)
	return f
}
