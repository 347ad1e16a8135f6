package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A trajectory piped into detect reaches the detectors over the event
// stream too, since they run on the events the load decodes: the findings
// and the liveness table are those of the same file on disk.
func TestDetectReadsStandardInputWithEveryDetector(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fixture string
		args    []string
		want    string
	}{
		{"A Go detector finds an unpaired tool_use piped in.", "unpaired_tool_use", []string{"--format", "json"}, `"unpaired_tool_use": 1`},
		{"--defenses over a trajectory piped in shows the dead defense.", "dead_defense", []string{"--defenses", "--format", "json"}, `"verdict": "dead"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(detectFixtures, "fire", tc.fixture+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			_, piped, stderr := runCLIWithInput(t, string(b), nil, append([]string{"detect", "-"}, tc.args...)...)
			if !strings.Contains(piped, tc.want) || strings.Contains(stderr, "SQL detectors only") {
				t.Fatalf("stdout %s\nstderr %s\nwant %s and no file seen by the SQL detectors only", piped, stderr, tc.want)
			}
			file := filepath.Join(detectFixtures, "fire", tc.fixture+".jsonl")
			_, fromFile, _ := runCLI(t, nil, append([]string{"detect", file}, tc.args...)...)
			if want := strings.ReplaceAll(fromFile, file, `\u003cstdin\u003e`); piped != want {
				t.Fatalf("piped:\n%s\nfrom the file, renamed:\n%s", piped, want)
			}
		})
	}
}
