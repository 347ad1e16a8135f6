package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// minimal is a valid scenario that each case below breaks.
const minimal = `-- scenario.yaml --
name: minimal
prompt: Say done.
model:
  turns:
    - content: [{text: Done.}]
expect:
  outcome: {reason: end_turn}
-- workspace/README.md --
A project.
`

func TestParseReportsEveryProblemWithItsFileAndLine(t *testing.T) {
	cases := []struct {
		name    string
		archive string
		want    []string
	}{
		{"a YAML syntax error in scenario.yaml names its line in the archive",
			"comment\n-- scenario.yaml --\nname: x\nprompt: a: b\n", []string{"s.txtar:4: scenario.yaml is not valid YAML"}},
		{"an unknown top-level key is refused at its line",
			strings.Replace(minimal, "prompt: Say done.", "prompt: Say done.\npromt: typo", 1), []string{`s.txtar:4: scenario.yaml: unknown key "promt"`}},
		{"an unknown expectation key is refused at its line",
			strings.Replace(minimal, "  outcome: {reason: end_turn}", "  outcome: {reason: end_turn}\n  event: []", 1), []string{`s.txtar:9: expect: unknown key "event"`}},
		{"an unknown key inside an event expectation is refused",
			strings.Replace(minimal, "  outcome: {reason: end_turn}", "  events:\n    - {tool_called: bash, inptu: {}}", 1), []string{`s.txtar:9: expect.events[0]: unknown key "inptu"`}},
		{"an unknown detector id is refused naming the catalog",
			strings.Replace(minimal, "  outcome: {reason: end_turn}", "  detectors:\n    fire: {no_such_detector: 1}", 1), []string{`s.txtar:9: expect.detectors: unknown detector "no_such_detector"`}},
		{"a detector that judges a corpus is refused",
			strings.Replace(minimal, "  outcome: {reason: end_turn}", "  detectors:\n    not_fire: [dead_defense]", 1), []string{"s.txtar:9: expect.detectors: dead_defense judges a corpus"}},
		{"closed sets are checked: end reason, failure kind, defense, source, event type",
			strings.Replace(minimal, "  outcome: {reason: end_turn}", "  outcome: {reason: done}\n  events:\n    - {failure: oops}\n    - {defense: magic}\n    - {permission: deny, source: god}\n    - {event: nothing}\n    - {permission: maybe}", 1),
			[]string{`s.txtar:8: expect.outcome.reason "done"`, `s.txtar:10: expect.events[0].failure "oops"`, `s.txtar:11: expect.events[1].defense "magic"`,
				`s.txtar:12: expect.events[2].source "god"`, `s.txtar:13: expect.events[3].event "nothing"`, `s.txtar:14: expect.events[4].permission "maybe"`}},
		{"a model script's problem names its line in the archive",
			strings.Replace(minimal, "    - content: [{text: Done.}]", "    - content: [{text: Done.}]\n      stop_reason: whatever", 1), []string{"s.txtar:7: model: "}},
		{"a config's unknown field names its line in the archive",
			strings.Replace(minimal, "model:", "config:\n  permissions:\n    mdoe: bypass\nmodel:", 1), []string{"s.txtar:6: config: field mdoe not found"}},
		{"a missing prompt and model are both reported",
			"-- scenario.yaml --\nname: x\n", []string{"s.txtar:2: no prompt", "s.txtar:2: no model"}},
		{"an archive without scenario.yaml is refused",
			"-- workspace/a.txt --\nx\n", []string{"s.txtar:1: no scenario.yaml section"}},
		{"a byte-order mark that hides the first marker is named, not called a missing section",
			"\ufeff" + minimal, []string{"s.txtar:1: the file starts with a byte-order mark (U+FEFF)"}},
		{"an unknown section and a path leaving the workspace are refused",
			minimal + "-- notes.txt --\nx\n-- workspace/../etc/passwd --\nx\n", []string{`s.txtar:11: unknown section "notes.txt"`, `s.txtar:13: workspace file "workspace/../etc/passwd"`}},
		{"unchanged on a file the scenario does not give is refused",
			strings.Replace(minimal, "  outcome: {reason: end_turn}", "  files:\n    - {path: missing.go, unchanged: true}", 1), []string{"s.txtar:9: expect.files[0]: unchanged, but the scenario has no workspace/missing.go"}},
		{"bounds that cannot hold are refused",
			strings.Replace(minimal, "  outcome: {reason: end_turn}", "  outcome: {turns: {min: 3, max: 1}}\n  events:\n    - {tool_not_called: bash, count: 1}\n    - {tool_called: bash, count: 1, min: 1}", 1),
			[]string{"s.txtar:8: expect.outcome.turns: min 3 is above max 1", "s.txtar:10: expect.events[0]: tool_not_called means none", "s.txtar:11: expect.events[1]: give count, or min and max, not both"}},
		{"a bad regular expression and a bad name are refused",
			strings.Replace(strings.Replace(minimal, "name: minimal", "name: has space", 1), "  outcome: {reason: end_turn}", "  files:\n    - {path: README.md, matches: \"(\"}", 1),
			[]string{`s.txtar:2: name "has space"`, `s.txtar:9: expect.files[0].matches "("`}},
		{"a workspace file where another needs a directory is refused",
			minimal + "-- workspace/README.md/inside.txt --\nx\n", []string{"s.txtar:11: workspace/README.md/inside.txt needs a directory workspace/README.md"}},
		{"a workspace retrace.yaml that widens the scenario's config is refused at its line",
			minimal + "-- workspace/retrace.yaml --\n# widen\npermissions:\n  mode: bypass\n", []string{"s.txtar:14: workspace/retrace.yaml may only restrict the scenario's config: permissions.mode: bypass"}},
		{"a flow mapping on one line is read whole, and its problems reported",
			"-- scenario.yaml --\n{name: flow, prompt: Hi., model: {turns: []}, repeat: 0}\n", []string{"s.txtar:2: model: `turns` must be a list", "s.txtar:2: repeat must be at least 1"}},
		{"a person who is neither approve nor deny is refused",
			strings.Replace(minimal, "prompt: Say done.", "prompt: Say done.\nperson: maybe", 1), []string{`s.txtar:4: person "maybe": want approve`}},
		{"a model named by a word other than live is refused, pointing at live",
			strings.Replace(minimal, "model:\n  turns:\n    - content: [{text: Done.}]", "model: gpt-4", 1), []string{`s.txtar:4: model: "gpt-4" is not supported; give a script of turns, or ` + "`model: live`"}},
		{"divergences without a reference recording are refused",
			strings.Replace(minimal, "  outcome: {reason: end_turn}", "  divergences:\n    - {class: tool_output_changed}", 1),
			[]string{"s.txtar:9: expect.divergences: the scenario has no reference.jsonl section"}},
		{"a divergence of no class, with an unknown key, or against a broken reference is refused",
			strings.Replace(minimal, "  outcome: {reason: end_turn}", "  divergences:\n    - {class: nope}\n    - {class: end_changed, tool: bash}\n    - {count: 1}", 1) + "-- reference.jsonl --\nnot json\n",
			[]string{`s.txtar:9: expect.divergences[0].class "nope" is not a divergence class; use one of tool_output_changed,`, "s.txtar:10: expect.divergences[1]", "s.txtar:11: expect.divergences[2]: no class", "s.txtar:15: reference.jsonl"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.archive), "s.txtar")
			var pe *ProblemsError
			if !errors.As(err, &pe) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want a *ProblemsError wrapping ErrInvalid", err)
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("the problems do not say %q:\n%s", w, msg)
				}
			}
			if len(pe.Problems) < len(c.want) {
				t.Errorf("%d problems, want at least %d:\n%s", len(pe.Problems), len(c.want), msg)
			}
		})
	}
}

