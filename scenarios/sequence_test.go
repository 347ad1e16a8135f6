package scenarios

import (
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// sequenceScenario's model calls read calc.go, glob, read README.md,
// then bash ls, in that order.
const sequenceScenario = `The sequence expectation.
-- scenario.yaml --
name: sequence
prompt: Look around.
config:
  permissions: {mode: bypass}
model:
  turns:
    - content: [{tool_use: {name: read, input: {file_path: calc.go}}}]
    - content: [{tool_use: {name: glob, input: {pattern: "*.md"}}}]
    - content: [{tool_use: {name: read, input: {file_path: README.md}}}]
    - content: [{tool_use: {name: bash, input: {command: ls -la}}}]
    - content: [{text: Done.}]
expect:
  sequence: SEQUENCE
-- workspace/calc.go --
package calc
-- workspace/README.md --
A project.
`

func sequenceSuite(t *testing.T, cases map[string]string) []*Scenario {
	t.Helper()
	var suite []*Scenario
	for name, seq := range cases {
		src := strings.Replace(strings.Replace(sequenceScenario, "SEQUENCE", seq, 1), "name: sequence", "name: "+name, 1)
		s, err := Parse([]byte(src), name+".txtar")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		suite = append(suite, s)
	}
	return suite
}

func TestASequenceOfToolCallsPassesInOrder(t *testing.T) {
	pass := map[string]string{
		"gaps":          `[{tool: read}, {tool: bash}]`,
		"inputs":        `[{tool: read, input: {file_path: calc.go}}, {tool: read, input_contains: {file_path: READ}}, {tool: bash, input_matches: {command: "^ls"}}]`,
		"strict":        `{strict: true, steps: [{tool: glob}, {tool: read, input: {file_path: README.md}}, {tool: bash}]}`,
		"strict_second": `{strict: true, steps: [{tool: read}, {tool: bash}]}`, // the second read starts it
		"one":           `[{tool: glob}]`,
	}
	res := runSuite(t, sequenceSuite(t, pass), Options{})
	for _, s := range res.Scenarios {
		if s.Verdict != results.VerdictPass {
			t.Errorf("%s: verdict %s, want pass:\n%s", s.Name, s.Verdict, table(res))
		}
	}
}

func TestASequenceNotFollowedSaysWhichStepAfterWhichCall(t *testing.T) {
	fail := map[string]struct{ seq, expect, got string }{
		"order": {`[{tool: bash}, {tool: glob}]`, "expect.sequence[1]: tool calls bash → glob in this order: step 2 (glob)",
			"not found after step 1, call 4 (bash"},
		"input": {`[{tool: read}, {tool: read, input: {file_path: calc.go}}]`, "step 2 (read with file_path=\"calc.go\")",
			"not found after step 1, call 1 (read"},
		"strict": {`{strict: true, steps: [{tool: read, input: {file_path: calc.go}}, {tool: read}]}`, "expect.sequence.steps[1]: tool calls read → read in this order, one right after another: step 2 (read)",
			"not found right after step 1, call 1 (read {\"file_path\":\"calc.go\"} in turn 1): the next call was glob"},
		"first": {`[{tool: write}, {tool: read}]`, "expect.sequence[0]: tool calls write → read in this order: step 1 (write)",
			"no call matches it among the run's 4; the first: read"},
		"last": {`[{tool: bash}, {tool: bash}]`, "step 2 (bash)", "no call came after it"},
	}
	cases := map[string]string{}
	for name, c := range fail {
		cases[name] = c.seq
	}
	res := runSuite(t, sequenceSuite(t, cases), Options{})
	for _, s := range res.Scenarios {
		c := fail[s.Name]
		if s.Verdict != results.VerdictFail || len(s.Runs[0].Failures) != 1 {
			t.Errorf("%s: verdict %s with failures %+v, want fail with one:\n%s", s.Name, s.Verdict, s.Runs[0].Failures, table(res))
			continue
		}
		f := s.Runs[0].Failures[0]
		if !strings.Contains(f.Expect, c.expect) || !strings.Contains(f.Got, c.got) || f.At == "" {
			t.Errorf("%s: failure %q / %q / at %q, want the expectation %q and got %q", s.Name, f.Expect, f.Got, f.At, c.expect, c.got)
		}
	}
}

func TestBadSequencesAreRefused(t *testing.T) {
	for seq, want := range map[string]string{
		`[]`:                        "must be a list of tool calls",
		`[{input: {file_path: x}}]`: "no tool",
		`[{tool: "not a tool"}]`:    "is not a tool name",
		`[{tool: read, input_matches: {a: "("}}]`: "error parsing regexp",
		`{strict: true}`: "no steps",
		`{strict: yes please, steps: [{tool: read}]}`: "true or false",
		`[{tool: read, inputs: {}}]`:                  `unknown key "inputs"`,
	} {
		src := strings.Replace(sequenceScenario, "SEQUENCE", seq, 1)
		_, err := Parse([]byte(src), "bad.txtar")
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "bad.txtar:") {
			t.Errorf("sequence %s: error %v, want one at bad.txtar saying %q", seq, err, want)
		}
	}
}
