package config

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/agent/sandbox"
	"github.com/retrace-dev/retrace/trajectory"
)

// FileName is the name of the configuration file in a workspace and in
// the user's configuration directory.
const FileName = "retrace.yaml"

// UserFile returns the path of the user's own configuration file inside
// the user configuration directory dir (what os.UserConfigDir returns):
// dir/retrace/retrace.yaml.
func UserFile(dir string) string {
	return filepath.Join(dir, "retrace", FileName)
}

// defaultFuseThreshold mirrors the permission package's default (a
// FuseThreshold of 0 means 3), so a workspace's threshold is compared
// with what would really apply; a test pins the two together.
const defaultFuseThreshold = 3

// Refused is one setting of an untrusted file that Restrict left out
// because it would widen what the agent may do, or run code.
type Refused struct {
	// File is the file's name and Line the setting's line (0 if unknown).
	File string
	Line int
	// Field is the setting's path, e.g. "permissions.allow[0]" or "hooks[1]".
	Field string
	// Value is what the file asks for, e.g. "bypass" or the rule text. It
	// never holds a command, an environment or headers, which may carry
	// secrets.
	Value string
	// Why says what the setting would do that an untrusted file may not.
	Why string
}

// String formats the setting as "file:line: field: value (why)".
func (r Refused) String() string {
	return fmt.Sprintf("%s: %s: %s (%s)", r.Where(), r.Field, r.Value, r.Why)
}

// Where is the setting's position, "file:line", or the file alone when
// the line is unknown.
func (r Refused) Where() string { return at(r.File, r.Line) }

// ErrUntrusted is wrapped by the errors for an untrusted configuration
// file that asks for more than it may.
var ErrUntrusted = errors.New("untrusted configuration widens permissions")

// UntrustedError is an untrusted file with settings Restrict refused.
type UntrustedError struct {
	// File is the untrusted file.
	File string
	// Refused are its refused settings, in file order.
	Refused []Refused
}

// Error lists every refused setting and says how to trust the file.
func (e *UntrustedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config %s belongs to the workspace, which is not trusted, and it asks for more than a workspace may (%d setting(s)):", e.File, len(e.Refused))
	for _, r := range e.Refused {
		b.WriteString("\n  ")
		b.WriteString(r.String())
	}
	b.WriteString("\nA workspace's own " + FileName + " may only restrict: deny and ask rules, disallowed_tools, protected_paths, a stricter mode, lower limits. " +
		"If you trust this workspace, run again with --trust-workspace; or move these settings to your own config (--config FILE, or " + FileName + " in your user config directory), which is trusted.")
	return b.String()
}

// Unwrap returns ErrUntrusted.
func (e *UntrustedError) Unwrap() error { return ErrUntrusted }

// strictness orders the permission modes from the most permissive to the
// strictest; an unknown mode ranks below all of them, so it is refused.
func strictness(m trajectory.PermissionMode) int {
	switch m {
	case trajectory.PermBypass:
		return 0
	case trajectory.PermAcceptEdits:
		return 1
	case "", trajectory.PermDefault:
		return 2
	case trajectory.PermPlan:
		return 3
	}
	return -1
}

// Overlay layers the trusted configuration over on base: its rules,
// disallowed tools, protected paths, hooks and MCP servers are added to
// base's, and every mode, limit, price and threshold it sets (non-zero)
// replaces base's.
func Overlay(base, over Config) Config {
	out := clone(base)
	p, o := &out.Permissions, over.Permissions
	if o.Mode != "" {
		p.Mode = o.Mode
	}
	p.Allow = append(p.Allow, o.Allow...)
	p.Ask = append(p.Ask, o.Ask...)
	p.Deny = append(p.Deny, o.Deny...)
	p.DisallowedTools = append(p.DisallowedTools, o.DisallowedTools...)
	p.ProtectedPaths = append(p.ProtectedPaths, o.ProtectedPaths...)
	if o.FuseThreshold != 0 {
		p.FuseThreshold = o.FuseThreshold
	}
	out.Hooks = append(out.Hooks, over.Hooks...)
	out.MCPServers = append(out.MCPServers, over.MCPServers...)
	out.Defenses.Enable = append(out.Defenses.Enable, over.Defenses.Enable...)
	out.Defenses.Disable = append(out.Defenses.Disable, over.Defenses.Disable...)
	out.Replay = overlayReplay(out.Replay, over.Replay)
	if len(over.Models) > 0 {
		models := maps.Clone(out.Models)
		if models == nil {
			models = map[string]agent.ModelInfo{}
		}
		maps.Copy(models, over.Models)
		out.Models = models
	}
	if len(over.Prices) > 0 {
		prices := maps.Clone(out.Prices)
		if prices == nil {
			prices = map[string]agent.Prices{}
		}
		maps.Copy(prices, over.Prices)
		out.Prices = prices
	}
	out.Cache = overlayCache(out.Cache, over.Cache)
	out.Sandbox = overlaySandbox(out.Sandbox, over.Sandbox)
	l, ol := &out.Limits, over.Limits
	setIf(&l.MaxTurns, ol.MaxTurns)
	setIf(&l.TokenBudget, ol.TokenBudget)
	setIf(&l.CostBudget, ol.CostBudget)
	setIf(&l.MaxTokens, ol.MaxTokens)
	setIf(&l.ContextTokens, ol.ContextTokens)
	setIf(&l.ContextWindow, ol.ContextWindow)
	setIf(&l.CompactThreshold, ol.CompactThreshold)
	if ol.Compaction != "" {
		l.Compaction = ol.Compaction
	}
	setIf(&l.Prices.Input, ol.Prices.Input)
	setIf(&l.Prices.Output, ol.Prices.Output)
	setIf(&l.Prices.CacheRead, ol.Prices.CacheRead)
	setIf(&l.Prices.CacheWrite, ol.Prices.CacheWrite)
	return out
}

