package scenarios

import (
	"slices"
	"strconv"
	"strings"

	"github.com/retrace-dev/retrace/mockllm"

	"go.yaml.in/yaml/v3"
)

// Wire names the API dialect an agent speaks to its model, so that the
// runner gives it the base URL it reads.
type Wire string

// The wires an agent may speak.
const (
	// WireAnthropic is the Anthropic Messages API (ANTHROPIC_BASE_URL).
	WireAnthropic Wire = "anthropic"
	// WireResponses is the OpenAI Responses API (OPENAI_BASE_URL, with /v1).
	WireResponses Wire = "openai-responses"
	// WireChat is the OpenAI Chat Completions API (OPENAI_BASE_URL, with /v1).
	WireChat Wire = "openai-chat"
)

// wires are the valid Wire values, in the order messages list them.
var wires = []Wire{WireAnthropic, WireResponses, WireChat}

// The profiles of the agent CLIs retrace knows how to run unattended and
// offline (see profiles.go).
const (
	// ProfileClaudeCode runs Claude Code (`claude -p`).
	ProfileClaudeCode = "claude-code"
	// ProfileCodex runs the Codex CLI (`codex exec`).
	ProfileCodex = "codex"
	// ProfileOpenCode runs opencode (`opencode run`).
	ProfileOpenCode = "opencode"
)

// profileNames are the profiles, in the order messages list them.
var profileNames = []string{ProfileClaudeCode, ProfileCodex, ProfileOpenCode}

// The rules of agent.main, which say which of an agent run's
// conversations is the session the scenario judges; the others are side
// conversations (an opencode title request), kept and listed in the run's
// result (RunResult.SideSessions) but not judged. A subagent's
// conversation is never the main one: it is linked to its parent.
const (
	// MainFirst is the conversation that started first: the default of
	// every profile but opencode's.
	MainFirst = "first"
	// MainLongest is the conversation with the most model requests (of
	// equal ones, the larger recording; of equal ones, the later).
	MainLongest = "longest"
	// MainLast is the conversation that started last.
	MainLast = "last"
	// MainRoute, followed by a name, is the conversation of that name of
	// the script's conversations: (route:main).
	MainRoute = "route:"
)

// Agent is a third-party agent CLI a scenario runs instead of retrace's
// own runtime (`agent:` in scenario.yaml): a profile of a known client,
// or a command of the user's own.
type Agent struct {
	// Profile is ProfileClaudeCode or ProfileCodex; "" for Command.
	Profile string
	// Command is the user's own agent command (argv), when Profile is "".
	// $RETRACE_PROMPT and $RETRACE_MOCK_URL in its words are replaced by
	// the scenario's prompt and the mock's base URL.
	Command []string
	// Args are added to a profile's command line (e.g. Claude Code's
	// --allowedTools).
	Args []string
	// Wire is the dialect Command speaks (a profile knows its own).
	Wire Wire
	// Env is added to the agent's environment.
	Env map[string]string
	// RequireIsolation refuses to run the agent when it cannot have a
	// network namespace of its own (isolation: required).
	RequireIsolation bool
	// Main says which conversation is the session (MainFirst,
	// MainLongest, MainLast, or MainRoute and a conversation's name); ""
	// for the profile's default.
	Main string
	// mainLine is the line of main:, for a problem with it.
	mainLine int
}

// agentKeys are the keys of the mapping form of agent:.
var agentKeys = []string{"profile", "command", "args", "wire", "env", "isolation", "main"}

// Isolation values of agent.isolation.
const (
	isolationRequired  = "required"
	isolationPreferred = "preferred"
)

