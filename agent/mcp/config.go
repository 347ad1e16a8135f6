package mcp

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds one tool call when a server's config sets no
// timeout. It is deliberately far tighter than "forever": without it one
// stuck server hangs the whole session.
const DefaultTimeout = 120 * time.Second

// DefaultConnectTimeout bounds starting a server, the protocol handshake
// and listing its tools. A server that takes longer is reported as failed.
const DefaultConnectTimeout = 30 * time.Second

// Config is one configured MCP server. The runtime config loader embeds a
// list of them under `mcp_servers:`; durations are written like "30s".
// Exactly one transport is set: Command for a local stdio server, or URL
// for a streamable-HTTP server.
type Config struct {
	// Name labels the server; it becomes the <server> part of every tool
	// name, so it must be unique after normalisation.
	Name string `yaml:"name"`
	// Command is the program of a stdio server, found on PATH when it has
	// no slash.
	Command string `yaml:"command"`
	// Args are the stdio server's arguments.
	Args []string `yaml:"args"`
	// Env holds variables added to the stdio server's environment.
	Env map[string]string `yaml:"env"`
	// URL is the endpoint of a streamable-HTTP server.
	URL string `yaml:"url"`
	// Headers are sent with every HTTP request, e.g. Authorization.
	Headers map[string]string `yaml:"headers"`
	// Timeout bounds one tool call; zero means DefaultTimeout.
	Timeout time.Duration `yaml:"timeout"`
	// ReconnectBackoff is the first wait before reconnecting this server
	// after it died, doubled at each further attempt; zero means the
	// runtime's base (DefaultReconnectBase unless the caller set one). A
	// test or scenario that kills a server on purpose sets it short so
	// it does not spend seconds waiting.
	ReconnectBackoff time.Duration `yaml:"reconnect_backoff"`
	// Deferred says whether the server's tools wait for tool_search before
	// the model sees them; unset means true, because a few servers can
	// bring dozens of tools.
	Deferred *bool `yaml:"deferred"`
}

// ConfigError is one problem with one configured server. Connect returns
// all of them joined, so a user fixes the whole list in one pass;
// errors.As finds the first.
type ConfigError struct {
	// Index is the server's position in the list, from 0.
	Index int
	// Name is the server's name as configured, possibly empty.
	Name string
	// Field is the YAML field at fault, e.g. "url".
	Field string
	// Problem says what is wrong and what to do about it.
	Problem string
}

// Error names the server by index and name, the field, and the fix.
func (e *ConfigError) Error() string {
	who := fmt.Sprintf("mcp_servers[%d]", e.Index)
	if e.Name != "" {
		who += fmt.Sprintf(" (%q)", e.Name)
	}
	return fmt.Sprintf("%s: field %s: %s", who, e.Field, e.Problem)
}

// Validate checks every config and returns every problem found, each as a
// *ConfigError.
func Validate(cfgs []Config) error {
	var errs []error
	seen := make(map[string]int, len(cfgs))
	for i, c := range cfgs {
		bad := func(field, problem string) {
			errs = append(errs, &ConfigError{Index: i, Name: c.Name, Field: field, Problem: problem})
		}
		norm := normalizeServer(c.Name)
		switch {
		case strings.TrimSpace(c.Name) == "":
			bad("name", "is missing; give the server a short name such as \"github\"; it becomes part of its tool names")
		case norm == "":
			bad("name", fmt.Sprintf("%q has no letter or digit; use a name such as \"github\"", c.Name))
		default:
			if j, dup := seen[norm]; dup {
				bad("name", fmt.Sprintf("normalises to %q, as the name of mcp_servers[%d] does; give the two servers distinct names", norm, j))
			} else {
				seen[norm] = i
			}
		}
		hasCmd, hasURL := strings.TrimSpace(c.Command) != "", strings.TrimSpace(c.URL) != ""
		switch {
		case hasCmd && hasURL:
			bad("command", "and url are both set; keep command for a local stdio server or url for a streamable-HTTP server, not both")
		case !hasCmd && !hasURL:
			bad("command", "and url are both missing; set command (and args) for a local stdio server, or url for a streamable-HTTP server")
		case hasURL:
			u, err := url.Parse(c.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad("url", fmt.Sprintf("%q is not an http or https URL; write e.g. \"https://example.com/mcp\"", c.URL))
			}
			if len(c.Args) > 0 || len(c.Env) > 0 {
				bad("args", "and env only apply to a stdio server (command); remove them or use command instead of url")
			}
		case hasCmd:
			if len(c.Headers) > 0 {
				bad("headers", "only apply to an HTTP server (url); remove them or use url instead of command")
			}
		}
		if c.ReconnectBackoff < 0 {
			bad("reconnect_backoff", fmt.Sprintf("is %v; give a positive duration such as \"100ms\", or leave it out for the default %v", c.ReconnectBackoff, DefaultReconnectBase))
		}
		if c.Timeout < 0 {
			bad("timeout", fmt.Sprintf("is %v; give a positive duration such as \"30s\", or leave it out for the default %v", c.Timeout, DefaultTimeout))
		}
	}
	return errors.Join(errs...)
}

// callTimeout is the configured call timeout or the default.
func (c Config) callTimeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// deferred is the configured deferral or the default, true.
func (c Config) deferred() bool {
	return c.Deferred == nil || *c.Deferred
}

// remote reports whether the server is reached over HTTP.
func (c Config) remote() bool { return strings.TrimSpace(c.URL) != "" }

// deferrals is each server's effective deferral and the notices that
// explain a change. Every MCP tool name starts with "mcp__", so a resident
// server's tools beside a deferred server's share a 5-character prefix:
// the condition of the prefix collapse, where a model that means a
// deferred tool it has no schema for is forced, by constrained decoding,
// into the resident tool that shares the prefix, and the wrong call
// passes every check. The name cannot drop the prefix
// (permission rules and hooks match mcp__<server>), so the mix is what
// goes: when some servers are deferred and some are not, every server is
// deferred, which costs a tool_search turn rather than a silent wrong
// call. A session whose servers are all resident, or all deferred, is
// left as configured.
func deferrals(cfgs []Config) ([]bool, []string) {
	out := make([]bool, len(cfgs))
	var resident []string
	deferred := 0
	for i, c := range cfgs {
		out[i] = c.deferred()
		if out[i] {
			deferred++
		} else {
			resident = append(resident, c.Name)
		}
	}
	if deferred == 0 || len(resident) == 0 {
		return out, nil
	}
	var notes []string
	for i := range out {
		out[i] = true
	}
	for _, name := range resident {
		notes = append(notes, fmt.Sprintf("mcp server %q: its tools are deferred although its config says deferred: false, "+
			"because other servers are deferred and every MCP tool name shares the mcp__ prefix, which lets a call meant for a deferred tool "+
			"collapse into a resident one (prefix_collapse_risk in docs/failure-modes.md); set deferred: false on every server to keep them all loaded", name))
	}
	return out, notes
}