func setIf[T int | int64 | float64](dst *T, v T) {
	if v != 0 {
		*dst = v
	}
}

// clone copies c's lists, so that layering never writes into the slices of
// a configuration the caller still holds.
func clone(c Config) Config {
	p := &c.Permissions
	p.Allow = append([]string(nil), p.Allow...)
	p.Ask = append([]string(nil), p.Ask...)
	p.Deny = append([]string(nil), p.Deny...)
	p.DisallowedTools = append([]string(nil), p.DisallowedTools...)
	p.ProtectedPaths = append([]string(nil), p.ProtectedPaths...)
	c.Hooks = append(c.Hooks[:0:0], c.Hooks...)
	c.MCPServers = append(c.MCPServers[:0:0], c.MCPServers...)
	c.Defenses.Enable = slices.Clone(c.Defenses.Enable)
	c.Defenses.Disable = slices.Clone(c.Defenses.Disable)
	c.Replay = overlayReplay(Replay{}, c.Replay)
	c.Cache = overlayCache(Cache{}, c.Cache)
	c.Sandbox = overlaySandbox(sandbox.Policy{}, c.Sandbox)
	return c
}

// Restrict layers the untrusted file f over the trusted base and returns
// the result with every setting of f that was left out. An untrusted file
// may only restrict: its deny and ask rules, disallowed tools and
// protected paths are added to base's; its mode applies when it is at
// least as strict as base's (plan is stricter than default, default than
// accept_edits, accept_edits than bypass); each of its limits applies
// when it is lower than base's, where base's 0 means the runtime's default
// (unbounded for turns and budgets, agent.DefaultContextTokens for the
// context, 3 for the fuse threshold, the provider's own for max_tokens);
// its prices apply when base sets none or they are no lower than base's,
// because lower prices would stretch a cost budget. Allow rules, hooks,
// MCP servers, a more permissive mode, higher limits and defenses turned
// off are refused (defenses turned on are added); prompt caching may be
// turned off or its ttl shortened, not the reverse; each
// with the file, line and field, in file order.
func Restrict(base Config, f File) (Config, []Refused) {
	out := clone(base)
	var refused []Refused
	refuse := func(line int, field, value, why string) {
		refused = append(refused, Refused{File: f.Name, Line: line, Field: field, Value: value, Why: why})
	}
	c := f.Config
	p, wp := &out.Permissions, c.Permissions
	if wp.Mode != "" {
		switch {
		case strictness(wp.Mode) < 0:
			refuse(f.Line("permissions", "mode"), "permissions.mode", string(wp.Mode), "unknown mode; use plan or default")
		case strictness(wp.Mode) < strictness(p.Mode):
			refuse(f.Line("permissions", "mode"), "permissions.mode", string(wp.Mode),
				fmt.Sprintf("more permissive than the trusted mode %s; an untrusted file may only choose a stricter one", modeName(p.Mode)))
		default:
			p.Mode = wp.Mode
		}
	}
	for i, r := range wp.Allow {
		refuse(f.Line("permissions", "allow", i), fmt.Sprintf("permissions.allow[%d]", i), strconv.Quote(r), "an allow rule lets calls run without asking")
	}
	p.Ask = append(p.Ask, wp.Ask...)
	p.Deny = append(p.Deny, wp.Deny...)
	p.DisallowedTools = append(p.DisallowedTools, wp.DisallowedTools...)
	p.ProtectedPaths = append(p.ProtectedPaths, wp.ProtectedPaths...)
	if wp.FuseThreshold != 0 {
		if wp.FuseThreshold <= orDefault(p.FuseThreshold, defaultFuseThreshold) {
			p.FuseThreshold = wp.FuseThreshold
		} else {
			refuse(f.Line("permissions", "fuse_threshold"), "permissions.fuse_threshold", strconv.Itoa(wp.FuseThreshold),
				fmt.Sprintf("higher than the trusted %d; an untrusted file may only lower it", orDefault(p.FuseThreshold, defaultFuseThreshold)))
		}
	}
	for i, h := range c.Hooks {
		refuse(f.Line("hooks", i), fmt.Sprintf("hooks[%d]", i), fmt.Sprintf("hook %q", h.Name), "a hook runs a command on tool calls")
	}
	for i, s := range c.MCPServers {
		refuse(f.Line("mcp_servers", i), fmt.Sprintf("mcp_servers[%d]", i), fmt.Sprintf("server %q", s.Name), "an MCP server runs a program or connects to a service, and its tools run code")
	}
	// Turning a defense on only stops a stuck session sooner; turning one
	// off lets a misbehaving model run longer, which is a trusted choice.
	out.Defenses.Enable = append(out.Defenses.Enable, c.Defenses.Enable...)
	for i, d := range c.Defenses.Disable {
		refuse(f.Line("defenses", "disable", i), fmt.Sprintf("defenses.disable[%d]", i), string(d), "turning a defense off lets a misbehaving model run on; an untrusted file may only turn defenses on")
	}
	restrictLimits(&out.Limits, c.Limits, f, refuse)
	// A model table entry could claim any window for the session's model,
	// so that compaction would come too late.
	for _, name := range slices.Sorted(maps.Keys(c.Models)) {
		refuse(f.Line("models", name), "models."+name, strconv.FormatInt(c.Models[name].ContextWindow, 10),
			"a model table entry sets the window compaction is measured against; an untrusted file may only lower limits.context_window")
	}
	// The replay section only loosens how two sessions are compared; it
	// runs nothing and permits nothing, so it is layered as it is.
	out.Replay = overlayReplay(out.Replay, c.Replay)
	restrictCache(&out.Cache, c.Cache, f, refuse)
	restrictSandbox(&out.Sandbox, c.Sandbox, f, refuse)
	return out, refused
}

