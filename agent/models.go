package agent

import (
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// DefaultContextWindow is the context window assumed for a model that
// neither the model table nor the configuration knows. It is an
// assumption, never presented as known: the compaction event records
// window_source default, and the CLI warns.
const DefaultContextWindow = 200_000

// DefaultCompactThreshold is the fraction of the context window at which
// the loop compacts when Limits.CompactThreshold is 0. It leaves room for
// the reply and for the tool results of one more turn.
const DefaultCompactThreshold = 0.8

// ModelInfo is what the loop needs to know about a model's limits.
type ModelInfo struct {
	// ContextWindow is the most tokens a request (input, cache and
	// output) may hold.
	ContextWindow int64 `yaml:"context_window"`
	// MaxOutput is the most tokens one reply may have; 0 when unknown.
	MaxOutput int64 `yaml:"max_output"`
}

// modelEntry is one row of the built-in table: a model family named by the
// prefix of its model ids (dated snapshots and "-latest" aliases share
// their family's limits).
type modelEntry struct {
	prefix string
	info   ModelInfo
}

// builtinModels are the context windows and output limits the providers
// publish for their common models (Anthropic models overview, OpenAI model
// pages, as of late 2026). A longer prefix wins, so claude-3-5-haiku is
// not read as claude-3-5. Windows behind a beta header (Claude's 1M
// context) are not assumed: configure them in limits.models.
var builtinModels = []modelEntry{
	{"claude-opus-4-5", ModelInfo{200_000, 64_000}},
	{"claude-opus-4-1", ModelInfo{200_000, 32_000}},
	{"claude-opus-4", ModelInfo{200_000, 32_000}},
	{"claude-sonnet-4-5", ModelInfo{200_000, 64_000}},
	{"claude-sonnet-4", ModelInfo{200_000, 64_000}},
	{"claude-haiku-4-5", ModelInfo{200_000, 64_000}},
	{"claude-3-7-sonnet", ModelInfo{200_000, 64_000}},
	{"claude-3-5-sonnet", ModelInfo{200_000, 8_192}},
	{"claude-3-5-haiku", ModelInfo{200_000, 8_192}},
	{"claude-3-opus", ModelInfo{200_000, 4_096}},
	{"claude-3-haiku", ModelInfo{200_000, 4_096}},
	{"gpt-5", ModelInfo{400_000, 128_000}},
	{"gpt-4.1", ModelInfo{1_047_576, 32_768}},
	{"gpt-4o", ModelInfo{128_000, 16_384}},
	{"o4-mini", ModelInfo{200_000, 100_000}},
	{"o3", ModelInfo{200_000, 100_000}},
	{"o1", ModelInfo{200_000, 100_000}},
}

// LookupModel finds model in the configured table, then in the built-in
// one, by exact name first and then by the longest family prefix. ok is
// false for a model neither knows; the caller then assumes
// DefaultContextWindow and says so.
func LookupModel(model string, configured map[string]ModelInfo) (ModelInfo, trajectory.WindowSource, bool) {
	if info, ok := configured[model]; ok && info.ContextWindow > 0 {
		return info, trajectory.WindowConfig, true
	}
	if info, ok := longestPrefix(model, configuredEntries(configured)); ok {
		return info, trajectory.WindowConfig, true
	}
	if info, ok := longestPrefix(model, builtinModels); ok {
		return info, trajectory.WindowModelTable, true
	}
	return ModelInfo{ContextWindow: DefaultContextWindow}, trajectory.WindowDefault, false
}

func configuredEntries(configured map[string]ModelInfo) []modelEntry {
	out := make([]modelEntry, 0, len(configured))
	for name, info := range configured {
		if info.ContextWindow > 0 {
			out = append(out, modelEntry{name, info})
		}
	}
	// Map order is random; sorting keeps the longest-prefix choice stable
	// between two entries of equal length.
	slices.SortFunc(out, func(a, b modelEntry) int { return strings.Compare(a.prefix, b.prefix) })
	return out
}

// longestPrefix returns the entry whose prefix is the longest one that
// names model: equal to it, or followed by a "-" (claude-opus-4 names
// claude-opus-4-20250514, not claude-opus-45).
func longestPrefix(model string, entries []modelEntry) (ModelInfo, bool) {
	best, found := -1, false
	var info ModelInfo
	for _, e := range entries {
		if model != e.prefix && !strings.HasPrefix(model, e.prefix+"-") {
			continue
		}
		if len(e.prefix) > best {
			best, info, found = len(e.prefix), e.info, true
		}
	}
	return info, found
}

// contextWindow is the window the session compacts against: the
// configured limits.context_window, else the configured or built-in model table's, else the
// default (source says which).
func (l Limits) contextWindow(model string, models map[string]ModelInfo) (int64, trajectory.WindowSource) {
	if l.ContextWindow > 0 {
		return l.ContextWindow, trajectory.WindowConfig
	}
	info, source, _ := LookupModel(model, models)
	return info.ContextWindow, source
}

// compactAt is the context size at which the loop compacts: the explicit
// limits.context_tokens, else the threshold fraction of the window.
func (l Limits) compactAt(model string, models map[string]ModelInfo) (threshold, window int64, source trajectory.WindowSource) {
	window, source = l.contextWindow(model, models)
	if l.ContextTokens > 0 {
		return l.ContextTokens, window, source
	}
	f := l.CompactThreshold
	if f <= 0 {
		f = DefaultCompactThreshold
	}
	return int64(float64(window) * f), window, source
}

// configuredWindow is the window session_start records: the one the
// configuration gave (limits.context_window, or limits.models for the
// session's model), so that a replay compacts against the same window
// without the configuration; 0 when the window comes from the built-in
// table or the default, which a replay looks up the same way.
func configuredWindow(l Limits, model string, models map[string]ModelInfo) int64 {
	w, source := l.contextWindow(model, models)
	if source != trajectory.WindowConfig {
		return 0
	}
	return w
}
