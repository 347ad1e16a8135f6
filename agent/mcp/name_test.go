package mcp

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

func TestToolName(t *testing.T) {
	tests := []struct {
		name, server, tool, want string
	}{
		{"a valid pair is joined with the mcp prefix", "github", "create_issue", "mcp__github__create_issue"},
		{"characters outside the API's set become underscores in the tool part", "db", "query.run v2", "mcp__db__query_run_v2"},
		{"a server name is collapsed and trimmed so the separator stays unambiguous", "  my  server! ", "x", "mcp__my_server__x"},
		{"a server name with a double underscore is collapsed", "a__b", "c", "mcp__a_b__c"},
		{"a tool name starting with underscores keeps them", "a", "__c", "mcp__a____c"},
		{"hyphens are kept", "web-search", "fetch-page", "mcp__web-search__fetch-page"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ToolName(tc.server, tc.tool); got != tc.want {
				t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
			}
		})
	}
}

func TestLongNamesAreCutWithAHashAndStayDistinct(t *testing.T) {
	a := ToolName("server", strings.Repeat("x", 80)+"a")
	b := ToolName("server", strings.Repeat("x", 80)+"b")
	if a == b {
		t.Fatalf("two long names met at %s", a)
	}
	for _, n := range []string{a, b} {
		if !trajectory.IsToolName(n) || len(n) != maxNameLen {
			t.Errorf("%s (%d characters) is not a valid 64-character tool name", n, len(n))
		}
	}
}

func TestToolNamesDoNotDependOnListingOrder(t *testing.T) {
	tests := []struct {
		name string
		raw  []string
	}{
		{"a dotted name that meets a valid one gets the hash", []string{"read.file", "read_file"}},
		{"two altered names that meet both get hashes", []string{"read.file", "read file"}},
		{"names that do not meet are left alone", []string{"a", "b.c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fwd := toolNames("s", tc.raw)
			rev := slices.Clone(tc.raw)
			slices.Reverse(rev)
			back := toolNames("s", rev)
			slices.Reverse(back)
			if !slices.Equal(fwd, back) {
				t.Errorf("names depend on order: %v vs %v", fwd, back)
			}
			seen := map[string]bool{}
			for i, n := range fwd {
				if seen[n] {
					t.Errorf("two tools named %s in %v", n, fwd)
				}
				seen[n] = true
				if !trajectory.IsToolName(n) {
					t.Errorf("%s is not a valid tool name", n)
				}
				if normalizeTool(tc.raw[i]) == tc.raw[i] && n != ToolName("s", tc.raw[i]) {
					t.Errorf("valid name %s was changed to %s", tc.raw[i], n)
				}
			}
		})
	}
}

func FuzzToolName(f *testing.F) {
	f.Add("github", "create_issue", "git hub", "create.issue")
	f.Add("a__b", "c", "a", "b__c")
	f.Add("a_", "_b", "a", "__b")
	f.Add(strings.Repeat("s", 70), "t", strings.Repeat("s", 70), "u")
	f.Fuzz(func(t *testing.T, s1, t1, s2, t2 string) {
		n1, n2 := ToolName(s1, t1), ToolName(s2, t2)
		for _, n := range []string{n1, n2} {
			if t1 != "" && t2 != "" && !trajectory.IsToolName(n) {
				t.Fatalf("%q is not a valid tool name", n)
			}
		}
		if t1 == "" || t2 == "" || normalizeServer(s1) == "" || normalizeServer(s2) == "" {
			return
		}
		// Distinct servers never meet, whatever their tools are called.
		if normalizeServer(s1) != normalizeServer(s2) && n1 == n2 {
			t.Fatalf("(%q, %q) and (%q, %q) both map to %s", s1, t1, s2, t2, n1)
		}
		// Within one server, toolNames keeps names apart.
		if s1 == s2 && t1 != t2 {
			ns := toolNames(s1, []string{t1, t2})
			if ns[0] == ns[1] {
				t.Fatalf("tools %q and %q of one server both map to %s", t1, t2, ns[0])
			}
		}
	})
}

