package harness

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/agent/hooks"
	"github.com/retrace-dev/retrace/agent/mcp"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/trajectory"
)

const doneScript = "turns:\n  - content: [{text: done}]\n"

// noteTool is one more tool for the catalog.
type noteTool struct{}

func (noteTool) Spec() tools.Spec {
	return tools.Spec{Name: "note", Description: "Takes a note.", Schema: json.RawMessage(`{"type":"object"}`),
		Display: trajectory.DisplayFull, Source: trajectory.ToolBuiltin}
}
func (noteTool) ConcurrencySafe(json.RawMessage) bool { return false }
func (noteTool) Run(context.Context, *tools.Env, json.RawMessage) (tools.Result, error) {
	return tools.Result{Output: "noted"}, nil
}

// config_hash changes with every setting that changes how a session
// behaves, one at a time, and with nothing else.
func TestTheConfigHashCoversEverySettingThatChangesBehaviour(t *testing.T) {
	base := sessionStart(t, testSpec(t, doneScript)).ConfigHash
	gone := httptest.NewServer(nil)
	gone.Close() // a server that refuses connections: the policy still names it
	changes := []struct {
		name   string
		change func(*Spec)
	}{
		{"an allow rule", func(s *Spec) { s.Config.Permissions.Allow = []string{"Read"} }},
		{"a deny rule", func(s *Spec) { s.Config.Permissions.Deny = []string{"Bash(rm:*)"} }},
		{"a protected path", func(s *Spec) { s.Config.Permissions.ProtectedPaths = []string{"secrets/**"} }},
		{"the permission mode", func(s *Spec) { s.Config.Permissions.Mode = trajectory.PermPlan }},
		{"a hook", func(s *Spec) {
			s.Config.Hooks = []hooks.Config{{Name: "lint", Event: hooks.EventPreToolUse, Matcher: "bash", Command: "true"}}
		}},
		{"an MCP server", func(s *Spec) { s.Config.MCPServers = []mcp.Config{{Name: "notes", URL: gone.URL}} }},
		{"a defense turned on", func(s *Spec) {
			s.Config.Defenses.Enable = []trajectory.DefenseName{trajectory.DefenseLoopDetection}
		}},
		{"a defense turned off", func(s *Spec) {
			s.Config.Defenses.Disable = []trajectory.DefenseName{trajectory.DefenseLowYieldSpin}
		}},
		{"the turn limit", func(s *Spec) { s.Config.Limits.MaxTurns = 7 }},
		{"a price", func(s *Spec) { s.Config.Limits.Prices = agent.Prices{Input: 3, Output: 15} }},
		{"the model", func(s *Spec) { s.Model = "another-model" }},
		{"the system prompt", func(s *Spec) { s.System = "You are a reckless agent." }},
		{"the tool catalog", func(s *Spec) { s.Tools = []tools.Tool{noteTool{}} }},
		{"streaming", func(s *Spec) { s.Stream = true }},
	}
	seen := map[string]string{base: "the base session"}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			spec := testSpec(t, doneScript)
			c.change(&spec)
			got := sessionStart(t, spec).ConfigHash
			if prev, dup := seen[got]; dup {
				t.Fatalf("changing %s leaves config_hash equal to that of %s", c.name, prev)
			}
			seen[got] = c.name
		})
	}
}

func TestTheConfigHashIgnoresWhatDoesNotChangeBehaviour(t *testing.T) {
	base := testSpec(t, doneScript)
	want := sessionStart(t, base).ConfigHash
	same := []struct {
		name   string
		change func(*Spec)
	}{
		{"another workspace and home directory", func(s *Spec) {}}, // testSpec makes new ones
		{"the same defenses in another order", func(s *Spec) {
			d := agent.DefaultDefenses()
			for i, j := 0, len(d)-1; i < j; i, j = i+1, j-1 {
				d[i], d[j] = d[j], d[i]
			}
			s.BaseDefenses = d
		}},
		{"another task", func(s *Spec) { s.Prompt = "Say it is done." }},
		{"tags", func(s *Spec) { s.Tags = map[string]string{"scenario": "clean"} }},
	}
	for _, c := range same {
		t.Run(c.name, func(t *testing.T) {
			spec := testSpec(t, doneScript)
			c.change(&spec)
			if got := sessionStart(t, spec).ConfigHash; got != want {
				t.Fatalf("config_hash changed: %s, want %s", got, want)
			}
		})
	}
}

// An MCP server's environment is a map: the order its entries were written
// in never changes the policy's hash.
func TestThePolicyHashDoesNotDependOnMapOrder(t *testing.T) {
	a, b := map[string]string{}, map[string]string{}
	keys := []string{"A", "B", "C", "D", "E", "F", "G", "H"}
	for i := range keys {
		a[keys[i]] = "v" + keys[i]
		b[keys[len(keys)-1-i]] = "v" + keys[len(keys)-1-i]
	}
	ha, err := PolicyHash(configWithEnv(a))
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		hb, err := PolicyHash(configWithEnv(b))
		if err != nil {
			t.Fatal(err)
		}
		if ha != hb {
			t.Fatalf("the same environment in another order hashes to %s, not %s", hb, ha)
		}
	}
	b["A"] = "changed"
	if hb, _ := PolicyHash(configWithEnv(b)); hb == ha {
		t.Fatal("a changed environment value leaves the hash as it was")
	}
}

func TestBuildReportsABadSpecAsErrSpec(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Spec)
	}{
		{"a workspace that does not exist", func(s *Spec) { s.Workspace = "/does/not/exist" }},
		{"an unknown defense", func(s *Spec) { s.Config.Defenses.Enable = []trajectory.DefenseName{"loop_detecton"} }},
		{"a hook with a bad matcher", func(s *Spec) {
			s.Config.Hooks = []hooks.Config{{Name: "h", Event: hooks.EventPreToolUse, Matcher: "(", Command: "true"}}
		}},
		{"no model", func(s *Spec) { s.Provider = nil }},
		{"nowhere to record", func(s *Spec) { s.Output = nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := testSpec(t, doneScript)
			c.change(&spec)
			sess, err := Build(t.Context(), spec)
			if !errors.Is(err, ErrSpec) {
				sess.Close()
				t.Fatalf("err = %v, want ErrSpec", err)
			}
		})
	}
}

func configWithEnv(env map[string]string) config.Config {
	return config.Config{MCPServers: []mcp.Config{{Name: "notes", Command: "notes-server", Env: env}}}
}
