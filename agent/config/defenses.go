package config

import (
	"fmt"
	"slices"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/trajectory"
)

// Defenses turn the runtime's in-loop defenses on or off, relative to a
// base set: agent.DefaultDefenses() for a new session, the recorded set for
// a replay.
//
//	defenses:
//	  enable: [loop_detection]
//	  disable: [low_yield_spin]
type Defenses struct {
	// Enable lists defenses to turn on.
	Enable []trajectory.DefenseName `yaml:"enable"`
	// Disable lists defenses to turn off. A defense both enabled and
	// disabled (by two layered files, say) stays on: the stricter wins.
	Disable []trajectory.DefenseName `yaml:"disable"`
}

// Set reports whether the configuration changes the base set at all.
func (d Defenses) Set() bool { return len(d.Enable) > 0 || len(d.Disable) > 0 }

// Apply returns base with d applied: the disabled defenses removed, then
// the enabled ones appended in the order given. A nil base means
// agent.DefaultDefenses(). The result is never nil, so that passing it to
// agent.Config.Defenses means exactly this set.
func (d Defenses) Apply(base []trajectory.DefenseName) []trajectory.DefenseName {
	if base == nil {
		base = agent.DefaultDefenses()
	}
	out := make([]trajectory.DefenseName, 0, len(base)+len(d.Enable))
	for _, n := range base {
		if !slices.Contains(d.Disable, n) || slices.Contains(d.Enable, n) {
			out = append(out, n)
		}
	}
	for _, n := range d.Enable {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// check reports every unknown defense name, so that a misspelt
// "loop_detecton" is an error rather than a defense silently off.
func (d Defenses) check() error {
	for _, list := range []struct {
		key   string
		names []trajectory.DefenseName
	}{{"enable", d.Enable}, {"disable", d.Disable}} {
		for i, n := range list.names {
			if !n.Valid() {
				return fmt.Errorf("defenses.%s[%d]: unknown defense %q; see the defense names in retrace's trajectory documentation (e.g. loop_detection, repeated_readonly)", list.key, i, n)
			}
		}
	}
	return nil
}
