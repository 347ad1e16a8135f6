package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

func TestAConfigFileWithRulesAndHooksLoads(t *testing.T) {
	cfg, err := Parse([]byte(`
permissions:
  mode: accept_edits
  allow: ["Bash(git status:*)", "Read(src/**)"]
  deny: ["Bash(git push:*)"]
hooks:
  - name: audit
    event: PreToolUse
    matcher: bash
    command: "true"
    timeout: 5s
`), "retrace.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Permissions.Mode != trajectory.PermAcceptEdits || len(cfg.Permissions.Allow) != 2 || len(cfg.Hooks) != 1 {
		t.Fatalf("cfg = %+v", cfg)
	}
	if _, _, err := cfg.Check("retrace.yaml", t.TempDir()); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrorsNameTheKeyOrTheRule(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"an unknown top-level key", "permisions:\n  allow: []\n", "permisions"},
		{"an unknown permission key", "permissions:\n  alow: [Read]\n", "alow"},
		{"an unknown rule syntax", "permissions:\n  deny: [\"Bash(rm:*\"]\n", "Bash(rm:*"},
		{"a hook without a name", "hooks:\n  - event: PreToolUse\n    command: \"true\"\n", "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml), "retrace.yaml")
			if err == nil {
				_, _, err = cfg.Check("retrace.yaml", t.TempDir())
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "retrace.yaml") {
				t.Fatalf("err = %v, want one naming retrace.yaml and %q", err, tt.want)
			}
		})
	}
}

// Every retrace.yaml example of the README (a block fenced as
// "```yaml retrace.yaml") must stay a valid configuration.
func TestTheREADMEExamplesAreValidConfigurations(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const fence = "```yaml retrace.yaml\n"
	rest, n := string(readme), 0
	for {
		_, after, ok := strings.Cut(rest, fence)
		if !ok {
			break
		}
		example, next, ok := strings.Cut(after, "```")
		if !ok {
			t.Fatal("README.md has an unclosed retrace.yaml example")
		}
		rest, n = next, n+1
		cfg, err := Parse([]byte(example), "README.md")
		if err != nil {
			t.Fatalf("example %d: %v", n, err)
		}
		ws := t.TempDir()
		os.MkdirAll(filepath.Join(ws, "hooks"), 0o755)
		if _, _, err := cfg.Check("README.md", ws); err != nil {
			t.Fatalf("example %d: %v", n, err)
		}
	}
	if n < 2 {
		t.Fatalf("README.md has %d retrace.yaml examples, want the runtime's and the detectors' thresholds", n)
	}
}