// overlaySandbox layers a trusted file's sandbox section over base's: the
// mode it sets replaces base's, network turned on stays on, and its
// allowed destinations and writable directories are added.
func overlaySandbox(base, over sandbox.Policy) sandbox.Policy {
	out := base
	if over.Mode != "" {
		out.Mode = over.Mode
	}
	out.Network = base.Network || over.Network
	out.AllowNetwork = append(slices.Clone(base.AllowNetwork), over.AllowNetwork...)
	out.Writable = append(slices.Clone(base.Writable), over.Writable...)
	return out
}

// restrictSandbox layers an untrusted file's sandbox section: it may make
// the sandbox stricter (read-only), and may not turn it off, choose a
// looser mode, open the network, or add destinations or writable
// directories, since each would let a command reach further.
func restrictSandbox(base *sandbox.Policy, w sandbox.Policy, f File, refuse func(line int, field, value, why string)) {
	switch w.Mode {
	case "":
	case sandbox.ModeReadOnly:
		base.Mode = w.Mode
	case sandbox.ModeOff:
		refuse(f.Line("sandbox", "mode"), "sandbox.mode", string(w.Mode), "only your own configuration or --no-sandbox may turn the sandbox off")
	case sandbox.ModeWorkspaceWrite:
		if base.EffectiveMode() != sandbox.ModeWorkspaceWrite {
			refuse(f.Line("sandbox", "mode"), "sandbox.mode", string(w.Mode), fmt.Sprintf("looser than the trusted %s; an untrusted file may only make the sandbox stricter", base.EffectiveMode()))
		}
	default:
		refuse(f.Line("sandbox", "mode"), "sandbox.mode", string(w.Mode), "unknown mode; use read-only or workspace-write")
	}
	if w.Network && !base.Network {
		refuse(f.Line("sandbox", "network"), "sandbox.network", "true", "opening the network to tool processes is a trusted choice")
	}
	for i, hp := range w.AllowNetwork {
		refuse(f.Line("sandbox", "allow_network", i), fmt.Sprintf("sandbox.allow_network[%d]", i), strconv.Quote(hp), "a network destination lets tool processes send data out")
	}
	for i, d := range w.Writable {
		refuse(f.Line("sandbox", "writable", i), fmt.Sprintf("sandbox.writable[%d]", i), strconv.Quote(d), "a writable directory outside the workspace lets commands change files there")
	}
}

