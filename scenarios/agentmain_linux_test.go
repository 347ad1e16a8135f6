//go:build linux

package scenarios

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// titledAgent is a scenario whose agent asks for a title first, as
// opencode does, then has a session of two requests: main: MAIN picks
// the session the scenario judges.
const titledAgent = `-- scenario.yaml --
name: titled
prompt: Say done.
agent:
  command: [sh, -c, 'for body in "{\"model\":\"m\",\"max_tokens\":64,\"system\":\"Generate a title\",\"messages\":[{\"role\":\"user\",\"content\":\"$RETRACE_PROMPT\"}]}" "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"$RETRACE_PROMPT\"}]}" "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"$RETRACE_PROMPT\"},{\"role\":\"assistant\",\"content\":\"Done.\"},{\"role\":\"user\",\"content\":\"Again.\"}]}"; do curl -sS -o /dev/null -H "content-type: application/json" -H "anthropic-version: 2023-06-01" -d "$body" "$RETRACE_MOCK_URL/v1/messages"; done']
  wire: anthropic
  main: MAIN
model:
  conversations:
    - name: title
      match: {system_contains: title}
      turns:
        - content: [{text: A title}]
    - name: main
      match: {first_user_contains: Say done}
      turns:
        - content: [{text: Done.}]
        - content: [{text: Done again.}]
expect:
  outcome: {reason: end_turn, turns: {min: 2, max: 2}}
`

// TestAgentMainPicksTheSession checks that agent.main decides which of
// a run's conversations is the session judged: the title conversation
// that starts first fails the scenario's two turns, the session passes,
// and the other conversation is listed as a side session, not warned of.
func TestAgentMainPicksTheSession(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skipf("curl is not installed: %v", err)
	}
	for _, c := range []struct {
		main string
		pass bool
	}{
		{"first", false}, {"longest", true}, {"last", true}, {"route:main", true}, {"route:title", false},
	} {
		t.Run(c.main, func(t *testing.T) {
			s, err := Parse([]byte(strings.Replace(titledAgent, "main: MAIN", "main: "+c.main, 1)), "titled.txtar")
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(t.Context(), []*Scenario{s}, Options{Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			run := res.Scenarios[0].Runs[0]
			if got := res.Scenarios[0].Verdict == results.VerdictPass; got != c.pass {
				t.Fatalf("main: %s: verdict %s (error %q, failures %+v), want a pass: %t", c.main, res.Scenarios[0].Verdict, run.Error, run.Failures, c.pass)
			}
			if run.Error != "" || len(run.SideSessions) != 1 || run.SideSessions[0] == run.Trajectory || len(run.Warnings) > 0 {
				t.Fatalf("error %q, side sessions %q (session %s), warnings %q: want the other conversation as the one side session, and no warning",
					run.Error, run.SideSessions, run.Trajectory, run.Warnings)
			}
		})
	}
}
