package scenarios

import (
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// replyScenario's model reads a file, then answers in two turns: turn 2
// says it read the file, turn 3 (the final reply) gives JSON in a fence.
const replyScenario = `The reply expectations: the final reply and a turn's.
-- scenario.yaml --
name: reply
prompt: Read calc.go and report.
follow_ups: [Now the status as JSON.]
model:
  turns:
    - content: [{tool_use: {name: read, input: {file_path: calc.go}}}]
    - content: [{text: "I read calc.go: Add is wrong."}]
    - content: [{text: "` + "```json\\n{\\\"status\\\": \\\"fixed\\\", \\\"files\\\": 1}\\n```" + `"}]
expect:
  reply: REPLY
-- workspace/calc.go --
package calc
`

func replySuite(t *testing.T, cases map[string]string) []*Scenario {
	t.Helper()
	var suite []*Scenario
	for name, reply := range cases {
		src := strings.Replace(strings.Replace(replyScenario, "REPLY", reply, 1), "name: reply", "name: "+name, 1)
		s, err := Parse([]byte(src), name+".txtar")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		suite = append(suite, s)
	}
	return suite
}

func TestReplyExpectationsPassOnWhatTheModelSaid(t *testing.T) {
	pass := map[string]string{
		"contains":       `{contains: '"status"'}`,
		"matches":        `{matches: '"files": \d+'}`,
		"equals_trimmed": "{turn: 2, equals: \"  I read calc.go: Add is wrong.\\n\"}",
		"turn_contains":  `{turn: 2, contains: [read calc.go, wrong]}`,
		"schema":         `{json_schema: {type: object, required: [status], properties: {status: {enum: [fixed]}}}}`,
		"schema_string":  `{json_schema: '{"type": "object", "required": ["files"]}'}`,
		"list":           `[{contains: fixed}, {turn: 2, matches: "^I read"}]`,
	}
	res := runSuite(t, replySuite(t, pass), Options{})
	for _, s := range res.Scenarios {
		if s.Verdict != results.VerdictPass {
			t.Errorf("%s: verdict %s, want pass:\n%s", s.Name, s.Verdict, table(res))
		}
	}
}

func TestReplyExpectationsFailWithExpectedAndGot(t *testing.T) {
	fail := map[string]struct{ reply, expect, got string }{
		"contains": {`{contains: done}`, `expect.reply: the final reply contains "done"`, `"` + "```json\\n{\"status\": \"fixed\", \"files\": 1}\\n```" + `"`},
		"matches":  {`{matches: "^OK"}`, "expect.reply: the final reply matches /^OK/", `"status"`},
		"equals":   {`{turn: 2, equals: "I read it."}`, `the reply of turn 2 equals "I read it."`, `"I read calc.go: Add is wrong."`},
		"schema": {`{json_schema: {type: object, required: [owner]}}`, "the final reply is JSON valid against expect.reply.json_schema",
			"missing property 'owner'"},
		"not_json":  {`{turn: 2, json_schema: {type: object}}`, "the reply of turn 2 is JSON", "it is not JSON"},
		"no_turn":   {`{turn: 9, contains: x}`, "the reply of turn 9", "no model response in turn 9"},
		"list_item": {`[{contains: fixed}, {contains: broken}]`, `expect.reply[1]: the final reply contains "broken"`, "fixed"},
	}
	cases := map[string]string{}
	for name, c := range fail {
		cases[name] = c.reply
	}
	res := runSuite(t, replySuite(t, cases), Options{})
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

func TestAReplyTextIsEscapedForTheTerminal(t *testing.T) {
	got := shown("  line one\n\x1b[31mred\u202e  ")
	if strings.ContainsAny(got, "\n\x1b\u202e") || !strings.HasPrefix(got, `"line one\n`) {
		t.Fatalf("shown = %q: want one trimmed line with the controls escaped", got)
	}
}

func TestBadReplyExpectationsAreRefused(t *testing.T) {
	for reply, want := range map[string]string{
		`{}`:                                    "nothing to check",
		`{turn: 0, contains: x}`:                "a model turn from 1",
		`{matches: "("}`:                        "error parsing regexp",
		`{json_schema: {type: 7}}`:              "does not compile",
		`{json_schema: "{"}`:                    "is not JSON",
		`{contain: x}`:                          `unknown key "contain"`,
		`{json_schema: [1]}`:                    "must be a JSON Schema",
		`{equals: [a]}`:                         "must be a string",
		`{contains: x, turn: two}`:              "whole number",
		`[{contains: x}, {json_schema: {}}, 3]`: "expect.reply[2] must be a mapping",
	} {
		src := strings.Replace(replyScenario, "REPLY", reply, 1)
		_, err := Parse([]byte(src), "bad.txtar")
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "bad.txtar:") {
			t.Errorf("reply %s: error %v, want one at bad.txtar saying %q", reply, err, want)
		}
	}
}
