package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/retrace-dev/retrace/trajectory"
)

// LayerDefaults names the built-in defaults in Resolved.Sources.
const LayerDefaults = "defaults"

// redacted replaces a secret value in Effective's output.
const redacted = "<redacted>"

// headersPath and envPath match the paths of the maps whose values may
// be secrets.
var (
	headersPath = regexp.MustCompile(`^mcp_servers\[\d+\]\.headers$`)
	envPath     = regexp.MustCompile(`\.env$`)
)

// secretName matches the environment variable names whose values Effective
// leaves out: an MCP server's or hook's credentials.
var secretName = regexp.MustCompile(`(?i)(token|secret|key|passw|auth|credential|cookie|session)`)

// Effective returns c as session_start records it (trajectory
// SessionStart.Config): a JSON object with retrace.yaml's keys, settings
// left at their zero value left out, the home directory left out (it is
// where the user lives, not a policy), MCP headers and environment
// variables named like credentials replaced by "<redacted>". ParseEffective
// reads it back.
func Effective(c Config) (json.RawMessage, error) {
	c = clone(c)
	c.Permissions.Home = ""
	y, err := yaml.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("config: encode the effective configuration: %w", err)
	}
	var tree any
	if err := yaml.Unmarshal(y, &tree); err != nil {
		return nil, fmt.Errorf("config: encode the effective configuration: %w", err)
	}
	tree = prune(tree, "")
	if tree == nil {
		tree = map[string]any{}
	}
	out, err := json.Marshal(tree)
	if err != nil {
		return nil, fmt.Errorf("config: encode the effective configuration: %w", err)
	}
	return out, nil
}

