package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// HarnessVersion is recorded in session_start when Config.HarnessVersion is empty.
const HarnessVersion = "retrace-dev"

// DefaultContextTokens is the context size above which the loop compacts
// the history of a model whose window is DefaultContextWindow, when
// neither Limits.ContextTokens nor Limits.CompactThreshold is set: the
// default threshold of the default window.
const DefaultContextTokens = int64(DefaultContextWindow * DefaultCompactThreshold)

// Limits bound a session. Zero means unbounded, except ContextTokens.
type Limits struct {
	// MaxTurns is the most model requests of the session.
	MaxTurns int `yaml:"max_turns"`
	// TokenBudget is the most tokens (input, output and cache) the
	// session's responses may add up to before it stops.
	TokenBudget int64 `yaml:"token_budget"`
	// CostBudget is the most US dollars the session's responses may cost
	// at Prices before it stops; it needs Prices.
	CostBudget float64 `yaml:"cost_budget_usd"`
	// Prices are the model's prices, for the cost budget and the cost
	// recorded in session_end.
	Prices Prices `yaml:"prices"`
	// MaxTokens is the max_tokens of each request; 0 leaves the provider's default.
	MaxTokens int `yaml:"max_tokens"`
	// ContextTokens is the context size above which the loop compacts; 0
	// means CompactThreshold of the model's context window. The size is
	// the usage the API reported for the last reply (input, cache and
	// output tokens) plus the bytes/4 estimate of the messages added
	// since, or the bytes/4 estimate of the whole history when no reply
	// reported usage.
	ContextTokens int64 `yaml:"context_tokens"`
	// ContextWindow is the model's context window in tokens; 0 looks the
	// model up in Config.Models, then in the built-in table (LookupModel), and
	// assumes DefaultContextWindow for a model neither knows.
	ContextWindow int64 `yaml:"context_window" json:",omitempty"`
	// CompactThreshold is the fraction of the context window (0 to 1) at
	// which the loop compacts; 0 means DefaultCompactThreshold.
	CompactThreshold float64 `yaml:"compact_threshold" json:",omitempty"`
	// Compaction is how the loop compacts: drop (the default) replaces the
	// oldest tool outputs with a placeholder; summarize drops them first
	// and, when the context is still over the threshold, asks the model for
	// a summary of the older turns in a request of its own and replaces
	// them with it (falling back to the dropped outputs if no summary
	// comes).
	Compaction trajectory.CompactionStrategy `yaml:"compaction" json:",omitempty"`
}

// Prices are a model's prices in US dollars per million tokens. retrace
// ships no price list: prices change, and the user knows their contract.
type Prices struct {
	Input      float64 `yaml:"input_per_mtok"`
	Output     float64 `yaml:"output_per_mtok"`
	CacheRead  float64 `yaml:"cache_read_per_mtok"`
	CacheWrite float64 `yaml:"cache_write_per_mtok"`
}

func (p Prices) set() bool { return p.Input > 0 || p.Output > 0 }

// cost is what usage costs at these prices.
func (p Prices) cost(u trajectory.Usage) float64 {
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheCreationTokens)*p.CacheWrite) / 1e6
}

