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
	// main is the rule that picks the session among the run's
	// conversations when the scenario gives none (MainFirst when "").
	main string
	// tested is the client's version the profile is tested with (its
	// flags, environment and wire), and install how to get it; "" for a
	// command of the user's own.
	tested, install string
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
// the mock: the versions tested are Claude Code 2.1.328, Codex CLI
// 0.171.0 and opencode 1.18.33 (cmd/retrace/mock_clients_test.go and
// eval_agent_test.go drive them; .ci/run installs these versions).
var profiles = map[string]profile{
	ProfileClaudeCode: {
		bin: "claude", wire: WireAnthropic,
		tested: "2.1.328", install: "npm install -g @anthropic-ai/claude-code@2.1.328",
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
		tested: "0.171.0", install: "npm install -g @openai/codex@0.171.0",
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
	ProfileOpenCode: {
		bin: "opencode", wire: WireAnthropic,
		tested: "1.18.33", install: "npm install -g opencode-ai@1.18.33",
		// opencode asks the model for the session's title beside the
		// session itself, and that request comes first: the session is
		// the conversation with the most requests.
		main: MainLongest,
		// run runs one task headless; --format json prints opencode's
		// own events. The model is the script's, through opencode's
		// Anthropic provider.
		argv: func(in agentInvocation) []string {
			return []string{"opencode", "run", "--format", "json", "-m", "anthropic/" + in.model, in.prompt}
		},
		// The configuration is given whole in OPENCODE_CONFIG_CONTENT:
		// the mock as the Anthropic provider's base URL, no sharing, no
		// update. Its data and configuration directories are the run's
		// home's. opencode retries a failed call 5 times by itself, a
		// number no setting changes (AgentMaxRetries does not reach it).
		env: func(in agentInvocation) map[string]string {
			config := fmt.Sprintf(`{"$schema":"https://opencode.ai/config.json","model":"anthropic/%[1]s","small_model":"anthropic/%[1]s",`+
				`"provider":{"anthropic":{"options":{"baseURL":"%[2]s/v1","apiKey":"sk-ant-offline-retrace"}}},"share":"disabled","autoupdate":false}`,
				in.model, in.mockURL)
			return map[string]string{
				"OPENCODE_CONFIG_CONTENT":       config,
				"OPENCODE_DISABLE_AUTOUPDATE":   "1",
				"OPENCODE_DISABLE_MODELS_FETCH": "1",
				"OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
				"XDG_CONFIG_HOME":               filepath.Join(in.home, ".config"),
				"XDG_DATA_HOME":                 filepath.Join(in.home, ".local", "share"),
				"XDG_CACHE_HOME":                filepath.Join(in.home, ".cache"),
				"XDG_STATE_HOME":                filepath.Join(in.home, ".local", "state"),
			}
		},
		setup: func(agentInvocation) error { return nil },
		// opencode keeps its sessions in a SQLite database: the session is
		// what the wire shows.
		transcript: func(agentInvocation) (importer.Format, string) { return "", "" },
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

// mainRule returns the rule that picks a's session among its run's
// conversations: the scenario's agent.main, else the profile's.
func mainRule(a *Agent) string {
	if a.Main != "" {
		return a.Main
	}
	if r := profileOf(a).main; r != "" {
		return r
	}
	return MainFirst
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