// agent parses scenario.yaml's agent: a profile name, or a mapping.
func (p *parser) agent(n *yaml.Node) *Agent {
	profiles := profileNames
	if n.Kind == yaml.ScalarNode {
		name := p.str(n, "agent")
		if !slices.Contains(profiles, name) {
			p.at(n, "agent %q: want %s, or a mapping {command: [...], wire: %s, env: {...}} for an agent of your own", name, joinProfiles(), joinWires())
			return nil
		}
		return &Agent{Profile: name}
	}
	a := &Agent{}
	var wireNode, commandNode *yaml.Node
	for _, f := range p.fields(n, "agent", agentKeys...) {
		switch f.name {
		case "profile":
			a.Profile = p.str(f.val, "agent.profile")
			if !slices.Contains(profiles, a.Profile) {
				p.at(f.val, "agent.profile %q: want %s", a.Profile, joinProfiles())
			}
		case "command":
			commandNode = f.val
			a.Command = p.strs(f.val, "agent.command")
			if f.val.Kind == yaml.SequenceNode && (len(a.Command) == 0 || a.Command[0] == "") {
				p.at(f.val, "agent.command is empty: give the program and its arguments, e.g. [my-agent, --prompt, $RETRACE_PROMPT]")
			}
		case "args":
			a.Args = p.strs(f.val, "agent.args")
		case "wire":
			wireNode = f.val
			a.Wire = Wire(p.str(f.val, "agent.wire"))
			if !slices.Contains(wires, a.Wire) {
				p.at(f.val, "agent.wire %q: want %s", a.Wire, joinWires())
			}
		case "env":
			if f.val.Kind != yaml.MappingNode {
				p.at(f.val, "agent.env must be a mapping of variable names to strings")
				break
			}
			a.Env = map[string]string{}
			for i := 0; i+1 < len(f.val.Content); i += 2 {
				k, v := f.val.Content[i], f.val.Content[i+1]
				if k.Value == "" || strings.ContainsAny(k.Value, "=\x00") {
					p.at(k, "agent.env: %q is not a variable name", k.Value)
				}
				a.Env[k.Value] = p.str(v, "agent.env."+k.Value)
			}
		case "main":
			a.Main, a.mainLine = p.str(f.val, "agent.main"), f.val.Line
			if name, ok := strings.CutPrefix(a.Main, MainRoute); ok && name == "" || !ok && !slices.Contains([]string{MainFirst, MainLongest, MainLast}, a.Main) {
				p.at(f.val, "agent.main %q: want %s, %s, %s or %sNAME (the script's conversation NAME): which conversation is the session", a.Main, MainFirst, MainLongest, MainLast, MainRoute)
			}
		case "isolation":
			switch v := p.str(f.val, "agent.isolation"); v {
			case isolationRequired:
				a.RequireIsolation = true
			case isolationPreferred:
			default:
				p.at(f.val, "agent.isolation %q: want %s (refuse to run without a network namespace of its own) or %s (run with a warning; the default)", v, isolationRequired, isolationPreferred)
			}
		}
	}
	switch {
	case a.Profile == "" && commandNode == nil:
		p.at(n, "agent: give a profile (%s) or a command: [...] with its wire: (%s)", joinProfiles(), joinWires())
	case a.Profile != "" && len(a.Command) > 0:
		p.at(n, "agent: give a profile or a command, not both (add arguments to a profile with args: [...])")
	case a.Profile != "" && wireNode != nil:
		p.at(wireNode, "agent.wire: the %s profile speaks its own wire; leave wire out", a.Profile)
	case len(a.Command) > 0 && a.Wire == "" && wireNode == nil:
		p.at(n, "agent: a command needs its wire: %s", joinWires())
	case len(a.Command) > 0 && len(a.Args) > 0:
		p.at(n, "agent.args is for a profile; put the arguments into command: [...]")
	}
	return a
}

// joinProfiles lists the profiles for messages: "a, b or c".
func joinProfiles() string {
	n := len(profileNames)
	return strings.Join(profileNames[:n-1], ", ") + " or " + profileNames[n-1]
}

// joinWires lists the wires for messages.
func joinWires() string {
	var s []string
	for _, w := range wires {
		s = append(s, string(w))
	}
	return strings.Join(s, ", ")
}

// agentSpec refuses what a scenario of an agent CLI cannot have: the
// runtime's config, person and plant belong to retrace's own agent, and a
// live model would leave the agent nothing to be driven by.
func (p *parser) agentSpec(s *Scenario, has map[string]int) {
	for _, k := range []string{"config", "person", "plant", "follow_ups"} {
		if line, ok := has[k]; ok {
			p.addf(line, "%s: applies to retrace's own runtime, not to an agent CLI; give the agent's own flags in agent.args or agent.env", k)
		}
	}
	if s.Live {
		p.addf(has["model"], "model: live cannot drive an agent CLI: the agent talks to the mock LLM, which needs a script of turns")
	}
	// main: route:NAME must name a conversation of the script.
	if name, ok := strings.CutPrefix(s.Agent.Main, MainRoute); ok && name != "" && len(s.Script) > 0 {
		if script, err := mockllm.ParseScript(s.Script, s.File); err == nil && !slices.Contains(script.Conversations(), name) {
			p.addf(s.Agent.mainLine, "agent.main %q: the script has no conversation %q (it has %s)", s.Agent.Main, name, quoteAll(script.Conversations()))
		}
	}
}

// quoteAll lists names quoted, for messages; "none" for none.
func quoteAll(names []string) string {
	var q []string
	for _, n := range names {
		if n != "" {
			q = append(q, strconv.Quote(n))
		}
	}
	if len(q) == 0 {
		return "none"
	}
	return strings.Join(q, ", ")
}
