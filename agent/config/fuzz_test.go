package config

import "testing"

// FuzzParse feeds arbitrary bytes to the configuration reader, checker and
// trust layering: a bad file is an error, never a panic, and what Restrict
// lets through from an untrusted file never adds an allow rule, a hook or
// an MCP server.
func FuzzParse(f *testing.F) {
	f.Add([]byte("permissions:\n  mode: plan\n  allow: [\"Bash(git status:*)\", \"Read(src/**)\"]\n"))
	f.Add([]byte("hooks:\n  - {name: a, event: PreToolUse, matcher: \"bash|write\", command: \"true\", timeout: 1s}\n"))
	f.Add([]byte("permissions: {deny: [\"Bash(rm:*)\"]}\n"))
	f.Add([]byte("hooks:\n  - &h {name: a, event: PreToolUse, command: x}\n  - <<: *h\n    name: b\n  - *h\n"))
	f.Add([]byte("limits: {max_turns: 9, prices: {input_per_mtok: 1}}\n"))
	f.Add([]byte("&a [*a]"))
	f.Add([]byte("replay:\n  normalize:\n    - {pattern: 'took [0-9]+ms', replace: 'took <ms>', tools: [bash], in: [tool_output]}\n  tools: {bash: exit_code}\n"))
	ws := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ParseFile(data, "fuzz.yaml")
		if err != nil {
			return
		}
		file.Config.Check("fuzz.yaml", ws)
		got, refused := Restrict(Config{}, file)
		if len(got.Permissions.Allow) != 0 || len(got.Hooks) != 0 || len(got.MCPServers) != 0 {
			t.Fatalf("Restrict let through %+v (refused %v)", got, refused)
		}
		if strictness(got.Permissions.Mode) < strictness("") {
			t.Fatalf("Restrict let through mode %q", got.Permissions.Mode)
		}
		for _, r := range refused {
			_ = r.String()
		}
	})
}
