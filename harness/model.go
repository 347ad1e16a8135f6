package harness

import (
	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/agent/llm/dialect"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/trajectory"
)

// Model says where a session's model answers come from: a mock script, a
// recording, or a real provider. NewProvider makes the llm.Provider of
// Spec.Provider from it, so that retrace run, eval and replay build their
// models the same way.
type Model struct {
	// Script is a mock LLM script (mockllm's YAML format), named
	// ScriptName in messages; ScriptFile reads one from a file instead.
	Script     []byte
	ScriptName string
	ScriptFile string
	// Recording answers every request from a recorded session's
	// responses (mockllm.Replay; a request past it is a miss, never a
	// live call).
	Recording []trajectory.Event
	// Live names a real provider (anthropic, openai for the Responses
	// API, openai-chat) asked for model Name at BaseURL ("" for the one
	// the environment names), its key read through Getenv as
	// llm.OptionsFromEnv reads it. The key stays in the provider.
	Live    string
	Name    string
	BaseURL string
	Getenv  func(string) string
}

// NewProvider builds m's model. A script that does not parse, a live
// provider without a model name or of an unknown kind is an error wrapping
// ErrSpec.
func NewProvider(m Model) (llm.Provider, error) {
	switch {
	case m.Recording != nil:
		return mockllm.NewReplay(m.Recording), nil
	case m.ScriptFile != "":
		s, err := mockllm.LoadScript(m.ScriptFile)
		if err != nil {
			return nil, &specError{err}
		}
		return s, nil
	case m.Script != nil:
		s, err := mockllm.ParseScript(m.Script, m.ScriptName)
		if err != nil {
			return nil, &specError{err}
		}
		return s, nil
	case m.Live != "":
		return liveProvider(m)
	}
	return nil, specErr("no model: give a script, a recording or a provider")
}

// liveProvider builds a real provider.
func liveProvider(m Model) (llm.Provider, error) {
	getenv := m.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	o := llm.OptionsFromEnv(m.Live, getenv)
	o.Model = m.Name
	if m.BaseURL != "" {
		o.BaseURL = m.BaseURL
	}
	if o.Model == "" {
		return nil, specErr("--provider needs --model")
	}
	var p llm.Provider
	var err error
	switch m.Live {
	case "anthropic":
		o.ToolSchema = dialect.Anthropic
		p, err = llm.NewAnthropic(o)
	case "openai":
		o.ToolSchema, o.StrictTools, o.NonStrictSchema = dialect.OpenAIStrict, true, dialect.OpenAI
		p, err = llm.NewOpenAIResponses(o)
	case "openai-chat":
		o.ToolSchema = dialect.OpenAI
		p, err = llm.NewOpenAIChat(o)
	default:
		return nil, specErr("--provider %q is not supported; use anthropic, openai or openai-chat", m.Live)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}
