package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/agent/mcp"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/trajectory"
)

func TestEffectiveRoundTripsAndRedactsSecrets(t *testing.T) {
	off := false
	c := Config{
		Permissions: permission.Config{Mode: trajectory.PermAcceptEdits, Allow: []string{"Bash(touch:*)"}, Home: "/home/someone"},
		Limits:      agent.Limits{MaxTurns: 7},
		MCPServers: []mcp.Config{{Name: "gh", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer abc"},
			Env: map[string]string{"GITHUB_TOKEN": "ghp_x", "LANG": "C"}}},
		Cache: Cache{Enabled: &off},
	}
	raw, err := Effective(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"Bearer abc", "ghp_x", "/home/someone"} {
		if strings.Contains(string(raw), leak) {
			t.Errorf("the effective configuration holds %q: %s", leak, raw)
		}
	}
	f, err := ParseEffective(raw, "session_start.config")
	if err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	got := f.Config
	if got.Permissions.Mode != trajectory.PermAcceptEdits || !slices.Equal(got.Permissions.Allow, c.Permissions.Allow) || got.Limits.MaxTurns != 7 {
		t.Errorf("read back %+v from %s", got, raw)
	}
	if got.Cache.On() {
		t.Errorf("cache.enabled: false was lost: %s", raw)
	}
	if got.MCPServers[0].Env["LANG"] != "C" || got.MCPServers[0].Env["GITHUB_TOKEN"] != redacted {
		t.Errorf("env read back as %v", got.MCPServers[0].Env)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj["hooks"] != nil {
		t.Errorf("not a JSON object without its empty settings: %s", raw)
	}
}

func TestResolveSaysWhichLayerEachSettingCameFrom(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "user.yaml")
	ws := filepath.Join(dir, "ws.yaml")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(user, "permissions:\n  mode: accept_edits\n  allow: [\"Read\"]\n")
	write(ws, "permissions:\n  deny: [\"Bash(rm:*)\"]\n  allow: [\"Bash(ls:*)\"]\n")
	res, err := Resolve(Sources{User: user, Workspace: ws, TrustWorkspace: true, Defaults: Config{Limits: agent.Limits{MaxTurns: 50}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"limits.max_turns":     LayerDefaults,
		"permissions.mode":     user + ":2",
		"permissions.allow[0]": user + ":3",
		"permissions.allow[1]": ws + ":3",
		"permissions.deny[0]":  ws + ":2",
	}
	for k, v := range want {
		if res.Sources[k] != v {
			t.Errorf("%s from %q, want %q (all: %v)", k, res.Sources[k], v, res.Sources)
		}
	}
}

func TestARecordedConfigurationAppliesAsFarAsItIsTrusted(t *testing.T) {
	raw, err := Effective(Config{Permissions: permission.Config{Mode: trajectory.PermBypass, Allow: []string{"Bash"}},
		Hooks: nil, MCPServers: []mcp.Config{{Name: "s", Command: "srv"}}})
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]string{"permissions.mode": "my.yaml:2", "permissions.allow[0]": "my.yaml:3", "mcp_servers[0]": "my.yaml:5"}
	for _, tc := range []struct {
		trust   Trust
		mode    trajectory.PermissionMode
		allow   int
		servers int
		refused []string
	}{
		{TrustAll, trajectory.PermBypass, 1, 1, nil},
		{TrustOwn, trajectory.PermBypass, 1, 0, []string{"mcp_servers[0]"}},
		{TrustStranger, trajectory.PermAcceptEdits, 0, 0, []string{"permissions.mode", "permissions.allow[0]", "mcp_servers[0]"}},
	} {
		res, err := Resolve(Sources{Recorded: &Recorded{Name: "session_start.config", Data: raw, Sources: sources, Trust: tc.trust}})
		if err != nil {
			t.Fatal(err)
		}
		c := res.Config
		var refused []string
		for _, r := range res.Refused {
			refused = append(refused, r.Field)
			if r.Where() != sources[r.Field] {
				t.Errorf("trust %d: %s is placed at %s, want its recorded source %s", tc.trust, r.Field, r.Where(), sources[r.Field])
			}
		}
		slices.Sort(refused)
		slices.Sort(tc.refused)
		if c.Permissions.Mode != tc.mode || len(c.Permissions.Allow) != tc.allow || len(c.MCPServers) != tc.servers || !slices.Equal(refused, tc.refused) {
			t.Errorf("trust %d: mode %s, %d allow, %d servers, refused %v", tc.trust, c.Permissions.Mode, len(c.Permissions.Allow), len(c.MCPServers), refused)
		}
	}
}

func TestAWhatIfListsOnlyWhatItChanges(t *testing.T) {
	raw, err := Effective(Config{Permissions: permission.Config{Mode: trajectory.PermAcceptEdits, Allow: []string{"Read"}}})
	if err != nil {
		t.Fatal(err)
	}
	whatIf := filepath.Join(t.TempDir(), "what-if.yaml")
	if err := os.WriteFile(whatIf, []byte("permissions:\n  mode: accept_edits\n  deny: [\"Bash\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Resolve(Sources{Explicit: whatIf, Recorded: &Recorded{Name: "r", Data: raw, Trust: TrustOwn}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.WhatIf, []string{"permissions.deny[0]"}) {
		t.Fatalf("what-if %v, want only the deny rule (the mode it repeats is no change)", res.WhatIf)
	}
}