// restrictLimits applies the limits of an untrusted file that are lower
// than the trusted ones and refuses the others.
func restrictLimits(l *agent.Limits, w agent.Limits, f File, refuse func(line int, field, value, why string)) {
	limit := func(key string, dst *int64, v, effective int64, unbounded bool) {
		if v == 0 {
			return
		}
		if unbounded && *dst == 0 || v <= effective {
			*dst = v
			return
		}
		refuse(f.Line("limits", key), "limits."+key, strconv.FormatInt(v, 10),
			fmt.Sprintf("higher than the trusted %d; an untrusted file may only lower a limit", effective))
	}
	turns, maxTokens := int64(l.MaxTurns), int64(l.MaxTokens)
	limit("max_turns", &turns, int64(w.MaxTurns), turns, true)
	limit("token_budget", &l.TokenBudget, w.TokenBudget, l.TokenBudget, true)
	// 0 is the provider's own default, which retrace does not know: any
	// value is accepted then, the provider bounds it and the token budget
	// bounds what the session spends.
	limit("max_tokens", &maxTokens, int64(w.MaxTokens), maxTokens, true)
	limit("context_tokens", &l.ContextTokens, w.ContextTokens, orDefault(l.ContextTokens, agent.DefaultContextTokens), false)
	l.MaxTurns, l.MaxTokens = int(turns), int(maxTokens)
	// A smaller window or threshold only compacts sooner; a larger one
	// could let the context overflow, and a model table could claim any
	// window, so those are the trusted file's to give.
	limit("context_window", &l.ContextWindow, w.ContextWindow, orDefault(l.ContextWindow, agent.DefaultContextWindow), false)
	if w.CompactThreshold != 0 {
		if trusted := orDefaultFloat(l.CompactThreshold, agent.DefaultCompactThreshold); w.CompactThreshold <= trusted {
			l.CompactThreshold = w.CompactThreshold
		} else {
			refuse(f.Line("limits", "compact_threshold"), "limits.compact_threshold", strconv.FormatFloat(w.CompactThreshold, 'f', -1, 64),
				fmt.Sprintf("higher than the trusted %s; an untrusted file may only lower it", strconv.FormatFloat(trusted, 'f', -1, 64)))
		}
	}
	// Either strategy sends the conversation only to the session's own model.
	if w.Compaction != "" {
		l.Compaction = w.Compaction
	}
	if w.CostBudget != 0 {
		if l.CostBudget == 0 || w.CostBudget <= l.CostBudget {
			l.CostBudget = w.CostBudget
		} else {
			refuse(f.Line("limits", "cost_budget_usd"), "limits.cost_budget_usd", strconv.FormatFloat(w.CostBudget, 'f', -1, 64),
				fmt.Sprintf("higher than the trusted %s; an untrusted file may only lower a limit", strconv.FormatFloat(l.CostBudget, 'f', -1, 64)))
		}
	}
	price := func(key string, dst *float64, v float64) {
		switch {
		case v == 0:
		case *dst == 0 || v >= *dst:
			*dst = v
		default:
			refuse(f.Line("limits", "prices", key), "limits.prices."+key, strconv.FormatFloat(v, 'f', -1, 64),
				fmt.Sprintf("lower than the trusted %s, which would stretch the cost budget; an untrusted file may only raise a price", strconv.FormatFloat(*dst, 'f', -1, 64)))
		}
	}
	price("input_per_mtok", &l.Prices.Input, w.Prices.Input)
	price("output_per_mtok", &l.Prices.Output, w.Prices.Output)
	price("cache_read_per_mtok", &l.Prices.CacheRead, w.Prices.CacheRead)
	price("cache_write_per_mtok", &l.Prices.CacheWrite, w.Prices.CacheWrite)
}

