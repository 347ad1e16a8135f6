package config

import (
	"errors"
	"strings"
	"testing"
)

func TestAReplaySectionLoadsWithItsRulesPositions(t *testing.T) {
	cfg, err := Parse([]byte(`permissions:
  mode: default
replay:
  normalize:
    - pattern: 'took [0-9]+ms'
      replace: 'took <ms>'
      tools: [bash]
      in: [tool_output]
    - {pattern: 'id-[a-z]+', replace: 'id-X'}
  tools:
    bash: exit_code
    web_fetch: ignore
`), "retrace.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Replay
	if len(r.Normalize) != 2 || r.Normalize[0].Where != "retrace.yaml:5" || r.Normalize[1].Where != "retrace.yaml:9" {
		t.Fatalf("rules %+v", r.Normalize)
	}
	if r.Normalize[0].Tools[0] != "bash" || r.Normalize[0].In[0] != "tool_output" || r.Tools["web_fetch"] != "ignore" {
		t.Fatalf("replay section %+v", r)
	}
}

func TestReplaySectionErrorsNameTheFileLineAndField(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"a pattern that does not compile names its line", "replay:\n  normalize:\n    - replace: x\n      pattern: 'a(b'\n",
			"retrace.yaml:4: replay.normalize[0].pattern: \"a(b\" does not compile"},
		{"a missing pattern names the rule's line", "replay:\n  normalize:\n    - replace: x\n", "retrace.yaml:3: replay.normalize[0].pattern: missing"},
		{"a pattern that matches the empty string is refused", "replay:\n  normalize:\n    - {pattern: 'x*', replace: y}\n",
			"retrace.yaml:3: replay.normalize[0].pattern: \"x*\" matches the empty string"},
		{"an unknown scope lists the valid ones", "replay:\n  normalize:\n    - pattern: x\n      in: [tool_output, stdout]\n",
			"retrace.yaml:4: replay.normalize[0].in[1]: unknown scope \"stdout\"; use tool_output, tool_input, model_text"},
		{"an unknown level lists the valid ones", "replay:\n  tools:\n    bash: loose\n",
			"retrace.yaml:3: replay.tools.bash: unknown level \"loose\"; use exact, exit_code, ignore"},
		{"a misspelt key inside the section is an unknown field", "replay:\n  normalise: []\n", "normalise"},
		{"a misspelt key inside a rule is an unknown field", "replay:\n  normalize:\n    - {pattern: x, replacement: y}\n", "replacement"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "retrace.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	t.Run("a bad pattern wraps ErrReplay", func(t *testing.T) {
		_, err := Parse([]byte("replay:\n  normalize:\n    - pattern: '['\n"), "retrace.yaml")
		if !errors.Is(err, ErrReplay) {
			t.Fatalf("error %v does not wrap ErrReplay", err)
		}
	})
}

// A workspace's replay section loosens only the comparison, so Restrict
// layers it as it is, and Overlay adds rules and replaces levels.
func TestTheReplaySectionIsLayeredByRestrictAndOverlay(t *testing.T) {
	base, err := ParseFile([]byte("replay:\n  normalize: [{pattern: a, replace: b}]\n  tools: {bash: exact, read: ignore}\n"), "user.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := ParseFile([]byte("replay:\n  normalize: [{pattern: c, replace: d}]\n  tools: {bash: exit_code}\n"), "retrace.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, refused := Restrict(base.Config, ws)
	if len(refused) != 0 {
		t.Fatalf("refused %v", refused)
	}
	if len(got.Replay.Normalize) != 2 || got.Replay.Normalize[1].Where != "retrace.yaml:2" || got.Replay.Tools["bash"] != "exit_code" || got.Replay.Tools["read"] != "ignore" {
		t.Fatalf("restricted replay section %+v", got.Replay)
	}
	if base.Config.Replay.Tools["bash"] != "exact" || len(base.Config.Replay.Normalize) != 1 {
		t.Fatalf("layering changed the base: %+v", base.Config.Replay)
	}
	if o := Overlay(base.Config, ws.Config); len(o.Replay.Normalize) != 2 || o.Replay.Tools["bash"] != "exit_code" {
		t.Fatalf("overlaid replay section %+v", o.Replay)
	}
}
