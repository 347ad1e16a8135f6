//go:build linux

package scenarios

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// twoCallAgent is a scenario whose agent makes two model calls with
// curl, the second one carrying on the first: a script with one turn
// runs out at the second.
const twoCallAgent = `-- scenario.yaml --
name: two_calls
prompt: Say done.
agent:
  command: [sh, -c, 'for body in "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"$RETRACE_PROMPT\"}]}" "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"$RETRACE_PROMPT\"},{\"role\":\"assistant\",\"content\":\"Done.\"},{\"role\":\"user\",\"content\":\"  And \\\"now\\\"?\\nsecond line\"}]}"; do curl -sS -o /dev/null -H "content-type: application/json" -H "anthropic-version: 2023-06-01" -d "$body" "$RETRACE_MOCK_URL/v1/messages"; done']
  wire: anthropic
model:
  turns:
    - expect: {last_user_contains: Say done}
      content: [{text: Done.}]
`

// TestARefusedRequestIsTheRunsFirstFailure checks that when the script
// runs out of turns, or a request misses a turn's expectation, the run's
// first failure says so, with the request's number and the first line
// of what it sent, quoted; a clean run has no such failure.
func TestARefusedRequestIsTheRunsFirstFailure(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skipf("curl is not installed: %v", err)
	}
	cases := []struct {
		name, archive, want string
	}{
		{"out of turns", twoCallAgent,
			`the script has 1 turn; the agent sent request 2: "And \"now\"?"`},
		{"a missed expectation", strings.Replace(twoCallAgent, "last_user_contains: Say done", "last_user_contains: Say nothing", 1),
			`the agent's request 1 does not meet the script's turn 1: expected the last user message to contain "Say nothing", it reads "Say done.\n"; the request ends: "Say done."`},
		{"a conversation out of turns", strings.Replace(twoCallAgent, "model:\n  turns:\n    - expect: {last_user_contains: Say done}\n      content: [{text: Done.}]\n",
			"model:\n  conversations:\n    - name: main\n      match: {first_user_contains: Say done}\n      turns:\n        - content: [{text: Done.}]\n", 1),
			`the script has 1 turn in conversation main; the agent sent request 2: "And \"now\"?"`},
		{"a clean run", curlAgent, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(c.archive), "agent.txtar")
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(t.Context(), []*Scenario{s}, Options{Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			run := res.Scenarios[0].Runs[0]
			if c.want == "" {
				if res.Scenarios[0].Verdict != results.VerdictPass {
					t.Fatalf("verdict %s, error %q, failures %+v; want a pass", res.Scenarios[0].Verdict, run.Error, run.Failures)
				}
				return
			}
			if run.Error != "" || len(run.Failures) == 0 {
				t.Fatalf("error %q, failures %+v; want the refusal as the first failure", run.Error, run.Failures)
			}
			f := run.Failures[0]
			if f.Got != c.want || f.Expect != "agent.txtar:8: model: the script answers every model request of the agent" {
				t.Fatalf("first failure\n  expect %q\n  got    %q\nwant got %q", f.Expect, f.Got, c.want)
			}
		})
	}
}