func orDefaultFloat(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

func orDefault[T int | int64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func modeName(m trajectory.PermissionMode) string {
	if m == "" {
		return string(trajectory.PermDefault)
	}
	return string(m)
}

// Sources name the configuration files of a session. The trusted file is
// the base; the workspace's file is layered over it.
type Sources struct {
	// Explicit is the file given with --config, "" for none. It is trusted
	// and replaces the user's file; it must exist.
	Explicit string
	// User is the user's own file (UserFile), "" for none. It is trusted,
	// and read when it exists and Explicit is "".
	User string
	// Workspace is the workspace's own retrace.yaml, "" for none; it is
	// read when it exists and is not the Explicit or User file itself.
	Workspace string
	// TrustWorkspace layers the workspace's file like a trusted one;
	// without it the file may only restrict (Restrict), and a file that
	// asks for more is an *UntrustedError.
	TrustWorkspace bool
	// Defaults lie below every file: the values the runtime uses when no
	// file sets them, so that a workspace's limits are compared with what
	// would really apply (e.g. the default turn limit).
	Defaults Config
	// DefaultsName names Defaults in Resolved.Sources; "" means
	// LayerDefaults. An eval gives its scenario's config here.
	DefaultsName string
	// Recorded, for a replay, is the configuration the recording ran
	// under: it replaces the user's file and the workspace's (both are
	// in it already), as its Trust allows, and Explicit is layered over
	// it as the what-if.
	Recorded *Recorded
}

// Resolved is a session's configuration and the files it came from.
type Resolved struct {
	// Config is the layered configuration.
	Config Config
	// Files are the files read, trusted first.
	Files []string
	// Sources say which layer each setting came from (see
	// trajectory.SessionStart.ConfigSources): LayerDefaults, a file's
	// path, or what Sources.Recorded said.
	Sources map[string]string
	// Refused are the settings of Sources.Recorded a replay left out.
	Refused []Refused
	// WhatIf lists the settings the Explicit file changed over
	// Sources.Recorded: a replay's what-if.
	WhatIf []string
}

// Name names the configuration in messages: its files joined with " + ",
// or "(defaults)" when no file was read.
func (r Resolved) Name() string {
	if len(r.Files) == 0 {
		return "(defaults)"
	}
	return strings.Join(r.Files, " + ")
}

// Resolve reads the files of src and layers them: the defaults, then the
// trusted file (Explicit, else User), then the workspace's file, trusted
// or restricted. Every problem names its file and, when YAML knows it, its
// line.
func Resolve(src Sources) (Resolved, error) {
	res := Resolved{Config: clone(src.Defaults), Sources: map[string]string{}}
	attribute(res.Sources, Config{}, src.Defaults, cmp.Or(src.DefaultsName, LayerDefaults))
	if src.Recorded != nil {
		return resolveRecorded(res, src)
	}
	trusted := src.Explicit
	if trusted == "" && src.User != "" {
		if exists, err := present(src.User); err != nil {
			return res, err
		} else if exists {
			trusted = src.User
		}
	}
	if trusted != "" {
		f, err := LoadFile(trusted)
		if err != nil {
			return res, err
		}
		attributeFile(res.Sources, res.Config, f)
		res.Config = Overlay(res.Config, f.Config)
		res.Files = append(res.Files, trusted)
	}
	if src.Workspace == "" {
		return res, nil
	}
	exists, err := present(src.Workspace)
	if err != nil || !exists || sameFile(src.Workspace, trusted) {
		return res, err
	}
	f, err := LoadFile(src.Workspace)
	if err != nil {
		return res, err
	}
	res.Files = append(res.Files, src.Workspace)
	if src.TrustWorkspace {
		attributeFile(res.Sources, res.Config, f)
		res.Config = Overlay(res.Config, f.Config)
		return res, nil
	}
	cfg, refused := Restrict(res.Config, f)
	if len(refused) > 0 {
		return res, &UntrustedError{File: f.Name, Refused: refused}
	}
	attributeFile(res.Sources, res.Config, f)
	res.Config = cfg
	return res, nil
}

// resolveRecorded layers a replay's configuration: the recorded one as its
// trust allows, then the what-if file, whose changes are listed.
func resolveRecorded(res Resolved, src Sources) (Resolved, error) {
	if err := recordedLayer(&res, *src.Recorded); err != nil {
		return res, err
	}
	if src.Explicit == "" {
		return res, nil
	}
	f, err := LoadFile(src.Explicit)
	if err != nil {
		return res, err
	}
	attributeFile(res.Sources, res.Config, f)
	over := Overlay(res.Config, f.Config)
	res.WhatIf = Changed(res.Config, over)
	res.Config = over
	res.Files = append(res.Files, src.Explicit)
	return res, nil
}

// present reports whether a configuration file exists; any other problem
// with the path is an error, so a file that cannot be read is never
// silently skipped.
func present(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("config: %w", err)
}

// sameFile reports whether a and b are the same file, so the workspace's
// file named with --config is read once, as trusted.
func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	ia, err := os.Stat(a)
	if err != nil {
		return false
	}
	ib, err := os.Stat(b)
	return err == nil && os.SameFile(ia, ib)
}
