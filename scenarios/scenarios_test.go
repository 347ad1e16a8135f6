package scenarios

import (
	"context"
	"path"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/report"
	"github.com/retrace-dev/retrace/results"
)

// runSuite runs suite and fails the test on retrace's own errors.
func runSuite(t testing.TB, suite []*Scenario, opts Options) *results.Results {
	t.Helper()
	res, err := Run(context.Background(), suite, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// table renders results for a test's failure message.
func table(r *results.Results) string {
	var b strings.Builder
	_ = report.WriteEvalTable(&b, r)
	return b.String()
}

// builtinSource returns the text of a built-in scenario file.
func builtinSource(t testing.TB, name string) string {
	t.Helper()
	data, err := suiteFS.ReadFile(path.Join("suite", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestTheBuiltinSuitePasses(t *testing.T) {
	suite, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if len(suite) < 7 {
		t.Fatalf("the built-in suite has %d scenarios, want at least 7", len(suite))
	}
	res := runSuite(t, suite, Options{})
	if res.Worst() != results.VerdictPass || res.Count(results.VerdictPass) != len(suite) {
		t.Fatalf("the built-in suite does not pass:\n%s", table(res))
	}
	exhibits := map[string]bool{}
	for _, s := range suite {
		exhibits[s.Name] = s.Exhibit()
	}
	for _, s := range res.Scenarios {
		for _, run := range s.Runs {
			// An exhibit's recording may have lost its session_end, and
			// with it the count of turns.
			if run.Trajectory == "" || run.Turns == 0 && !exhibits[s.Name] {
				t.Errorf("%s: run %d has no recording or no turns: %+v", s.Name, run.Repeat, run)
			}
		}
	}
}

// TestBreakingOneExpectationOfEachKindFailsNamingIt breaks one expectation
// of a built-in scenario per kind and checks that exactly that scenario
// fails, with a failure naming the broken expectation.
func TestBreakingOneExpectationOfEachKindFailsNamingIt(t *testing.T) {
	cases := []struct {
		name, file, old, new, want string
	}{
		{"an end reason that did not happen fails the outcome", "demo.txtar",
			"reason: end_turn, exit_code: 0, turns: 4", "reason: max_turns, exit_code: 0, turns: 4", "expect.outcome: the session ends with max_turns"},
		{"an exit code that did not happen fails the outcome", "demo.txtar",
			"reason: end_turn, exit_code: 0, turns: 4", "reason: end_turn, exit_code: 4, turns: 4", "expect.outcome: exit code 4"},
		{"a turn count that did not happen fails the outcome", "demo.txtar",
			"exit_code: 0, turns: 4}", "exit_code: 0, turns: {min: 5}}", "expect.outcome: at least 5 turns"},
		{"a file that exists but must not fails", "demo.txtar",
			"{path: build/calc.o, exists: true}", "{path: build/calc.o, exists: false}", "expect.files[2]: build/calc.o does not exist"},
		{"content the file does not contain fails", "demo.txtar",
			`{path: calc.go, contains: "return a + b"}`, `{path: calc.go, contains: "return a * b"}`, `expect.files[0]: calc.go contains "return a * b"`},
		{"content the file does not equal fails", "demo.txtar",
			"{path: README.md, unchanged: true}", `{path: README.md, equals: "other"}`, `expect.files[1]: README.md equals "other"`},
		{"a pattern the file does not match fails", "demo.txtar",
			`{path: calc.go, contains: "return a + b"}`, `{path: calc.go, matches: "a [*] b"}`, "expect.files[0]: calc.go matches /a [*] b/"},
		{"a file the run changed is not unchanged", "demo.txtar",
			"{path: README.md, unchanged: true}", "{path: calc.go, unchanged: true}", "expect.files[1]: calc.go is unchanged"},
		{"a tool call with an input that never came fails", "demo.txtar",
			"{tool_called: edit, input: {file_path: calc.go}}", "{tool_called: edit, input: {file_path: README.md}}", `expect.events[1]: tool edit called with file_path="README.md"`},
		{"a tool that was called is not uncalled", "demo.txtar",
			"{tool_not_called: write}", "{tool_not_called: edit}", "expect.events[3]: tool edit called: never"},
		{"a permission decision by another source fails", "demo.txtar",
			"{permission: deny, source: non_interactive, tool: bash, count: 1}", "{permission: deny, source: rule, tool: bash, count: 1}", "expect.events[4]: permission deny for tool bash by rule"},
		{"a failure count that did not happen fails", "defense_denial_fuse_fires.txtar",
			"{failure: permission_denied, tool: bash, count: 3}", "{failure: permission_denied, tool: bash, count: 2}", "expect.events[2]: tool failure permission_denied for tool bash: count exactly 2"},
		{"a defense that did not trigger fails", "defense_denial_fuse_fires.txtar",
			"{defense: denial_fuse}", "{defense: loop_detection}", "expect.events[1]: defense loop_detection triggered"},
		{"a defense that triggered is not untriggered", "defense_denial_fuse_fires.txtar",
			"{defense: denial_fuse}", "{defense_not_triggered: denial_fuse}", "expect.events[1]: defense denial_fuse triggered: never"},
		{"a reminder count that did not happen fails", "defense_repeated_readonly_fires.txtar",
			"{reminder: repeated_readonly, count: 1}", "{reminder: repeated_readonly, count: 2}", "reminder repeated_readonly injected: count exactly 2"},
		{"an event count that did not happen fails", "clean.txtar",
			"{event: tool_call, count: 4}", "{event: tool_call, max: 3}", "expect.events[0]: event tool_call: count at most 3"},
		{"a detector that must fire and does not fails", "clean.txtar",
			"no_others: true", "fire: {hallucinated_tool: 1}", "expect.detectors: detector hallucinated_tool fires at least 1"},
		{"a detector that must not fire and does fails", "detector_repeated_readonly_fires.txtar",
			"fire: {repeated_readonly: 1}", "not_fire: [repeated_readonly]", "expect.detectors: detector repeated_readonly does not fire"},
		{"a detector outside fire fails no_others", "detector_hallucinated_tool_fires.txtar",
			"fire: {hallucinated_tool: 1}", "fire: {}", "expect.detectors: no detector fires but those under fire"},
	}
	var suite []*Scenario
	for i, c := range cases {
		src := builtinSource(t, c.file)
		if !strings.Contains(src, c.old) {
			t.Fatalf("%s: %s has no %q", c.name, c.file, c.old)
		}
		s, err := Parse([]byte(strings.Replace(src, c.old, c.new, 1)), "broken/"+c.file)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		s.Name = s.Name + "_" + string(rune('a'+i))
		suite = append(suite, s)
	}
	res := runSuite(t, suite, Options{})
	byName := map[string]results.ScenarioResult{}
	for _, s := range res.Scenarios {
		byName[s.Name] = s
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := byName[suite[i].Name]
			if got.Verdict != results.VerdictFail {
				t.Fatalf("verdict %s, want fail:\n%s", got.Verdict, table(res))
			}
			var msgs []string
			for _, f := range got.Runs[0].Failures {
				// Every failure but a detector's that found nothing
				// points at the trajectory line that shows it.
				if strings.Contains(f.Expect, c.want) && f.Got != "" && (f.At != "" || strings.Contains(f.Expect, "fires at least")) {
					return
				}
				msgs = append(msgs, f.Expect+" / "+f.Got+" / at "+f.At)
			}
			t.Fatalf("no failure names %q; the failures:\n%s", c.want, strings.Join(msgs, "\n"))
		})
	}
}

const flakyScenario = `Deliberately nondeterministic: the check passes on odd repeats only (the
workspace directory is named by the repeat).
-- scenario.yaml --
name: flaky
prompt: Check the count.
config:
  permissions: {mode: bypass}
model:
  turns:
    - content: [{tool_use: {name: bash, input: {command: "test $(( $(basename \"$PWD\") % 2 )) -eq 1"}}}]
    - content: [{text: Done.}]
expect:
  events:
    - {event: tool_failure, count: 0}
-- workspace/README.md --
A project.
`

func TestAScenarioThatPassesSomeRepeatsIsFlakyNeverAPass(t *testing.T) {
	s, err := Parse([]byte(flakyScenario), "flaky.txtar")
	if err != nil {
		t.Fatal(err)
	}
	res := runSuite(t, []*Scenario{s}, Options{Repeat: 5, Parallel: 2})
	got := res.Scenarios[0]
	if got.Verdict != results.VerdictFlaky || got.Passed != 3 || len(got.Runs) != 5 || res.Worst() != results.VerdictFlaky {
		t.Fatalf("verdict %s with %d of %d runs passed, want flaky with 3 of 5:\n%s", got.Verdict, got.Passed, len(got.Runs), table(res))
	}
	if !strings.Contains(table(res), "FLAKY flaky  3/5 runs passed") {
		t.Fatalf("the summary does not say flaky:\n%s", table(res))
	}
	// The scenario's own repeat: does the same without the option.
	own, err := Parse([]byte(strings.Replace(flakyScenario, "name: flaky", "name: flaky\nrepeat: 4", 1)), "flaky.txtar")
	if err != nil {
		t.Fatal(err)
	}
	res = runSuite(t, []*Scenario{own}, Options{})
	if got := res.Scenarios[0]; got.Verdict != results.VerdictFlaky || got.Passed != 2 || len(got.Runs) != 4 {
		t.Fatalf("with repeat: 4, verdict %s with %d of %d runs passed, want flaky with 2 of 4", got.Verdict, got.Passed, len(got.Runs))
	}
}

func TestShardsPartitionTheSuiteExactly(t *testing.T) {
	suite, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= len(suite)+1; n++ {
		seen := map[string]int{}
		for i := 1; i <= n; i++ {
			part, err := Shard(suite, i, n)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Shard(suite, i, n)
			if len(again) != len(part) {
				t.Fatalf("shard %d/%d differs between two calls", i, n)
			}
			for _, s := range part {
				seen[s.Name]++
			}
		}
		for _, s := range suite {
			if seen[s.Name] != 1 {
				t.Errorf("with %d shards, %s is in %d of them", n, s.Name, seen[s.Name])
			}
		}
	}
	for _, bad := range [][2]int{{0, 3}, {4, 3}, {1, 0}} {
		if _, err := Shard(suite, bad[0], bad[1]); err == nil {
			t.Errorf("shard %d/%d was accepted", bad[0], bad[1])
		}
	}
}

// verdicts reduces results to what must not depend on how a suite was
// split: each scenario's verdict and the failures of its runs.
func verdicts(r *results.Results) []string {
	var out []string
	for _, s := range r.Scenarios {
		line := s.File + " " + s.Name + " " + string(s.Verdict)
		for _, run := range s.Runs {
			for _, f := range run.Failures {
				line += " | " + f.Expect
			}
		}
		out = append(out, line)
	}
	return out
}

func TestMergingTheShardsGivesTheUnshardedResults(t *testing.T) {
	suite, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	// One failing scenario, so that failures are compared too.
	broken, err := Parse([]byte(strings.Replace(builtinSource(t, "clean.txtar"), "count: 4}", "count: 5}", 1)), "broken/clean.txtar")
	if err != nil {
		t.Fatal(err)
	}
	broken.Name = "clean_broken"
	suite = append(suite, broken)
	whole := runSuite(t, suite, Options{})
	var parts []*results.Results
	for i := 1; i <= 3; i++ {
		part, err := Shard(suite, i, 3)
		if err != nil {
			t.Fatal(err)
		}
		r := runSuite(t, part, Options{})
		r.Shard = string(rune('0'+i)) + "/3"
		// Through JSON, as CI hands results from machine to machine.
		var b strings.Builder
		if err := r.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		back, err := results.Read([]byte(b.String()), "shard.json")
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, back)
	}
	merged, err := results.Merge(results.MergeOptions{}, parts[2], parts[0], parts[1])
	if err != nil {
		t.Fatal(err)
	}
	got, want := strings.Join(verdicts(merged), "\n"), strings.Join(verdicts(whole), "\n")
	if got != want {
		t.Fatalf("merged shards:\n%s\nunsharded:\n%s", got, want)
	}
	if merged.Worst() != results.VerdictFail || merged.Count(results.VerdictFail) != 1 {
		t.Fatalf("merged verdicts: %s", got)
	}
	if _, err := results.Merge(results.MergeOptions{}, parts[0], parts[0]); err == nil {
		t.Fatal("merging a shard with itself was accepted")
	}
}

func TestFilterKeepsTheScenariosNamedOrTagged(t *testing.T) {
	suite, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	names := func(ss []*Scenario) string {
		var out []string
		for _, s := range sorted(ss) {
			out = append(out, s.Name)
		}
		return strings.Join(out, ",")
	}
	if got := names(Filter(suite, regexpMust(`^defense_loop_detection_`), nil)); got != "defense_loop_detection_fires,defense_loop_detection_off_by_default,defense_loop_detection_quiet" {
		t.Errorf("--run ^defense_loop_detection_ kept %s", got)
	}
	if got := names(Filter(suite, nil, []string{"demo", "clean"})); got != "clean,defense_loop_detection_off_by_default,demo" {
		t.Errorf("--tag demo,clean kept %s", got)
	}
	if got := names(Filter(suite, regexpMust(`demo`), []string{"clean"})); got != "" {
		t.Errorf("--run demo --tag clean kept %s", got)
	}
}