func TestAFlowMappingScenarioParses(t *testing.T) {
	s, err := Parse([]byte("-- scenario.yaml --\n{name: flow, prompt: Hi., model: {turns: [{content: [{text: Done.}]}]}, repeat: 2, config: {limits: {max_turns: 3}}}\n"), "flow.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "flow" || s.Repeat != 2 || s.Config.Limits.MaxTurns != 3 {
		t.Fatalf("parsed %+v", s)
	}
	res := runSuite(t, []*Scenario{s}, Options{})
	if res.Worst() != results.VerdictPass {
		t.Fatalf("the flow scenario fails:\n%s", table(res))
	}
}

func TestALiveScenarioParsesAndErrsWhenRunWithoutAProvider(t *testing.T) {
	s, err := Parse([]byte(strings.Replace(minimal, "model:\n  turns:\n    - content: [{text: Done.}]", "model: live", 1)), "live.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Live || s.Script != nil {
		t.Fatalf("parsed Live=%v Script=%q, want a live scenario without a script", s.Live, s.Script)
	}
	res := runSuite(t, []*Scenario{s}, Options{})
	if res.Worst() != results.VerdictError || !strings.Contains(res.Scenarios[0].Runs[0].Error, "model: live") {
		t.Fatalf("a live scenario run without a provider: want the error verdict naming model: live, got:\n%s", table(res))
	}
}

