package scenarios

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// agentMinimal is a valid scenario of an agent CLI that each case below
// changes.
const agentMinimal = `-- scenario.yaml --
name: agent_minimal
prompt: Say done.
agent: claude-code
model:
  turns:
    - content: [{text: Done.}]
`

func TestParseReadsTheAgentForms(t *testing.T) {
	cases := []struct {
		name  string
		agent string
		want  Agent
	}{
		{"a profile name alone is that profile", "agent: codex", Agent{Profile: ProfileCodex}},
		{"opencode with the rule that picks its session", "agent: {profile: opencode, main: longest}", Agent{Profile: ProfileOpenCode, Main: MainLongest}},
		{"a profile with arguments, environment and required isolation",
			"agent: {profile: claude-code, args: [--allowedTools, Read], env: {FOO: bar}, isolation: required}",
			Agent{Profile: ProfileClaudeCode, Args: []string{"--allowedTools", "Read"}, Env: map[string]string{"FOO": "bar"}, RequireIsolation: true}},
		{"a command of the user's own with its wire",
			"agent:\n  command: [my-agent, --prompt, $RETRACE_PROMPT]\n  wire: openai-chat",
			Agent{Command: []string{"my-agent", "--prompt", "$RETRACE_PROMPT"}, Wire: WireChat}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(strings.Replace(agentMinimal, "agent: claude-code", c.agent, 1)), "s.txtar")
			if err != nil {
				t.Fatal(err)
			}
			got := *s.Agent
			if got.Profile != c.want.Profile || !slices.Equal(got.Command, c.want.Command) || !slices.Equal(got.Args, c.want.Args) ||
				got.Wire != c.want.Wire || got.Main != c.want.Main || got.RequireIsolation != c.want.RequireIsolation || len(got.Env) != len(c.want.Env) || got.Env["FOO"] != c.want.Env["FOO"] {
				t.Fatalf("parsed %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestParseRefusesABadAgentAtItsLine(t *testing.T) {
	cases := []struct {
		name  string
		agent string
		want  []string
	}{
		{"an unknown profile names the profiles", "agent: aider", []string{`s.txtar:4: agent "aider": want claude-code, codex or opencode`}},
		{"an unknown key of the mapping is refused", "agent: {profile: codex, wires: anthropic}", []string{`s.txtar:4: agent: unknown key "wires"`}},
		{"a command without its wire is refused", "agent: {command: [x]}", []string{"s.txtar:4: agent: a command needs its wire"}},
		{"an unknown wire names the wires", "agent: {command: [x], wire: grpc}", []string{`s.txtar:4: agent.wire "grpc": want anthropic, openai-responses, openai-chat`}},
		{"a profile and a command together are refused", "agent: {profile: codex, command: [x]}", []string{"s.txtar:4: agent: give a profile or a command, not both"}},
		{"a profile's wire is refused", "agent: {profile: codex, wire: anthropic}", []string{"s.txtar:4: agent.wire: the codex profile speaks its own wire"}},
		{"an empty command is refused", "agent: {command: [], wire: anthropic}", []string{"s.txtar:4: agent.command is empty"}},
		{"a bad main names the rules", "agent: {profile: opencode, main: biggest}", []string{`s.txtar:4: agent.main "biggest": want first, longest, last or route:NAME`}},
		{"main: route: needs a name", "agent: {profile: opencode, main: \"route:\"}", []string{`s.txtar:4: agent.main "route:": want first`}},
		{"main: route: names a conversation of the script", "agent: {profile: opencode, main: \"route:main\"}", []string{`s.txtar:4: agent.main "route:main": the script has no conversation "main" (it has none)`}},
		{"a bad isolation names the values", "agent: {profile: codex, isolation: maybe}", []string{`s.txtar:4: agent.isolation "maybe": want required`}},
		{"the runtime's config and person do not apply to an agent",
			"agent: codex\nperson: approve\nconfig: {permissions: {mode: accept_edits}}",
			[]string{"s.txtar:5: person: applies to retrace's own runtime", "s.txtar:6: config: applies to retrace's own runtime"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(strings.Replace(agentMinimal, "agent: claude-code", c.agent, 1)), "s.txtar")
			var pe *ProblemsError
			if !errors.As(err, &pe) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want a *ProblemsError wrapping ErrInvalid", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the problems\n%s\ndo not include %q", err, w)
				}
			}
			if len(pe.Problems) != len(c.want) {
				t.Errorf("%d problems, want %d:\n%s", len(pe.Problems), len(c.want), err)
			}
		})
	}
}

func TestMissingAgentSaysWhatToInstall(t *testing.T) {
	s, err := Parse([]byte(strings.Replace(agentMinimal, "agent: claude-code", "agent: {command: [retrace-no-such-agent-cli], wire: anthropic}", 1)), "s.txtar")
	if err != nil {
		t.Fatal(err)
	}
	err = MissingAgent(s)
	if !errors.Is(err, ErrAgentMissing) || !strings.Contains(err.Error(), "retrace-no-such-agent-cli is not on PATH") {
		t.Fatalf("MissingAgent: %v; want ErrAgentMissing naming the program", err)
	}
	if err := MissingAgent(&Scenario{Name: "own"}); err != nil {
		t.Fatalf("a scenario of retrace's own runtime needs no agent CLI, got %v", err)
	}
}

// TestRunOfAMissingAgentIsAnErrorNotAPass checks that Run, which
// retrace eval --require-agents calls with such a scenario, gives it the
// error verdict with the reason.
func TestRunOfAMissingAgentIsAnErrorNotAPass(t *testing.T) {
	s, err := Parse([]byte(strings.Replace(agentMinimal, "agent: claude-code", "agent: {command: [retrace-no-such-agent-cli], wire: anthropic}", 1)), "s.txtar")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), []*Scenario{s}, Options{Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	sr := res.Scenarios[0]
	if sr.Verdict != results.VerdictError || !strings.Contains(sr.Runs[0].Error, "not on PATH") {
		t.Fatalf("verdict %s, error %q; want error naming the missing program", sr.Verdict, sr.Runs[0].Error)
	}
}