// Config is everything one session needs.
type Config struct {
	// Provider is the model. Required.
	Provider llm.Provider
	// Model names the model; empty asks the provider for its default.
	Model string
	// Executor wires the tools: Env (with the registry), Permission,
	// Hooks, Blobs and Prompter. Its Sink and SchemaSent are set by the
	// loop, which counts what the executor emits.
	Executor executor.Config
	// Sink receives the session's events (the recorder). Required.
	Sink trajectory.Sink
	// System is the static system prompt; the loop appends the rules
	// section (tool output is data; the permission checker's deny rules and
	// disallowed tools, see RulesSection) and the list of deferred tools.
	System string
	// Prompt is the user's task, the first message of the session.
	Prompt string
	// History is a conversation carried on from an earlier session
	// (retrace run --continue), rebuilt with ConversationOf; Prompt is then
	// a follow-up to it, recorded in a user_prompt event. Continues is
	// that session's id, recorded in session_start.
	History   []trajectory.Message
	Continues string
	// NextPrompt, when set, is asked for the person's next prompt each time
	// the model finishes its turn (end_turn or a stop sequence); the
	// session goes on with it, recorded in a user_prompt event, and ends
	// when ok is false. MaxTurns then bounds the turns of each prompt.
	NextPrompt func(ctx context.Context) (prompt string, ok bool)
	// Limits bound the session.
	Limits Limits
	// Models adds to or overrides the built-in model table (LookupModel),
	// by exact model id or family prefix (claude-sonnet-4-5 covers its
	// dated snapshots); the loop compacts against the model's window.
	Models map[string]ModelInfo
	// Cache asks the provider to cache each request's prefix;
	// nil sends no cache instructions. The harness sets it from the
	// configuration's cache section, on by default.
	Cache *llm.Cache
	// Plant, when set, changes each request of turn turn before it is
	// recorded and sent. It exists for the eval suite, which plants a
	// fault the runtime itself must never make (a cache breaker)
	// to prove that the mock's usage, the metrics and the detectors
	// see it; because it acts before the request is recorded, the
	// trajectory shows what was really sent. A real session leaves it nil.
	Plant func(turn int, req *llm.Request)
	// Stream asks the provider for a streamed reply; OnStream sees it arrive.
	// A streamed reply's calls start as soon as their tool_use blocks are
	// complete, while the model is still writing, unless
	// BatchTools is set.
	Stream   bool
	OnStream func(llm.StreamEvent)
	// BatchTools, with Stream, runs the calls only once the whole reply
	// has arrived. The two modes run the same calls under the same
	// rules; only the timing differs.
	BatchTools bool
	// Retries, when the provider's llm.Options.OnRetry is Retries.OnRetry,
	// records every failed attempt; nil records only a call's final failure.
	Retries *Retries
	// Defenses lists the in-loop defenses to enable; nil means
	// DefaultDefenses(). The denial fuse lives in the executor and is
	// always on.
	Defenses []trajectory.DefenseName
	// PolicyHash is a hash of the parts of the session's policy the loop
	// cannot see — the permission rules, hooks and MCP servers — computed
	// by whoever built them (the harness package); it is folded into
	// session_start's config_hash, so two sessions under different
	// policies never look alike. Empty means none was given.
	PolicyHash string
	// Mode and PermissionMode are recorded in session_start; empty means
	// headless and default.
	Mode           trajectory.RunMode
	PermissionMode trajectory.PermissionMode
	// HarnessVersion is recorded in session_start; empty means HarnessVersion.
	HarnessVersion string
	// HarnessRevision is recorded in session_start; empty leaves it out.
	HarnessRevision string
	// Tags are recorded in session_start.
	Tags map[string]string
	// MCPEvents, when set, returns the MCP server state changes since its
	// last call (mcp.Lifecycle.Drain). Before each request the loop
	// records them as mcp_server events and announces the tools they add
	// to the model.
	MCPEvents func() []*trajectory.MCPServer
	// WorkspaceSnapshot is the reference of the workspace snapshot taken
	// before the session (recorder.SnapshotWorkspace), recorded in
	// session_start so a replay can restore the files the session started
	// from; empty means none was taken. SnapshotWorkspace is the better
	// choice where the snapshot is taken for this session.
	WorkspaceSnapshot string
	// SnapshotWorkspace, when set, takes the workspace snapshot after
	// session_start is recorded and before the first request; the
	// workspace_snapshot event it returns is recorded, nil means none was
	// taken. Taking it after session_start, which the recorder writes at
	// once, means a crash during a long snapshot leaves a valid file.
	SnapshotWorkspace func() *trajectory.WorkspaceSnapshot
	// ReplayOf is the session id this session replays, recorded in
	// session_start.
	ReplayOf string
	// EffectiveConfig and ConfigSources are recorded in session_start:
	// the configuration the session runs under, as a JSON object, and
	// the layer each setting came from (see trajectory.SessionStart).
	// Whoever built the session gives them (the harness package).
	EffectiveConfig json.RawMessage
	ConfigSources   map[string]string
	// Clock times the session; nil means time.Now.
	Clock func() time.Time
}

