package config

import "testing"

// FuzzParse feeds arbitrary bytes to the configuration reader and checker:
// a bad file is an error, never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte("permissions:\n  mode: plan\n  allow: [\"Bash(git status:*)\", \"Read(src/**)\"]\n"))
	f.Add([]byte("hooks:\n  - {name: a, event: PreToolUse, matcher: \"bash|write\", command: \"true\", timeout: 1s}\n"))
	f.Add([]byte("permissions: {deny: [\"Bash(rm:*\"]}\n"))
	f.Add([]byte("&a [*a]"))
	ws := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz.yaml")
		if err != nil {
			return
		}
		cfg.Check("fuzz.yaml", ws)
	})
}
