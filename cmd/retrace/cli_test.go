package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCLI runs one retrace command line in-process.
func runCLI(t *testing.T, env map[string]string, args ...string) (code ExitCode, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	sys := &IO{
		In: strings.NewReader(""), Out: &out, Err: &errOut,
		Getenv: func(k string) string { return env[k] },
		Now:    func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) },
	}
	code = run(sys, args)
	return code, out.String(), errOut.String()
}

const fixtures = "../../trajectory/testdata"

func TestValidateExitsZeroOnTheValidFixtures(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "validate", fixtures+"/valid")
	if code != ExitOK || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and no problems", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "ok: 7 files") || !strings.Contains(stderr, "torn_last_line.jsonl:11: warning:") {
		t.Fatalf("stderr %q should summarise 7 files and warn about the torn line", stderr)
	}
}

func TestValidateExitsTwoAndNamesFileAndLineForEveryInvalidFixture(t *testing.T) {
	files, _ := filepath.Glob(fixtures + "/invalid/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no invalid fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, stdout, _ := runCLI(t, nil, "validate", f)
			if code != ExitInvalid {
				t.Fatalf("exit %d, want 2", code)
			}
			for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
				rest, ok := strings.CutPrefix(line, f+":")
				if !ok || len(rest) < 3 || rest[0] < '1' || rest[0] > '9' || !strings.Contains(rest, ": ") {
					t.Errorf("problem line %q is not %s:LINE: what is wrong", line, f)
				}
			}
		})
	}
}

func TestValidateReadsTheRunsDirectoryFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(fixtures + "/valid/basic.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.jsonl"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, map[string]string{"RETRACE_DIR": dir}, "validate"); code != ExitOK || !strings.Contains(stderr, "ok: 1 file, 11 events") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "validate", "--runs", t.TempDir()); code != ExitInvalid || !strings.Contains(stderr, "holds no .jsonl files") {
		t.Fatalf("empty runs dir: exit %d, stderr %q; want 2 saying the directory holds no runs", code, stderr)
	}
}

func TestValidateJSONIsMachineReadable(t *testing.T) {
	code, stdout, _ := runCLI(t, nil, "validate", "--format", "json", fixtures+"/invalid/seq_gap.jsonl", fixtures+"/valid/basic.jsonl")
	if code != ExitInvalid {
		t.Fatalf("exit %d, want 2", code)
	}
	var doc validateJSON
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if doc.Valid || doc.Problems != 1 || len(doc.Files) != 2 {
		t.Fatalf("doc = %+v, want 2 files with 1 problem", doc)
	}
	p := doc.Files[0].Problems[0]
	if doc.Files[0].File != fixtures+"/invalid/seq_gap.jsonl" || p.Line != 5 || p.Kind != "seq" {
		t.Fatalf("first problem = %+v in %s, want seq at line 5 of seq_gap", p, doc.Files[0].File)
	}
}

func TestBadInputGetsAClearMessageAndExitTwo(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "bin.jsonl")
	if err := os.WriteFile(binary, []byte("\x7fELF\x00\x00\x01"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a path that does not exist", []string{"validate", filepath.Join(dir, "nope.jsonl")}, "nope.jsonl: no such file or directory"},
		{"a glob that matches nothing", []string{"validate", filepath.Join(dir, "*.none")}, "matched no files"},
		{"a binary file", []string{"validate", binary}, "binary data"},
		{"an unknown flag", []string{"validate", "--bogus"}, "unknown flag: --bogus"},
		{"an unknown format", []string{"validate", "--format", "xml", fixtures + "/valid"}, `--format "xml" is not supported`},
		{"an unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, tt.args...)
			if code != ExitInvalid {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, stderr)
			}
			if !strings.Contains(stdout+stderr, tt.want) {
				t.Fatalf("output %q does not say %q", stdout+stderr, tt.want)
			}
		})
	}
}

func TestVersionPrintsTheTrajectoryVersion(t *testing.T) {
	code, stdout, _ := runCLI(t, nil, "version")
	if code != ExitOK || !strings.HasPrefix(stdout, "retrace ") || !strings.Contains(stdout, "trajectory v2") {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	code, stdout, _ = runCLI(t, nil, "version", "--format", "json")
	var info versionInfo
	if code != ExitOK || json.Unmarshal([]byte(stdout), &info) != nil || info.TrajectoryVersion != 2 {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
}

func TestHelpTeachesTheCommands(t *testing.T) {
	code, stdout, _ := runCLI(t, nil, "--help")
	if code != ExitOK || !strings.Contains(stdout, "validate") || !strings.Contains(stdout, "Exit codes") {
		t.Fatalf("exit %d, help %q", code, stdout)
	}
	code, stdout, _ = runCLI(t, nil)
	if code != ExitOK || !strings.Contains(stdout, "Available Commands") {
		t.Fatalf("bare retrace: exit %d, output %q; want the help", code, stdout)
	}
}
