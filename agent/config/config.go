package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/agent/hooks"
	"github.com/retrace-dev/retrace/agent/mcp"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/sandbox"
)

// Config is the content of a retrace.yaml file.
type Config struct {
	Permissions permission.Config `yaml:"permissions"`
	Hooks       []hooks.Config    `yaml:"hooks"`
	Limits      agent.Limits      `yaml:"limits"`
	MCPServers  []mcp.Config      `yaml:"mcp_servers"`
	// Models adds to or overrides the runtime's model table: model id or
	// family prefix, then context_window and max_output in tokens (see
	// agent.LookupModel). Only a trusted file may set it.
	Models map[string]agent.ModelInfo `yaml:"models"`
	// Defenses turn in-loop defenses on or off (see Defenses).
	Defenses Defenses `yaml:"defenses"`
	// Replay says how replays normalise volatile output (see Replay).
	Replay Replay `yaml:"replay"`
	// Cache configures prompt caching, on by default (see Cache).
	Cache Cache `yaml:"cache"`
	// Detectors set retrace detect's thresholds: detector id, then
	// threshold name, then value (retrace detect --list names them;
	// package detectors checks them). The runtime ignores the section.
	Detectors map[string]map[string]float64 `yaml:"detectors"`
	// Prices are per model (the id session_start records), in US dollars
	// per million tokens: what the cost_usd metric of retrace eval's
	// thresholds charges a session's recorded usage at. retrace ships no
	// price list. The runtime ignores the section (its cost budget uses
	// limits.prices), as it does an untrusted file's.
	Prices map[string]agent.Prices `yaml:"prices"`
	// Sandbox confines the processes tools start (package sandbox). Only
	// a trusted file may turn it off, open the network or add writable
	// directories; a workspace file may only make it stricter.
	Sandbox sandbox.Policy `yaml:"sandbox"`
}

// Load reads and checks the configuration file at path. Every problem is
// reported with the file name, and with the line when YAML knows it.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return Parse(data, path)
}

// Parse reads a configuration from data; name is used in messages.
func Parse(data []byte, name string) (Config, error) {
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("config %s: %w", name, err)
	}
	if err := checkReplay(&cfg.Replay, data, name); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", name, err)
	}
	return cfg, nil
}

// Check builds the parts the configuration describes, so that every bad
// rule, hook and MCP server entry is reported before a session starts. It returns the
// permission checker and the hook runner for the workspace.
func (c Config) Check(name, workspace string) (*permission.Checker, *hooks.Runner, error) {
	perm, perr := permission.New(c.Permissions, workspace)
	if perr != nil {
		perr = fmt.Errorf("config %s: permissions: %w", name, perr)
	}
	hr, herr := hooks.New(c.Hooks, workspace)
	if herr != nil {
		herr = fmt.Errorf("config %s: hooks: %w", name, herr)
	}
	merr := mcp.Validate(c.MCPServers)
	if merr != nil {
		merr = fmt.Errorf("config %s: mcp_servers: %w", name, merr)
	}
	derr := c.Defenses.check()
	if derr != nil {
		derr = fmt.Errorf("config %s: %w", name, derr)
	}
	cerr := c.Cache.check()
	if cerr != nil {
		cerr = fmt.Errorf("config %s: %w", name, cerr)
	}
	serr := c.Sandbox.Check()
	if serr != nil {
		serr = fmt.Errorf("config %s: %w", name, serr)
	}
	var prerr error
	for _, model := range slices.Sorted(maps.Keys(c.Prices)) {
		if p := c.Prices[model]; p.Input < 0 || p.Output < 0 || p.CacheRead < 0 || p.CacheWrite < 0 {
			prerr = errors.Join(prerr, fmt.Errorf("config %s: prices.%s: a price is negative; give US dollars per million tokens, 0 for free", name, model))
		}
	}
	if err := errors.Join(perr, herr, merr, derr, cerr, serr, prerr); err != nil {
		return nil, nil, err
	}
	return perm, hr, nil
}
