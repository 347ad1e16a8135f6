package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

const goldenScenario = `A golden scenario: its expectations are rewritten by --update.
-- scenario.yaml --
name: golden_fix
tags: [golden]   # rewritten by retrace eval --update
prompt: Fix calc.go.
config:
  permissions: {mode: bypass}
model:
  turns:
    - content: [{tool_use: {name: read, input: {file_path: calc.go}}}]
    - content: [{tool_use: {name: edit, input: {file_path: calc.go, old_string: "a - b", new_string: "a + b"}}}, {tool_use: {name: bash, input: {command: "rm old.txt"}}}]
    - content: [{text: Done.}]
expect:
  # The outcome, as it was.
  outcome: {reason: end_turn, turns: 1}  # wrong on purpose
  events:
    - {tool_called: read, count: 5}
    - {tool_called: read, input: {file_path: calc.go}}
    - {tool_not_called: write}
  files:
    - {path: calc.go, contains: "a * b"}
    - {path: README.md, unchanged: true}
-- workspace/calc.go --
package calc

func Add(a, b int) int { return a - b }
-- workspace/README.md --
A project.
-- workspace/old.txt --
old
`

// writeScenario writes src to dir/name and loads it.
func writeScenario(t *testing.T, dir, name, src string) *Scenario {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	suite, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return suite[0]
}

// runGolden runs suite recording golden runs and updates them.
func runGolden(t *testing.T, suite []*Scenario, opts Options) ([]UpdateResult, *results.Results) {
	t.Helper()
	g := NewGolden()
	opts.AfterRun = g.AfterRun
	res := runSuite(t, suite, opts)
	return g.Update(suite, res), res
}

func TestUpdateRewritesAGoldenScenarioFromWhatItsRunDid(t *testing.T) {
	dir := t.TempDir()
	s := writeScenario(t, dir, "golden.txtar", goldenScenario)
	ups, res := runGolden(t, []*Scenario{s}, Options{})
	if res.Worst() != results.VerdictFail {
		t.Fatalf("the golden scenario's old expectations hold:\n%s", table(res))
	}
	if len(ups) != 1 || !ups[0].Updated || ups[0].Refused != "" {
		t.Fatalf("update: %+v", ups)
	}
	data, err := os.ReadFile(s.File)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	for _, c := range []struct{ name, want string }{
		{"the archive's comment is kept", "A golden scenario: its expectations are rewritten by --update.\n-- scenario.yaml --\n"},
		{"a line comment is kept", "tags: [golden] # rewritten by retrace eval --update\n"},
		{"a head comment is kept", "  # The outcome, as it was.\n"},
		{"the outcome is what happened, with its comment", "  outcome: {reason: end_turn, exit_code: 0, turns: 3} # wrong on purpose\n"},
		{"each tool's count replaces the plain counts, in their place", "    - {tool_called: bash, count: 1}\n    - {tool_called: edit, count: 1}\n    - {tool_called: read, count: 1}\n    - {tool_called: read, input: {file_path: calc.go}}\n    - {tool_not_called: write}\n"},
		{"a changed file is expected to equal its content", "    - path: calc.go\n      equals: |\n        package calc\n\n        func Add(a, b int) int { return a + b }\n"},
		{"a deleted file is expected not to exist", "    - {path: old.txt, exists: false}\n"},
		{"an entry about a file the run did not touch is kept", "    - {path: README.md, unchanged: true}\n"},
		{"the workspace files are kept byte for byte", "-- workspace/old.txt --\nold\n"},
	} {
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: the file does not hold %q:\n%s", c.name, c.want, got)
		}
	}
	// The rewritten scenario passes, and a second update changes nothing.
	s = writeScenario(t, dir, "golden.txtar", got)
	ups, res = runGolden(t, []*Scenario{s}, Options{})
	if res.Worst() != results.VerdictPass {
		t.Fatalf("the updated scenario does not pass:\n%s\n%s", table(res), got)
	}
	if len(ups) != 1 || ups[0].Updated || ups[0].Refused != "" {
		t.Errorf("a second update: %+v", ups)
	}
	if again, _ := os.ReadFile(s.File); string(again) != got {
		t.Errorf("a second update rewrote the file:\n%s", again)
	}
}

func TestUpdateRefusesWhatItCannotRewriteFaithfully(t *testing.T) {
	dir := t.TempDir()
	flaky := strings.NewReplacer(
		"name: golden_fix", "name: golden_flaky",
		`{tool_use: {name: bash, input: {command: "rm old.txt"}}}`, `{tool_use: {name: bash, input: {command: "test $(( $(basename \"$PWD\") % 2 )) -eq 1 || rm old.txt"}}}`,
	).Replace(goldenScenario)
	plain := strings.Replace(goldenScenario, "tags: [golden]", "tags: [other]", 1)
	plain = strings.Replace(plain, "name: golden_fix", "name: not_golden", 1)
	cases := []struct {
		name    string
		src     string
		repeat  int
		errored bool
		refused string
	}{
		{"a scenario whose runs did different things is refused", flaky, 2, false, "its runs did different things (flaky)"},
		{"a scenario that errored is refused", goldenScenario, 1, true, "it errored"},
		{"a scenario that is not golden is left alone", plain, 1, false, ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := writeScenario(t, dir, strings.Repeat("x", i+1)+".txtar", c.src)
			g := NewGolden()
			res := runSuite(t, []*Scenario{s}, Options{Repeat: c.repeat, AfterRun: g.AfterRun})
			if c.errored {
				res.Scenarios[0].Verdict = results.VerdictError
			}
			ups := g.Update([]*Scenario{s}, res)
			if c.refused == "" {
				if len(ups) != 0 {
					t.Errorf("update: %+v", ups)
				}
			} else if len(ups) != 1 || !strings.Contains(ups[0].Refused, c.refused) || ups[0].Updated {
				t.Errorf("update: %+v, want refused %q", ups, c.refused)
			}
			if data, _ := os.ReadFile(s.File); string(data) != c.src {
				t.Errorf("the file was rewritten:\n%s", data)
			}
		})
	}
}
