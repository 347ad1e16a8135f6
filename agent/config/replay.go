package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Replay is the replay section of retrace.yaml: how a replay (and any
// other comparison of two sessions) normalises what always differs
// between two runs, and how closely each tool's calls are compared.
//
//	replay:
//	  normalize:
//	    - pattern: 'took [0-9]+ms'   # RE2 syntax
//	      replace: 'took <ms>'       # $1 and ${name} expand
//	      tools: [bash]              # optional: only these tools' output and input
//	      in: [tool_output]          # optional: tool_output, tool_input, model_text
//	  tools:
//	    bash: exact                  # exact (default), exit_code or ignore
//	    web_fetch: ignore
//
// The section only loosens a comparison; it runs nothing and permits
// nothing, so an untrusted file may set it (a replay names every rule
// that applied, with its file and line).
type Replay struct {
	// Normalize are the replacement rules, applied in file order.
	Normalize []NormalizeRule `yaml:"normalize"`
	// Tools sets a comparison level per tool name: exact, exit_code or ignore.
	Tools map[string]string `yaml:"tools"`
}

// NormalizeRule is one replacement rule of replay.normalize.
type NormalizeRule struct {
	// Pattern is a regular expression in RE2 syntax.
	Pattern string `yaml:"pattern"`
	// Replace replaces every match; $1 and ${name} expand to the groups.
	Replace string `yaml:"replace"`
	// Tools limits the rule to these tools' output and input.
	Tools []string `yaml:"tools"`
	// In limits the rule to these scopes: tool_output, tool_input, model_text.
	In []string `yaml:"in"`
	// Where is the rule's position, "file:line", set when the file is read.
	Where string `yaml:"-"`
}

// The scopes and levels a replay section may name; package compare
// defines what they do, and a test in package replay pins the two lists
// together.
var (
	// ReplayScopes are the values of a rule's in.
	ReplayScopes = []string{"tool_output", "tool_input", "model_text"}
	// ReplayLevels are the values of replay.tools.
	ReplayLevels = []string{"exact", "exit_code", "ignore"}
)

// ErrReplay is wrapped by the errors for a replay section that cannot be
// used: a pattern that does not compile, an unknown scope or level.
var ErrReplay = errors.New("invalid replay section")

// checkReplay validates the replay section of the file data named name
// and sets each rule's Where. Every error names the file, the line and
// the field, and says what to write instead.
func checkReplay(r *Replay, data []byte, name string) error {
	if len(r.Normalize) == 0 && len(r.Tools) == 0 {
		return nil
	}
	f := File{Name: name}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err == nil || errors.Is(err, io.EOF) {
		if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
			f.doc = doc.Content[0]
		}
	}
	var errs []error
	bad := func(line int, field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s: %s", ErrReplay, at(name, line), field, fmt.Sprintf(format, args...)))
	}
	for i := range r.Normalize {
		rule := &r.Normalize[i]
		field := fmt.Sprintf("replay.normalize[%d]", i)
		rule.Where = at(name, f.Line("replay", "normalize", i))
		switch re, err := regexp.Compile(rule.Pattern); {
		case rule.Pattern == "":
			bad(f.Line("replay", "normalize", i), field+".pattern", "missing or empty; give a regular expression (RE2 syntax)")
		case err != nil:
			bad(f.Line("replay", "normalize", i, "pattern"), field+".pattern", "%q does not compile: %v", rule.Pattern, err)
		case re.MatchString(""):
			bad(f.Line("replay", "normalize", i, "pattern"), field+".pattern", "%q matches the empty string, so it would rewrite between every character; make it match at least one character", rule.Pattern)
		}
		for j, s := range rule.In {
			if !slices.Contains(ReplayScopes, s) {
				bad(f.Line("replay", "normalize", i, "in", j), fmt.Sprintf("%s.in[%d]", field, j), "unknown scope %q; use %s", s, strings.Join(ReplayScopes, ", "))
			}
		}
		for j, s := range rule.Tools {
			if strings.TrimSpace(s) == "" {
				bad(f.Line("replay", "normalize", i, "tools", j), fmt.Sprintf("%s.tools[%d]", field, j), "empty tool name; name a tool, e.g. bash")
			}
		}
	}
	tools := make([]string, 0, len(r.Tools))
	for t := range r.Tools {
		tools = append(tools, t)
	}
	slices.Sort(tools)
	for _, t := range tools {
		if l := r.Tools[t]; !slices.Contains(ReplayLevels, l) {
			bad(f.Line("replay", "tools", t), "replay.tools."+t, "unknown level %q; use %s", l, strings.Join(ReplayLevels, ", "))
		}
	}
	return errors.Join(errs...)
}

// overlayReplay adds over's rules after base's and lets over's tool
// levels replace base's.
func overlayReplay(base, over Replay) Replay {
	out := Replay{Normalize: append(slices.Clip(base.Normalize), over.Normalize...)}
	if len(base.Tools)+len(over.Tools) > 0 {
		out.Tools = map[string]string{}
		for k, v := range base.Tools {
			out.Tools[k] = v
		}
		for k, v := range over.Tools {
			out.Tools[k] = v
		}
	}
	return out
}
