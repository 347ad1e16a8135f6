package permission

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/retrace-dev/retrace/agent/shell"
	"github.com/retrace-dev/retrace/trajectory"
)

// Config is the permission part of the runtime configuration, found under
// "permissions:" in the config file.
type Config struct {
	// Mode is default, plan, accept_edits or bypass; "" means default.
	Mode trajectory.PermissionMode `yaml:"mode"`
	// Allow, Ask and Deny are rules: "Tool" or "Tool(pattern)".
	Allow []string `yaml:"allow"`
	Ask   []string `yaml:"ask"`
	Deny  []string `yaml:"deny"`
	// DisallowedTools are tool names the model may not use at all.
	DisallowedTools []string `yaml:"disallowed_tools"`
	// ProtectedPaths are extra doublestar patterns, relative to the
	// workspace, that need confirmation to write even in bypass mode.
	ProtectedPaths []string `yaml:"protected_paths"`
	// FuseThreshold is how many denials of the same operation trip its
	// fuse; 0 means 3.
	FuseThreshold int `yaml:"fuse_threshold"`
	// Home is the user's home directory, for ~ in rules and for the list of
	// sensitive files; "" means os.UserHomeDir. It is not read from the
	// config file.
	Home string `yaml:"-"`
}

// defaultFuseThreshold is the denials of one operation before its fuse
// trips: enough to forgive a misclick, few enough to stop a loop early.
const defaultFuseThreshold = 3

// Rule is one parsed permission rule.
type Rule struct {
	// Text is the rule as configured, e.g. "Bash(git push:*)".
	Text string
	// Tool is the tool name in lower case: rules match tool names without
	// regard to case, so "Read" matches the read tool.
	Tool string
	// Pattern is the part in parentheses, without a trailing ":*"; "" when
	// the rule covers the whole tool.
	Pattern string
	// Prefix is set by a trailing ":*" in a bash rule: the command must
	// start with the pattern's words rather than equal them.
	Prefix bool
	// words are the bash pattern's words, parsed like a command.
	words []string
}

// bashTool is the tool whose rule patterns are command prefixes.
const bashTool = "bash"

// ErrRuleSyntax is wrapped by every rule parsing error.
var ErrRuleSyntax = errors.New("bad permission rule")

// ParseRule parses "Tool" or "Tool(pattern)". For bash the pattern is a
// command, with ":*" at the end meaning "this command or any command that
// starts with it"; for other tools it is a doublestar glob on the path,
// relative to the workspace unless it starts with / or ~/, and matched
// against the base name at any depth when it has no slash (like
// .gitignore). "Tool(*)" is the same as "Tool".
func ParseRule(s string) (Rule, error) {
	bad := func(format string, args ...any) (Rule, error) {
		return Rule{}, fmt.Errorf("%w %q: %s", ErrRuleSyntax, s, fmt.Sprintf(format, args...))
	}
	text := strings.TrimSpace(s)
	if text == "" {
		return bad("the rule is empty; write a tool name such as Read or Bash(git status:*)")
	}
	name, pattern, hasPattern := strings.Cut(text, "(")
	name = strings.TrimSpace(name)
	if !hasPattern && strings.Contains(text, ")") {
		return bad("unbalanced parenthesis: there is a ) without a (")
	}
	if name == "" || strings.IndexFunc(name, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) >= 0 {
		return bad("unknown rule syntax; write Tool or Tool(pattern), e.g. Bash(git status:*) or Read(src/**)")
	}
	r := Rule{Text: text, Tool: strings.ToLower(name)}
	if !hasPattern {
		return r, nil
	}
	if !strings.HasSuffix(pattern, ")") {
		return bad("unbalanced parenthesis: the pattern must end with )")
	}
	pattern = strings.TrimSuffix(pattern, ")")
	depth := 0
	for _, c := range pattern {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		}
		if depth < 0 {
			return bad("unbalanced parenthesis: text follows the closing )")
		}
	}
	if depth != 0 {
		return bad("unbalanced parenthesis in the pattern")
	}
	pattern = strings.TrimSpace(pattern)
	if pattern == "" {
		return bad("the pattern in parentheses is empty; write %s for the whole tool", name)
	}
	if pattern == "*" {
		return r, nil
	}
	if r.Tool == bashTool {
		if p, ok := strings.CutSuffix(pattern, ":*"); ok {
			pattern, r.Prefix = strings.TrimSpace(p), true
		}
		if pattern == "" {
			return bad("the command before :* is empty")
		}
		a := shell.Analyze(pattern)
		if a.Err != nil || len(a.Commands) != 1 || a.Commands[0].Dynamic || a.Commands[0].Name == "" {
			return bad("a Bash pattern must be one plain command such as git status, optionally followed by :*")
		}
		r.Pattern, r.words = pattern, a.Commands[0].Words()
		return r, nil
	}
	if !doublestar.ValidatePattern(pattern) {
		return bad("bad glob %q; see https://github.com/bmatcuk/doublestar#patterns", pattern)
	}
	r.Pattern = pattern
	return r, nil
}

