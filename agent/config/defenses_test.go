package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/trajectory"
)

func TestDefensesAreTurnedOnAndOffOverTheirBase(t *testing.T) {
	loop, spin, repeat := trajectory.DefenseLoopDetection, trajectory.DefenseLowYieldSpin, trajectory.DefenseRepeatedReadOnly
	cases := []struct {
		name string
		d    Defenses
		base []trajectory.DefenseName
		want []trajectory.DefenseName
	}{
		{"nothing set keeps the runtime's defaults", Defenses{}, nil, agent.DefaultDefenses()},
		{"nothing set keeps a recorded set as it is", Defenses{}, []trajectory.DefenseName{repeat, loop}, []trajectory.DefenseName{repeat, loop}},
		{"an enabled defense is added after the base", Defenses{Enable: []trajectory.DefenseName{loop}}, []trajectory.DefenseName{repeat}, []trajectory.DefenseName{repeat, loop}},
		{"a disabled defense is removed", Defenses{Disable: []trajectory.DefenseName{spin}}, []trajectory.DefenseName{repeat, spin}, []trajectory.DefenseName{repeat}},
		{"a defense both enabled and disabled stays on", Defenses{Enable: []trajectory.DefenseName{spin}, Disable: []trajectory.DefenseName{spin}},
			[]trajectory.DefenseName{spin}, []trajectory.DefenseName{spin}},
		{"disabling every defense leaves an empty set, not the defaults", Defenses{Disable: []trajectory.DefenseName{repeat}},
			[]trajectory.DefenseName{repeat}, []trajectory.DefenseName{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.d.Apply(c.base)
			if got == nil || !slices.Equal(got, c.want) {
				t.Fatalf("Apply = %v, want %v", got, c.want)
			}
		})
	}
}

func TestAWorkspaceMayTurnDefensesOnButNotOff(t *testing.T) {
	f, err := ParseFile([]byte("defenses:\n  enable: [loop_detection]\n  disable: [low_yield_spin]\n"), "retrace.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, refused := Restrict(Config{}, f)
	if !slices.Equal(out.Defenses.Enable, []trajectory.DefenseName{trajectory.DefenseLoopDetection}) || len(out.Defenses.Disable) != 0 {
		t.Fatalf("restricted defenses %+v", out.Defenses)
	}
	if len(refused) != 1 || refused[0].Field != "defenses.disable[0]" || refused[0].Line != 3 {
		t.Fatalf("refused %+v, want defenses.disable[0] at line 3", refused)
	}
	trusted := Overlay(Config{}, f.Config)
	if got := trusted.Defenses.Apply(nil); slices.Contains(got, trajectory.DefenseLowYieldSpin) || !slices.Contains(got, trajectory.DefenseLoopDetection) {
		t.Fatalf("a trusted file's defenses are not applied: %v", got)
	}
}

func TestAMisspeltDefenseIsAnErrorNamingTheFileAndField(t *testing.T) {
	cfg, err := Parse([]byte("defenses:\n  enable: [loop_detecton]\n"), "my.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = cfg.Check("my.yaml", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "my.yaml") || !strings.Contains(err.Error(), "defenses.enable[0]") || !strings.Contains(err.Error(), "loop_detecton") {
		t.Fatalf("err = %v", err)
	}
}