func TestTheMinimalScenarioParses(t *testing.T) {
	s, err := Parse([]byte(minimal), "dir/minimal.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "minimal" || s.Prompt != "Say done." || s.Repeat != 1 || string(s.Files["README.md"]) != "A project.\n" || s.Expect.Outcome.Reason != "end_turn" {
		t.Fatalf("parsed %+v", s)
	}
}

func TestLoadReportsTheProblemsOfEveryFileAndDuplicateNames(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txtar", minimal)
	write("b.txtar", minimal)
	write("c.txtar", strings.Replace(minimal, "prompt: Say done.", "prompt: Say done.\nbogus: 1", 1))
	write("d.txtar", strings.Replace(minimal, "name: minimal", "name: other\nrepeat: 0", 1))
	_, err := Load(dir, filepath.Join(dir, "missing.txtar"))
	if err == nil {
		t.Fatal("a bad suite loaded")
	}
	for _, w := range []string{
		filepath.Join(dir, "b.txtar") + `:2: scenario name "minimal" is taken by ` + filepath.Join(dir, "a.txtar"),
		filepath.Join(dir, "c.txtar") + `:4: scenario.yaml: unknown key "bogus"`,
		filepath.Join(dir, "d.txtar") + ":3: repeat must be at least 1",
		filepath.Join(dir, "missing.txtar") + ": cannot read it",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the problems do not say %q:\n%v", w, err)
		}
	}
	if suite, err := Load(filepath.Join(dir, "a.txtar")); err != nil || len(suite) != 1 {
		t.Fatalf("a good file: %v, %d scenarios", err, len(suite))
	}
}

// FuzzParse feeds arbitrary archives to Parse: it must never panic, and
// either parse or report problems, each with the file's name.
func FuzzParse(f *testing.F) {
	entries, _ := suiteFS.ReadDir("suite")
	for _, e := range entries {
		data, _ := suiteFS.ReadFile("suite/" + e.Name())
		f.Add(data)
	}
	f.Add([]byte(minimal))
	f.Add([]byte(agentMinimal))
	f.Add([]byte(strings.Replace(agentMinimal, "agent: claude-code", "agent: {command: [sh, -c, x], wire: anthropic, env: {A: b}, isolation: required}", 1)))
	f.Add([]byte(strings.Replace(replyScenario, "REPLY", `[{turn: 2, equals: x}, {json_schema: {type: object, required: [a]}}]`, 1)))
	f.Add([]byte(strings.Replace(sequenceScenario, "SEQUENCE", `{strict: true, steps: [{tool: read, input_contains: {file_path: c}}, {tool: bash, input_matches: {command: "^ls"}}]}`, 1)))
	f.Add([]byte(strings.NewReplacer("PRICES", "prices: {mock-1: {input_per_mtok: 3}}", "THRESHOLD", `"sum(cost_usd) <= 0.05"`).Replace(costScenario)))
	f.Add([]byte(strings.Replace(minimal, "  outcome: {reason: end_turn}", "  divergences: [{class: tool_output_changed}, {class: call_extra, count: 0}, {class: end_changed, min: 1, max: 2}]", 1) + "-- reference.jsonl --\n" + `{"v":1,"type":"session_start"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "f.txtar")
		if err != nil {
			var pe *ProblemsError
			if !errors.As(err, &pe) || len(pe.Problems) == 0 {
				t.Fatalf("error %v is not a list of problems", err)
			}
			for _, p := range pe.Problems {
				if p.File != "f.txtar" || p.Line < 0 {
					t.Fatalf("problem %+v", p)
				}
			}
			return
		}
		if s == nil || s.Script == nil && !s.Exhibit() || s.Repeat < 1 {
			t.Fatalf("parsed %+v without error", s)
		}
	})
}