func TestValidate(t *testing.T) {
	stdio := Config{Name: "fs", Command: "server-fs"}
	tests := []struct {
		name      string
		cfgs      []Config
		wantField string // "" means valid
		wantText  string
	}{
		{"a stdio server with a name and a command is valid", []Config{stdio}, "", ""},
		{"an HTTP server with headers is valid", []Config{{Name: "web", URL: "https://example.com/mcp", Headers: map[string]string{"A": "b"}}}, "", ""},
		{"a missing name is reported", []Config{{Command: "x"}}, "name", "is missing"},
		{"a name with no letter or digit is reported", []Config{{Name: "!!", Command: "x"}}, "name", "no letter or digit"},
		{"two names that normalise alike are reported with both indexes", []Config{stdio, {Name: "f s", Command: "y"}, {Name: "f_s", Command: "z"}}, "name", "mcp_servers[1]"},
		{"neither command nor url is reported", []Config{{Name: "x"}}, "command", "both missing"},
		{"both command and url are reported", []Config{{Name: "x", Command: "c", URL: "http://h"}}, "command", "both set"},
		{"a url that is not http is reported", []Config{{Name: "x", URL: "ftp://h/mcp"}}, "url", "not an http or https URL"},
		{"headers on a stdio server are reported", []Config{{Name: "x", Command: "c", Headers: map[string]string{"a": "b"}}}, "headers", "only apply to an HTTP server"},
		{"args on an HTTP server are reported", []Config{{Name: "x", URL: "http://h", Args: []string{"a"}}}, "args", "only apply to a stdio server"},
		{"a negative timeout is reported", []Config{{Name: "x", Command: "c", Timeout: -time.Second}}, "timeout", "positive duration"},
		{"a negative reconnect_backoff is reported", []Config{{Name: "x", Command: "c", ReconnectBackoff: -time.Second}}, "reconnect_backoff", "positive duration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.cfgs)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate = %v, want a *ConfigError", err)
			}
			if ce.Field != tc.wantField || !strings.Contains(err.Error(), tc.wantText) || !strings.Contains(err.Error(), "mcp_servers[") {
				t.Errorf("Validate = %v (field %s), want field %s and text %q", err, ce.Field, tc.wantField, tc.wantText)
			}
		})
	}
}

func TestConnectRejectsABadConfigBeforeStartingAnything(t *testing.T) {
	s, err := Connect(t.Context(), []Config{{Name: "x"}}, Options{})
	var ce *ConfigError
	if s != nil || !errors.As(err, &ce) {
		t.Errorf("Connect = %v, %v; want nil and a *ConfigError", s, err)
	}
}

func TestDefaults(t *testing.T) {
	no := false
	if c := (Config{}); c.callTimeout() != 120*time.Second || !c.deferred() {
		t.Errorf("defaults: timeout %v deferred %v, want 2m0s and true", c.callTimeout(), c.deferred())
	}
	if c := (Config{Timeout: time.Second, Deferred: &no}); c.callTimeout() != time.Second || c.deferred() {
		t.Errorf("set values are not kept: timeout %v deferred %v", c.callTimeout(), c.deferred())
	}
}

func TestInputSchema(t *testing.T) {
	tests := []struct {
		name    string
		in      any
		want    string
		wantErr bool
	}{
		{"a missing schema becomes an empty object schema", nil, `{"type":"object"}`, false},
		{"an object schema is kept", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}, `{"properties":{"a":{"type":"string"}},"type":"object"}`, false},
		{"a schema without a type is made an object schema", map[string]any{"properties": map[string]any{}}, `{"properties":{},"type":"object"}`, false},
		{"a string schema is refused", map[string]any{"type": "string"}, "", true},
		{"a schema that is not an object is refused", []any{1}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := inputSchema(tc.in)
			if (err != nil) != tc.wantErr || (!tc.wantErr && string(got) != tc.want) {
				t.Errorf("inputSchema = %s, %v; want %s (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestCapDescription(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantCut bool
	}{
		{"a short description is kept", "Reads a file.", false},
		{"a description of exactly the limit is kept", strings.Repeat("a", MaxDescription), false},
		{"a long description is cut and says so", strings.Repeat("a", MaxDescription+1), true},
		{"a long description in Chinese is cut by characters, not bytes", strings.Repeat("文", MaxDescription+10), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := capDescription(tc.in)
			if n := len([]rune(got)); n > MaxDescription {
				t.Errorf("%d characters, over %d", n, MaxDescription)
			}
			if cut := got != tc.in; cut != tc.wantCut || (cut && !strings.HasSuffix(got, "truncated]")) {
				t.Errorf("cut = %v (%q…), want %v with a marker", cut, got[max(0, len(got)-30):], tc.wantCut)
			}
		})
	}
}
