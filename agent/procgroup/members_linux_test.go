package procgroup

import "testing"

func TestStatFieldsAreReadAfterTheCommandName(t *testing.T) {
	cases := []struct {
		name, stat, state, group string
	}{
		{"a plain command name", "1234 (bash) S 1 1230 1230 0 -1", "S", "1230"},
		{"a command name with spaces and parentheses", "77 (a) b (c) R 5 99 99 0", "R", "99"},
		{"a zombie", "80 (sleep) Z 1 99 8 0", "Z", "99"},
		{"a truncated line", "77 (sh) S", "", ""},
		{"a line without a command name", "garbage", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state, group := statFields([]byte(c.stat))
			if state != c.state || group != c.group {
				t.Errorf("statFields(%q) = %q, %q, want %q, %q", c.stat, state, group, c.state, c.group)
			}
		})
	}
}