// prune drops the zero values of a decoded YAML tree (booleans stay: a
// false may mean something, as cache.enabled's does) and redacts the
// secrets below path.
func prune(v any, path string) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range t {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if s, ok := val.(string); ok && s != "" && secretValue(path, k) {
				val = redacted
			}
			if pv := prune(val, p); pv != nil {
				out[k] = pv
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		var out []any
		for i, val := range t {
			if pv := prune(val, path+"["+strconv.Itoa(i)+"]"); pv != nil {
				out = append(out, pv)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case string:
		if t == "" {
			return nil
		}
	case int:
		if t == 0 {
			return nil
		}
	case float64:
		if t == 0 {
			return nil
		}
	case nil:
		return nil
	}
	return v
}

// secretValue reports whether the entry key of the map at path holds a
// secret: every header of an MCP server, and an environment variable named
// like a credential.
func secretValue(path, key string) bool {
	switch {
	case headersPath.MatchString(path):
		return true
	case envPath.MatchString(path):
		return secretName.MatchString(key)
	}
	return false
}

// ParseEffective reads a configuration Effective wrote (or any
// retrace.yaml: JSON is YAML) and checks it like a file; name is used in
// messages.
func ParseEffective(raw []byte, name string) (File, error) {
	return ParseFile(raw, name)
}

// Trust says how much of a recorded configuration a replay applies.
type Trust int

// The trust levels of a recorded configuration.
const (
	// TrustStranger is a recording that retrace cannot prove the user's
	// own: its configuration may only restrict (Restrict, with
	// accept_edits as the ceiling, since a replay runs in a workspace of
	// its own), and what it left out is reported.
	TrustStranger Trust = iota
	// TrustOwn is the user's own recording (its signature checks with the
	// user's key): its mode, rules, limits and defenses apply as recorded;
	// its hooks and MCP servers, which run code outside the replay's
	// throwaway workspace, are left out and reported.
	TrustOwn
	// TrustAll applies the recorded configuration as it is
	// (--trust-recording).
	TrustAll
)

// Recorded is the configuration a recording carries, the base layer of a
// replay's configuration (Sources.Recorded).
type Recorded struct {
	// Name names it in messages, e.g. "session_start.config" or the
	// restored workspace's retrace.yaml of an older recording.
	Name string
	// Data is the configuration: session_start.config, or the bytes of a
	// retrace.yaml.
	Data []byte
	// Sources are session_start.config_sources: the layer each setting
	// came from when it was recorded.
	Sources map[string]string
	// Trust is how much of it applies.
	Trust Trust
}

// recordedLayer applies the recorded configuration to res, as r.Trust
// allows, keeping what it left out in res.Refused.
func recordedLayer(res *Resolved, r Recorded) error {
	f, err := ParseEffective(r.Data, r.Name)
	if err != nil {
		return err
	}
	res.Files = append(res.Files, r.Name)
	var cfg Config
	switch r.Trust {
	case TrustAll:
		cfg = Overlay(res.Config, f.Config)
	case TrustOwn:
		c := f.Config
		for i, h := range c.Hooks {
			res.Refused = append(res.Refused, Refused{File: f.Name, Field: fmt.Sprintf("hooks[%d]", i), Value: fmt.Sprintf("hook %q", h.Name),
				Why: "a hook runs a command outside the replay's workspace"})
		}
		for i, s := range c.MCPServers {
			res.Refused = append(res.Refused, Refused{File: f.Name, Field: fmt.Sprintf("mcp_servers[%d]", i), Value: fmt.Sprintf("server %q", s.Name),
				Why: "an MCP server runs a program or connects to a service"})
		}
		c.Hooks, c.MCPServers = nil, nil
		cfg = Overlay(res.Config, c)
	default:
		// The ceiling is accept_edits, not default: a replay runs in a
		// workspace of its own that it throws away, writes outside a
		// workspace are denied in every mode, and accept_edits never
		// lets bash run unasked. Bypass, allow rules, hooks and MCP
		// servers run code on this machine and stay refused.
		base := res.Config
		base.Permissions.Mode = trajectory.PermAcceptEdits
		var refused []Refused
		cfg, refused = Restrict(base, f)
		if f.Config.Permissions.Mode == "" {
			cfg.Permissions.Mode = res.Config.Permissions.Mode
		}
		res.Refused = append(res.Refused, refused...)
	}
	left := map[string]bool{}
	for i, ref := range res.Refused {
		left[ref.Field] = true
		if where, ok := r.Sources[ref.Field]; ok {
			// The setting's own file and line, as recorded.
			res.Refused[i].File, res.Refused[i].Line = where, 0
		}
	}
	for path, layer := range r.Sources {
		if !left[path] {
			res.Sources[path] = layer
		}
	}
	if len(r.Sources) == 0 {
		attributeFile(res.Sources, res.Config, f)
	}
	for i := range cfg.Replay.Normalize {
		if where, ok := r.Sources[fmt.Sprintf("replay.normalize[%d]", i)]; ok {
			cfg.Replay.Normalize[i].Where = where
		}
	}
	res.Config = cfg
	return nil
}

// attribute records in sources that layer set every setting over sets,
// layered on base: a list's entries are numbered after base's own, as
// Overlay appends them.
func attribute(sources map[string]string, base, over Config, layer string) {
	attributeAt(sources, base, over, func(string) string { return layer })
}

// attributeFile records that file f set every setting it sets, layered on
// base, each as "file:line".
func attributeFile(sources map[string]string, base Config, f File) {
	attributeAt(sources, base, f.Config, func(path string) string { return f.At(steps(path)...) })
}

// attributeAt records where(path) for every setting over sets, path being
// the setting's own path in over.
func attributeAt(sources map[string]string, base, over Config, where func(path string) string) {
	lists := map[string]int{}
	for p := range flatten(base) {
		if l, _, ok := listEntry(p); ok {
			lists[l]++
		}
	}
	for path := range flatten(over) {
		key := path
		if list, i, ok := listEntry(path); ok {
			key = list + "[" + strconv.Itoa(i+lists[list]) + "]"
		}
		sources[key] = where(path)
	}
}

// steps splits a setting's path, "permissions.allow[2]", into the steps
// File.Line takes: ("permissions", "allow", 2).
func steps(path string) []any {
	var out []any
	for _, step := range pathStep.FindAllString(path, -1) {
		if step[0] == '[' {
			i, _ := strconv.Atoi(step[1 : len(step)-1])
			out = append(out, i)
			continue
		}
		out = append(out, step)
	}
	return out
}

// entryPath matches the path of a list entry, "permissions.allow[2]".
var entryPath = regexp.MustCompile(`^(.*)\[(\d+)\]$`)

func listEntry(path string) (list string, i int, ok bool) {
	m := entryPath.FindStringSubmatch(path)
	if m == nil {
		return "", 0, false
	}
	i, _ = strconv.Atoi(m[2])
	return m[1], i, true
}

// flatten lists the settings c sets, as paths: a scalar's path
// ("permissions.mode", "models.gpt-x.context_window"), or a list entry's
// ("permissions.allow[0]", "hooks[1]").
func flatten(c Config) map[string]bool {
	raw, err := Effective(c)
	if err != nil {
		return nil
	}
	var tree any
	if json.Unmarshal(raw, &tree) != nil {
		return nil
	}
	out := map[string]bool{}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch t := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(t)) {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(t[k], p)
			}
		case []any:
			for i := range t {
				out[path+"["+strconv.Itoa(i)+"]"] = true
			}
		default:
			if path != "" {
				out[path] = true
			}
		}
	}
	walk(tree, "")
	return out
}

// Changed lists the settings over sets that differ from base's, for a
// replay's what-if: the paths of flatten, sorted.
func Changed(base, over Config) []string {
	b := flatten(base)
	var out []string
	for p := range flatten(over) {
		if !b[p] || !sameSetting(base, over, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// sameSetting reports whether base and over give the setting at path the
// same value.
func sameSetting(base, over Config, path string) bool {
	a, _ := settingValue(base, path)
	b, _ := settingValue(over, path)
	return a == b
}

// settingValue is the JSON of the setting at path in c.
func settingValue(c Config, path string) (string, bool) {
	raw, err := Effective(c)
	if err != nil {
		return "", false
	}
	var tree any
	if json.Unmarshal(raw, &tree) != nil {
		return "", false
	}
	v, ok := lookup(tree, path)
	if !ok {
		return "", false
	}
	b, _ := json.Marshal(v)
	return string(b), true
}

// pathStep splits "a.b[2].c" into its steps.
var pathStep = regexp.MustCompile(`[^.\[\]]+|\[\d+\]`)

func lookup(v any, path string) (any, bool) {
	for _, step := range pathStep.FindAllString(path, -1) {
		switch t := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = t[step]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(step[1 : len(step)-1])
			if err != nil || step[0] != '[' || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}
