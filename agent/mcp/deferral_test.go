package mcp

import (
	"slices"
	"testing"
)

// Only a mix of resident and deferred servers is changed: then every
// server is deferred, with one notice per server whose choice changed.
func TestDeferralsOnlyChangeAMix(t *testing.T) {
	no, yes := false, true
	for _, c := range []struct {
		name    string
		cfgs    []Config
		want    []bool
		notices int
	}{
		{"all default", []Config{{Name: "a"}, {Name: "b"}}, []bool{true, true}, 0},
		{"all resident", []Config{{Name: "a", Deferred: &no}, {Name: "b", Deferred: &no}}, []bool{false, false}, 0},
		{"one server resident", []Config{{Name: "a", Deferred: &no}}, []bool{false}, 0},
		{"mix", []Config{{Name: "a", Deferred: &no}, {Name: "b", Deferred: &yes}, {Name: "c"}}, []bool{true, true, true}, 1},
	} {
		got, notices := deferrals(c.cfgs)
		if !slices.Equal(got, c.want) || len(notices) != c.notices {
			t.Errorf("%s: deferred %v with %d notices; want %v with %d", c.name, got, len(notices), c.want, c.notices)
		}
	}
}
