package hooks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// The events a hook can be configured for, spelled as in Claude Code so
// existing hook configurations and scripts carry over unchanged.
const (
	EventPreToolUse  = "PreToolUse"
	EventPostToolUse = "PostToolUse"
)

// DefaultTimeout is how long a hook may run when its config sets no timeout.
const DefaultTimeout = 60 * time.Second

// MaxStdout is the most bytes of a hook's stdout that are kept. A hook that
// prints more has its run recorded as an error, because a truncated JSON
// answer cannot be trusted.
const MaxStdout = 1 << 20

// maxStderr bounds the stderr kept for a block reason: it goes to the model,
// and a runaway hook must not flood the context.
const maxStderr = 64 << 10

// Config is one configured hook. The runtime config loader embeds a list of
// them under `hooks:`; durations are written like "5s".
type Config struct {
	// Name labels the hook in hook_run events; it must pass
	// trajectory.IsLabel and be unique.
	Name string `yaml:"name"`
	// Event is EventPreToolUse or EventPostToolUse.
	Event string `yaml:"event"`
	// Matcher is a Go regexp matched against the whole tool name; "" or
	// "*" matches every tool.
	Matcher string `yaml:"matcher"`
	// Command is run with /bin/bash -c in the workspace directory.
	Command string `yaml:"command"`
	// Timeout bounds one run; zero means DefaultTimeout.
	Timeout time.Duration `yaml:"timeout"`
}

// ConfigError is one problem with one configured hook. New returns all of
// them joined, so a user fixes the whole file in one pass; errors.As finds
// the first.
type ConfigError struct {
	// Index is the hook's position in the list, from 0.
	Index int
	// Name is the hook's name as configured, possibly empty.
	Name string
	// Field is the YAML field at fault, e.g. "matcher".
	Field string
	// Problem says what is wrong and what to do about it.
	Problem string
	// Err is the underlying error, e.g. from regexp, if any.
	Err error
}

// Error names the hook by index and name, the field, and the fix.
func (e *ConfigError) Error() string {
	who := fmt.Sprintf("hooks[%d]", e.Index)
	if e.Name != "" {
		who += fmt.Sprintf(" (%q)", e.Name)
	}
	return fmt.Sprintf("%s: field %s: %s", who, e.Field, e.Problem)
}

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

// hook is a validated Config, ready to run.
type hook struct {
	name    string
	phase   trajectory.HookPhase
	matcher *regexp.Regexp // nil matches every tool
	command string
	timeout time.Duration
}

func (h *hook) matches(tool string) bool {
	return h.matcher == nil || h.matcher.MatchString(tool)
}

// validate turns one Config into a hook, collecting every problem with it.
func validate(i int, c Config, seen map[string]int) (*hook, []error) {
	var errs []error
	bad := func(field, problem string, err error) {
		errs = append(errs, &ConfigError{Index: i, Name: c.Name, Field: field, Problem: problem, Err: err})
	}
	h := &hook{name: c.Name, command: c.Command, timeout: c.Timeout}

	switch {
	case c.Name == "":
		bad("name", "is missing; give the hook a short label such as \"format-go\", used in hook_run events", nil)
	case !trajectory.IsLabel(c.Name):
		bad("name", "must be a label: 1-64 characters, starting with a letter or digit, then letters, digits, '_', '.', ':' or '-'", nil)
	default:
		if j, dup := seen[c.Name]; dup {
			bad("name", fmt.Sprintf("is already used by hooks[%d]; give each hook a unique name", j), nil)
		} else {
			seen[c.Name] = i
		}
	}

	switch c.Event {
	case EventPreToolUse:
		h.phase = trajectory.HookPre
	case EventPostToolUse:
		h.phase = trajectory.HookPost
	case "":
		bad("event", fmt.Sprintf("is missing; set it to %q or %q", EventPreToolUse, EventPostToolUse), nil)
	default:
		bad("event", fmt.Sprintf("is %q; set it to %q or %q (case matters)", c.Event, EventPreToolUse, EventPostToolUse), nil)
	}

	if c.Matcher != "" && c.Matcher != "*" {
		re, err := regexp.Compile("^(?:" + c.Matcher + ")$")
		if err != nil {
			bad("matcher", fmt.Sprintf("%q is not a valid Go regular expression (%v); write e.g. \"bash|write\", or \"*\" for every tool", c.Matcher, err), err)
		}
		h.matcher = re
	}

	if strings.TrimSpace(c.Command) == "" {
		bad("command", "is missing; give the shell command to run, e.g. \"./scripts/check.sh\"", nil)
	}

	switch {
	case c.Timeout < 0:
		bad("timeout", fmt.Sprintf("is %v; give a positive duration such as \"5s\", or leave it out for the default %v", c.Timeout, DefaultTimeout), nil)
	case c.Timeout == 0:
		h.timeout = DefaultTimeout
	}
	return h, errs
}

// New validates every config and returns a Runner for them, with the hooks
// running in workspace. The error reports every problem found, each as a
// *ConfigError. A Runner with no hooks is valid and does nothing.
func New(cfgs []Config, workspace string) (*Runner, error) {
	var errs []error
	seen := make(map[string]int, len(cfgs))
	r := &Runner{}
	for i, c := range cfgs {
		h, herrs := validate(i, c, seen)
		errs = append(errs, herrs...)
		r.hooks = append(r.hooks, h)
	}
	if len(cfgs) > 0 {
		dir, err := workspaceDir(workspace)
		if err != nil {
			errs = append(errs, err)
		}
		r.workspace = dir
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// workspaceDir makes workspace absolute, because hooks see it as cwd and
// RETRACE_PROJECT_DIR and may be written against either.
func workspaceDir(workspace string) (string, error) {
	if workspace == "" {
		return "", errors.New("hooks: no workspace directory given to run hooks in")
	}
	dir, err := filepath.Abs(workspace)
	if err != nil {
		return "", fmt.Errorf("hooks: workspace %q: %w", workspace, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("hooks: workspace %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("hooks: workspace %q is not a directory", dir)
	}
	return dir, nil
}
