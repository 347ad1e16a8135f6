package main

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/scenarios"
	"github.com/retrace-dev/retrace/trajectory"
)

// TestFailureModesDoc keeps docs/failure-modes.md from drifting: every
// detector of the catalog, every defense and every built-in scenario that
// must fire is named there, and every scenario and defense it names
// exists.
func TestFailureModesDoc(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "failure-modes.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	named := func(id string) bool { return strings.Contains(doc, "`"+id+"`") }

	for _, d := range detectors.Catalog() {
		id := d.Info().ID
		if !named(id) {
			t.Errorf("docs/failure-modes.md does not name the detector %s", id)
		}
		if !strings.Contains(doc, "**Detector** `"+id+"`") {
			t.Errorf("docs/failure-modes.md has no section for the detector %s (a line starting **Detector** `%s`)", id, id)
		}
	}
	defenses := append(agent.DefaultDefenses(), trajectory.DefenseLoopDetection)
	for _, d := range defenses {
		if !strings.Contains(doc, "| `"+string(d)+"` |") {
			t.Errorf("docs/failure-modes.md's defense table has no row for %s", d)
		}
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(doc, -1) {
		if !trajectory.DefenseName(m[1]).Valid() {
			t.Errorf("docs/failure-modes.md's defense table names %s, which is no defense", m[1])
		}
	}

	suite, err := scenarios.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range suite {
		names = append(names, strings.TrimSuffix(path.Base(s.File), ".txtar"))
	}
	fires := 0
	for _, n := range names {
		if strings.HasSuffix(n, "_fires") {
			fires++
			if !named(n) {
				t.Errorf("docs/failure-modes.md does not name the scenario %s", n)
			}
		}
	}
	if fires < 10 {
		t.Fatalf("found %d scenarios that must fire in the built-in suite; the suite did not load as expected", fires)
	}
	for _, m := range regexp.MustCompile("`([a-z_]+_(?:fires|quiet|error))`").FindAllStringSubmatch(doc, -1) {
		if !slices.Contains(names, m[1]) {
			t.Errorf("docs/failure-modes.md names the scenario %s, which is not in the built-in suite", m[1])
		}
	}
}