// DefaultDefenses returns the defenses enabled when Config.Defenses is nil:
// all of them except loop detection by shape, whose false-positive rate on
// legitimate exploration makes it opt-in.
func DefaultDefenses() []trajectory.DefenseName {
	return []trajectory.DefenseName{
		trajectory.DefenseEmptyInputRetry,
		trajectory.DefenseEndTurnFallthrough,
		trajectory.DefenseTruncatedToolUse,
		trajectory.DefenseRepeatedReadOnly,
		trajectory.DefenseLowYieldSpin,
		trajectory.DefenseDenialFuse,
		trajectory.DefenseReminderCap,
	}
}

// ErrConfig is wrapped by Run's errors for a Config that cannot start a session.
var ErrConfig = errors.New("agent: invalid config")

// ErrRecordFailed is wrapped by Result.Err when the session ended with
// reason record_failed: the recorder could not write (Executor.RecordErr),
// so the session stopped before the next effect. The recorder's error,
// which names the file, is wrapped with it.
var ErrRecordFailed = errors.New("the trajectory could not be written, so the session stopped")

func (c *Config) check() error {
	var errs []error
	if c.Provider == nil {
		errs = append(errs, errors.New("Provider is required: give a model provider (or a mockllm script)"))
	}
	if c.Sink == nil {
		errs = append(errs, errors.New("Sink is required: give the recorder the session is written to"))
	}
	if c.Executor.Env == nil {
		errs = append(errs, errors.New("Executor.Env is required: create it with tools.NewEnv"))
	} else if c.Executor.Env.Registry() == nil {
		errs = append(errs, errors.New("Executor.Env has no tool registry: create it with tools.NewEnv(workspace, registry)"))
	}
	for _, d := range c.Defenses {
		if !d.Valid() {
			errs = append(errs, fmt.Errorf("Defenses: unknown defense %q", d))
		}
	}
	l := c.Limits
	if l.MaxTurns < 0 || l.TokenBudget < 0 || l.CostBudget < 0 || l.MaxTokens < 0 || l.ContextTokens < 0 ||
		l.Prices.Input < 0 || l.Prices.Output < 0 || l.Prices.CacheRead < 0 || l.Prices.CacheWrite < 0 {
		errs = append(errs, errors.New("Limits: a limit or price is negative; use 0 for unbounded"))
	}
	if l.ContextWindow < 0 || l.CompactThreshold < 0 || l.CompactThreshold > 1 {
		errs = append(errs, errors.New("Limits: context_window must be positive and compact_threshold a fraction between 0 and 1 (0.8 compacts at 80% of the window)"))
	}
	if l.Compaction != "" && !l.Compaction.Valid() {
		errs = append(errs, fmt.Errorf("Limits: compaction %q is not a strategy; use drop or summarize", l.Compaction))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Models)) {
		if m := c.Models[name]; m.ContextWindow <= 0 || m.MaxOutput < 0 {
			errs = append(errs, fmt.Errorf("Models: %s needs a positive context_window (and max_output, when given, not negative)", name))
		}
	}
	if l.CostBudget > 0 && !l.Prices.set() {
		errs = append(errs, errors.New("Limits: cost_budget_usd needs prices (input_per_mtok, output_per_mtok): retrace ships no price list"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// Result is how a session ended.
type Result struct {
	// Reason is the attributed end reason, as in session_end.
	Reason trajectory.EndReason
	// ErrorCode is a label when Reason is error (stop_missing, model_server_error, ...).
	ErrorCode string
	// Err is the error that ended the session, when there was one.
	Err          error
	Turns        int
	Usage        trajectory.Usage
	ToolCalls    int
	ToolFailures int
	// Text is the text of the model's last reply.
	Text string
}