// RuleError is one bad entry of the permission config.
type RuleError struct {
	// Field is the config field, e.g. "permissions.allow[2]".
	Field string
	Err   error
}

// Error names the field and what is wrong.
func (e *RuleError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *RuleError) Unwrap() error { return e.Err }

// matchesTool reports whether the rule's tool is the call's tool. An MCP
// rule naming only the server (mcp__server) covers all its tools.
func (r Rule) matchesTool(tool string) bool {
	tool = strings.ToLower(tool)
	if r.Tool == tool {
		return true
	}
	return strings.HasPrefix(r.Tool, "mcp__") && strings.Count(r.Tool, "__") == 1 && strings.HasPrefix(tool, r.Tool+"__")
}

// matchesCommand reports whether the bash rule matches one simple command.
// With lookThrough, the wrapped command of sudo/env/timeout… and the base
// name of /usr/bin/git also count: that is for deny and ask rules, which
// must not be dodged by a wrapper, and never for allow rules.
func (r Rule) matchesCommand(c shell.Command, lookThrough bool) bool {
	candidates := []shell.Command{c}
	if lookThrough {
		for cur := c; len(candidates) < 8; {
			inner, ok := cur.Inner()
			if !ok || inner.Name == "" {
				break
			}
			candidates = append(candidates, inner)
			cur = inner
		}
	}
	for _, cand := range candidates {
		if cand.Name == "" {
			continue
		}
		words := cand.Words()
		if r.wordsMatch(words) {
			return true
		}
		if lookThrough && path.Base(cand.Name) != cand.Name {
			words[0] = path.Base(cand.Name)
			if r.wordsMatch(words) {
				return true
			}
		}
	}
	return false
}

func (r Rule) wordsMatch(words []string) bool {
	if len(words) < len(r.words) || (!r.Prefix && len(words) != len(r.words)) {
		return false
	}
	for i, w := range r.words {
		if words[i] != w {
			return false
		}
	}
	return true
}

// matchesPath reports whether the file rule's glob matches a path, given
// as workspace-relative (rel, "" when outside) and absolute.
func (r Rule) matchesPath(rel, abs, home string) bool {
	p := r.Pattern
	switch {
	case strings.HasPrefix(p, "~/") && home != "":
		ok, _ := doublestar.Match(path.Join(home, p[2:]), abs)
		return ok
	case strings.HasPrefix(p, "/"):
		ok, _ := doublestar.Match(p, abs)
		return ok
	case !strings.Contains(p, "/"):
		ok, _ := doublestar.Match(p, path.Base(abs))
		return ok
	case rel == "":
		return false
	default:
		ok, _ := doublestar.Match(p, rel)
		return ok
	}
}
