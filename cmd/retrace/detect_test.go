package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/report"
)

const detectFixtures = "../../detectors/testdata"

// copyFixture copies a detector fixture into a new directory and returns
// the copy's path, so that a test can load it alone or next to others.
func copyFixture(t *testing.T, dir, kind, id string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(detectFixtures, kind, id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, kind+"-"+id+".jsonl")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDetectExitCodesFollowFailOn(t *testing.T) {
	dir := t.TempDir()
	errorFile := copyFixture(t, dir, "fire", "lost_call")        // an error finding
	warningFile := copyFixture(t, dir, "fire", "denial_loop")    // a warning finding
	infoFile := copyFixture(t, dir, "fire", "hallucinated_tool") // an info finding
	cleanFile := copyFixture(t, dir, "clean", "lost_call")
	for _, tc := range []struct {
		name string
		args []string
		want ExitCode
	}{
		{"A clean session exits 0.", []string{cleanFile}, ExitOK},
		{"An error finding fails the default gate with 3.", []string{errorFile}, ExitGate},
		{"A warning finding passes the default gate, which is error.", []string{warningFile}, ExitOK},
		{"A warning finding fails --fail-on warning.", []string{warningFile, "--fail-on", "warning"}, ExitGate},
		{"An info finding passes --fail-on warning.", []string{infoFile, "--fail-on", "warning"}, ExitOK},
		{"An info finding fails --fail-on info.", []string{infoFile, "--fail-on", "info"}, ExitGate},
		{"--fail-on never passes whatever is found.", []string{errorFile, "--fail-on", "never"}, ExitOK},
		{"--skip of the only firing detector passes.", []string{errorFile, "--skip", "lost_call"}, ExitOK},
		{"--only of a detector that does not fire passes.", []string{errorFile, "--only", "denial_loop,unbounded_label"}, ExitOK},
		{"An unknown --fail-on is bad usage.", []string{errorFile, "--fail-on", "fatal"}, ExitInvalid},
		{"An unknown detector id is bad usage.", []string{errorFile, "--only", "lost_calls"}, ExitInvalid},
		{"An unknown format is bad usage.", []string{errorFile, "--format", "xml"}, ExitInvalid},
		{"A missing path is bad input.", []string{filepath.Join(dir, "nope.jsonl")}, ExitInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, append([]string{"detect"}, tc.args...)...)
			if code != tc.want {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tc.want, stdout, stderr)
			}
			if code == ExitGate && !strings.Contains(stderr, "at or above") {
				t.Errorf("a failed gate should say why on stderr: %q", stderr)
			}
		})
	}
}

func TestDetectRefusesABadLineUnlessLenientAndNamesFileAndLine(t *testing.T) {
	dir := t.TempDir()
	p := copyFixture(t, dir, "fire", "lost_call")
	b, _ := os.ReadFile(p)
	lines := strings.SplitAfter(string(b), "\n")
	lines[2] = "{not json\n"
	if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, nil, "detect", p, "--format", "json")
	if code != ExitInvalid || !strings.Contains(stderr, p+":3:") {
		t.Fatalf("strict: exit %d, stderr %q; want 2 naming %s:3", code, stderr, p)
	}
	var doc struct {
		Error errorJSON `json:"error"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.Error.Code != ExitInvalid || len(doc.Error.Problems) != 1 || doc.Error.Problems[0].Line != 3 {
		t.Fatalf("strict: stdout is not the JSON error document naming line 3 (%v): %s", err, stdout)
	}
	// Lenient: the bad line is skipped and the lost call is still found,
	// at its line in the file.
	code, stdout, stderr = runCLI(t, nil, "detect", p, "--lenient", "--format", "json")
	if code != ExitGate {
		t.Fatalf("lenient: exit %d, want 3\n%s\n%s", code, stdout, stderr)
	}
	var rep report.DetectJSON
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Counts["lost_call"] != 1 || rep.Findings[0].Evidence[0].Line != 5 {
		t.Fatalf("lenient: findings %+v", rep.Findings)
	}
}

func TestDetectFormatsCarryTheFindingAndItsLine(t *testing.T) {
	dir := t.TempDir()
	p := copyFixture(t, dir, "fire", "denial_loop")
	for _, tc := range []struct {
		name   string
		format string
		want   []string
	}{
		{"The table has the counts, then the finding at file:line, then the next step.", "table",
			[]string{"denial_loop", p + ":7 (+15,23)", "next steps", "docs/failure-modes.md"}},
		{"Markdown has the same as tables.", "markdown",
			[]string{"## detectors", "| denial_loop | 0 | 1 | 0 | 1 |", p + ":7 (+15,23)"}},
		{"GitHub annotations name the file and line.", "github",
			[]string{"::warning file=" + filepath.ToSlash(p) + ",line=7,title=denial_loop%3A "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, "detect", p, "--format", tc.format)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			// The table wraps long lines at spaces, and a long temporary
			// directory moves where: the words are compared, not the
			// breaks.
			words := strings.Join(strings.Fields(stdout), " ")
			for _, w := range tc.want {
				if !strings.Contains(words, w) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
	t.Run("JSON is one document with every detector's count and the evidence.", func(t *testing.T) {
		code, stdout, _ := runCLI(t, nil, "detect", p, "--format", "json")
		var rep report.DetectJSON
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != ExitOK {
			t.Fatalf("exit %d, %v: %s", code, err, stdout)
		}
		if len(rep.Counts) != len(rep.Detectors) || rep.Counts["denial_loop"] != 1 || rep.Counts["lost_call"] != 0 {
			t.Errorf("counts %v", rep.Counts)
		}
		// The fixture's defense is also dead (its trigger was planted
		// away), which dead_defense reports next to the loop.
		i := slices.IndexFunc(rep.Findings, func(f detectors.Finding) bool { return f.Detector == "denial_loop" })
		if i < 0 {
			t.Fatalf("no denial_loop finding: %+v", rep.Findings)
		}
		f := rep.Findings[i]
		if f.Detector != "denial_loop" || len(f.Evidence) != 3 || f.Evidence[2].Line != 23 || f.Evidence[2].Seq != 23 || f.NextStep == "" {
			t.Errorf("finding %+v", f)
		}
	})
}

func TestDetectListDocumentsEveryDetector(t *testing.T) {
	code, stdout, _ := runCLI(t, nil, "detect", "--list")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	code, js, _ := runCLI(t, nil, "detect", "--list", "--format", "json")
	var infos []struct{ ID, Severity, About string }
	if err := json.Unmarshal([]byte(js), &infos); err != nil || code != ExitOK || len(infos) < 10 {
		t.Fatalf("exit %d, %v, %d detectors", code, err, len(infos))
	}
	// The source document's sections are nobody's to open: no output
	// cites them (docs/failure-modes.md explains each mode).
	if strings.Contains(js, `"seed"`) || strings.Contains(js, "§") {
		t.Errorf("detect --list --format json cites the source document:\n%s", js)
	}
	for _, in := range infos {
		if !strings.Contains(stdout, in.ID+" ("+in.Severity+"): ") || in.About == "" {
			t.Errorf("--list does not document %s", in.ID)
		}
	}
	code, only, _ := runCLI(t, nil, "detect", "--list", "--only", "lost_call")
	if code != ExitOK || !strings.HasPrefix(only, "lost_call ") || strings.Contains(only, "denial_loop") {
		t.Errorf("--list --only lost_call printed %q", only)
	}
}
