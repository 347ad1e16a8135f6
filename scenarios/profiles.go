package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/retrace-dev/retrace/importer"
)

// agentInvocation is what a profile needs to build one run's command.
type agentInvocation struct {
	// mockURL is the mock LLM's base URL, as the agent reaches it.
	mockURL string
	prompt  string
	// model is the script's model, for a client that must name one.
	model string
	// home is the run's own home directory: the client's config and
	// transcript live there, never in the user's.
	home string
}

// profile is how retrace runs one agent CLI unattended and offline.
type profile struct {
	// bin is the program that must be on PATH.
	bin  string
	wire Wire
	// argv is the command line of one run.
	argv func(in agentInvocation) []string
	// env is the environment the client needs on top of PATH and HOME.
	env func(in agentInvocation) map[string]string
	// setup prepares the run's home before the client starts.
	setup func(in agentInvocation) error
	// transcript says where the client writes its own transcript of the
	// run, and in which format; "" when it keeps none.
	transcript func(in agentInvocation) (importer.Format, string)
}

// AgentMaxRetries is how many times a profile lets its client retry a
// failed model call, where the client can be told: enough for a
// scenario's injected faults (a 529 twice), few enough that a mock
// answering 500 to everything fails the run in seconds (Codex retried 30
// times by itself, for 27 s). agent.env or agent.args can set the
// client's own knob to another number.
const AgentMaxRetries = 3

// profiles are the agent CLIs retrace ships profiles for. Their flags
// are the ones the real clients need to run headless, offline, against
// the mock: the versions tested are Claude Code 2.1.328 and Codex CLI
// 0.171.0 (cmd/retrace/mock_clients_test.go drives both).
var profiles = map[string]profile{
	ProfileClaudeCode: {
		bin: "claude", wire: WireAnthropic,
		// -p runs one task headless; stream-json with --verbose prints
		// each message as a JSON line, which is the client's own account
		// of the run (kept as agent.out). Permission prompts cannot be
		// answered headless: a call that needs one is refused by Claude
		// Code itself, which is what a scenario of a denial checks.
		argv: func(in agentInvocation) []string {
			return []string{"claude", "-p", in.prompt, "--output-format", "stream-json", "--verbose"}
		},
		env: func(in agentInvocation) map[string]string {
			return map[string]string{
				"ANTHROPIC_BASE_URL": in.mockURL,
				// Any key will do for the mock; a real one must never be sent.
				"ANTHROPIC_API_KEY":                        "sk-ant-offline-retrace",
				"DISABLE_AUTOUPDATER":                      "1",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
				// Claude Code retries up to 10 times by default.
				"CLAUDE_CODE_MAX_RETRIES": strconv.Itoa(AgentMaxRetries),
			}
		},
		setup: func(agentInvocation) error { return nil },
		// Claude Code writes ~/.claude/projects/<project>/<session>.jsonl,
		// and its subagents' files beside it.
		transcript: func(in agentInvocation) (importer.Format, string) {
			return importer.ClaudeCode, filepath.Join(in.home, ".claude", "projects")
		},
	},
	ProfileCodex: {
		bin: "codex", wire: WireResponses,
		// exec runs one task headless; the mock is a model provider of
		// its own, so that no config of the user's is read and nothing
		// but the mock is asked. --json prints Codex's own events.
		// The provider's request_max_retries and stream_max_retries cap
		// Codex's retries (AgentMaxRetries).
		argv: func(in agentInvocation) []string {
			provider := fmt.Sprintf(`model_providers.retrace_mock={name="retrace mock",base_url="%s/v1",env_key="OPENAI_API_KEY",wire_api="responses",request_max_retries=%d,stream_max_retries=0}`,
				in.mockURL, AgentMaxRetries)
			return []string{"codex", "exec", "--skip-git-repo-check", "-s", "workspace-write", "-m", in.model,
				"-c", "model_provider=retrace_mock", "-c", provider, "--json", in.prompt}
		},
		env: func(in agentInvocation) map[string]string {
			return map[string]string{"CODEX_HOME": filepath.Join(in.home, ".codex"), "OPENAI_API_KEY": "sk-offline-retrace"}
		},
		setup: func(in agentInvocation) error { return os.MkdirAll(filepath.Join(in.home, ".codex"), 0o755) },
		// Codex writes $CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl.
		transcript: func(in agentInvocation) (importer.Format, string) {
			return importer.Codex, filepath.Join(in.home, ".codex", "sessions")
		},
	},
}

// customProfile is the profile of a command of the user's own: its wire's
// base URL in the variables the official SDKs read, the prompt and the
// URL in RETRACE_PROMPT and RETRACE_MOCK_URL (and in its words), and no
// transcript of its own.
func customProfile(a *Agent) profile {
	return profile{
		bin: a.Command[0], wire: a.Wire,
		argv: func(in agentInvocation) []string {
			out := make([]string, len(a.Command))
			for i, w := range a.Command {
				out[i] = os.Expand(w, func(v string) string {
					switch v {
					case "RETRACE_PROMPT":
						return in.prompt
					case "RETRACE_MOCK_URL":
						return in.mockURL
					}
					return "$" + v
				})
			}
			return out
		},
		env: func(in agentInvocation) map[string]string {
			return map[string]string{"RETRACE_PROMPT": in.prompt, "RETRACE_MOCK_URL": in.mockURL,
				"ANTHROPIC_BASE_URL": in.mockURL, "OPENAI_BASE_URL": in.mockURL + "/v1",
				"ANTHROPIC_API_KEY": "sk-ant-offline-retrace", "OPENAI_API_KEY": "sk-offline-retrace"}
		},
		setup:      func(agentInvocation) error { return nil },
		transcript: func(agentInvocation) (importer.Format, string) { return "", "" },
	}
}

// profileOf returns the profile that runs a.
func profileOf(a *Agent) profile {
	if a.Profile != "" {
		return profiles[a.Profile]
	}
	return customProfile(a)
}

// agentName names a's CLI in messages: the profile, or the command's
// program (its arguments may hold the prompt).
func agentName(a *Agent) string {
	if a.Profile != "" {
		return a.Profile
	}
	return a.Command[0]
}
