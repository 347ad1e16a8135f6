package scenarios

import (
	"fmt"
	"go/ast"
	goparser "go/parser"
	gotoken "go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/trajectory"
)

// defenseNames returns every DefenseName constant trajectory declares,
// read from its source: the package keeps its closed set unexported, and
// a list copied here would not grow when a defense is added, which is
// the case this test exists for.
func defenseNames(t *testing.T) []trajectory.DefenseName {
	t.Helper()
	fset := gotoken.NewFileSet()
	f, err := goparser.ParseFile(fset, filepath.Join("..", "trajectory", "enums.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []trajectory.DefenseName
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != gotoken.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "DefenseName" {
				continue
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok {
					t.Fatalf("%s: a DefenseName constant that is not a string literal", fset.Position(v.Pos()))
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				d := trajectory.DefenseName(s)
				if !d.Valid() {
					t.Fatalf("%s: %q is declared but not in the closed set", fset.Position(v.Pos()), s)
				}
				out = append(out, d)
			}
		}
	}
	if len(out) < 8 {
		t.Fatalf("found %d DefenseName constants in trajectory/enums.go, want at least 8; did the declaration change shape?", len(out))
	}
	return out
}

// proof says which built-in scenarios show a defense or detector acting
// (fires) and not acting where its condition nearly holds (quiet).
type proof struct{ fires, quiet []string }

// proofs collects, from the built-in suite's expectations, the scenarios
// that must see each defense trigger or not, and each detector fire or
// not. Only explicit expectations count: no_others and a count of zero
// defense_trigger events prove nothing about one detector or defense.
// A quiet defense counts only where the scenario's config leaves it on.
func proofs(t *testing.T) (map[trajectory.DefenseName]*proof, map[string]*proof) {
	t.Helper()
	suite, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	defs := map[trajectory.DefenseName]*proof{}
	dets := map[string]*proof{}
	get := func(m map[string]*proof, k string) *proof {
		if m[k] == nil {
			m[k] = &proof{}
		}
		return m[k]
	}
	for _, s := range suite {
		// A defense proven quiet must have been on: one the scenario's
		// config turns off stays quiet whatever happens. An exhibit's
		// recording may be edited by hand, so it proves nothing of the
		// runtime's defenses.
		enabled := s.Config.Defenses.Apply(agent.DefaultDefenses())
		for _, e := range s.Expect.Events {
			if s.Exhibit() || e.Kind != KindDefense && e.Kind != KindNoDefense {
				continue
			}
			d := trajectory.DefenseName(e.Value)
			if defs[d] == nil {
				defs[d] = &proof{}
			}
			switch {
			case e.Kind == KindDefense && e.Count.Min != nil && *e.Count.Min >= 1:
				defs[d].fires = append(defs[d].fires, s.Name)
			case e.Kind == KindNoDefense && slices.Contains(enabled, d):
				defs[d].quiet = append(defs[d].quiet, s.Name)
			}
		}
		if d := s.Expect.Detectors; d != nil {
			for id := range d.Fire {
				get(dets, id).fires = append(get(dets, id).fires, s.Name)
			}
			for _, id := range d.NotFire {
				get(dets, id).quiet = append(get(dets, id).quiet, s.Name)
			}
		}
	}
	return defs, dets
}

// unproven lists, one a line, the defenses and detector ids that lack a
// firing or a quiet scenario in defs and dets.
func unproven(defs map[trajectory.DefenseName]*proof, dets map[string]*proof, defenses []trajectory.DefenseName, ids []string) []string {
	var out []string
	for _, d := range defenses {
		p := defs[d]
		if p == nil || len(p.fires) == 0 {
			out = append(out, fmt.Sprintf("defense %s: no built-in scenario expects it to trigger; add scenarios/suite/defense_%s_fires.txtar with {defense: %s}", d, d, d))
		}
		if p == nil || len(p.quiet) == 0 {
			out = append(out, fmt.Sprintf("defense %s: no built-in scenario expects it not to trigger; add scenarios/suite/defense_%s_quiet.txtar with {defense_not_triggered: %s}", d, d, d))
		}
	}
	for _, id := range ids {
		p := dets[id]
		if p == nil || len(p.fires) == 0 {
			out = append(out, fmt.Sprintf("detector %s: no built-in scenario expects it to fire; add scenarios/suite/detector_%s_fires.txtar (an exhibit when the runtime cannot produce the fault)", id, id))
		}
		if p == nil || len(p.quiet) == 0 {
			out = append(out, fmt.Sprintf("detector %s: no built-in scenario expects it not to fire; add scenarios/suite/detector_%s_quiet.txtar with not_fire: [%s]", id, id, id))
		}
	}
	return out
}

// catalogIDs returns the ids of every detector of the catalog.
func catalogIDs() []string {
	var ids []string
	for _, d := range detectors.Catalog() {
		ids = append(ids, d.Info().ID)
	}
	return ids
}

// TestEveryDefenseAndDetectorHasAFiringAndAQuietScenario fails when a
// defense of the contract or a detector of the catalog has no built-in
// scenario that must see it act and none that must see it stay quiet: a
// dead defense, or a detector nothing proves, cannot be merged. That the
// scenarios pass is TestTheBuiltinSuitePasses's part.
func TestEveryDefenseAndDetectorHasAFiringAndAQuietScenario(t *testing.T) {
	defs, dets := proofs(t)
	for _, msg := range unproven(defs, dets, defenseNames(t), catalogIDs()) {
		t.Error(msg)
	}
}

// TestANewDefenseOrDetectorWithoutScenariosIsUnproven checks that the
// coverage check can fail: a defense no scenario names, as one just added
// would be, is reported twice (no firing, no quiet scenario), a detector
// only shown firing once, and a defense shown both ways not at all.
func TestANewDefenseOrDetectorWithoutScenariosIsUnproven(t *testing.T) {
	defs := map[trajectory.DefenseName]*proof{"proven": {fires: []string{"a"}, quiet: []string{"b"}}}
	dets := map[string]*proof{"half": {fires: []string{"c"}}}
	got := unproven(defs, dets, []trajectory.DefenseName{"proven", "new_defense"}, []string{"half"})
	want := []string{"defense new_defense: no built-in scenario expects it to trigger", "defense new_defense: no built-in scenario expects it not to trigger",
		"detector half: no built-in scenario expects it not to fire"}
	if len(got) != len(want) {
		t.Fatalf("unproven reports %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d is %q, want it to start %q", i, got[i], want[i])
		}
	}
}
