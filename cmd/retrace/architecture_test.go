package main

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is the module path; packages below are named relative to it.
const module = "github.com/retrace-dev/retrace"

// analysisPackages read trajectories and results and never the runtime.
var analysisPackages = []string{"metrics", "detectors", "condition", "stats", "compare", "diff", "report"}

// scenarioRunners are the packages below cmd that may import scenarios:
// those that run scenarios. None does; a package that needs a scenario's
// outcome reads package results (docs/architecture.md, "Who may import
// whom").
var scenarioRunners = []string{}

// projectImports returns every package of the module (path relative to
// the module, e.g. "agent/config") with the module packages it imports,
// test files left out, as go/build reads them from the tree at root.
func projectImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(p, "go.mod")); p != root && err == nil {
			return filepath.SkipDir // a module of its own, such as otlp/collectortest
		}
		bp, err := build.Default.ImportDir(p, 0)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(bp.GoFiles)+len(bp.CgoFiles) == 0 {
			return nil // tests only: not a package anything imports
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		var imports []string
		for _, imp := range bp.Imports {
			if r, ok := strings.CutPrefix(imp, module+"/"); ok {
				imports = append(imports, r)
			}
		}
		pkgs[filepath.ToSlash(rel)] = imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pkgs["trajectory"]; !ok || len(pkgs) < 10 {
		t.Fatalf("found only %v below %s: not the module's root", keys(pkgs), root)
	}
	return pkgs
}

func keys(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// runtimePackage reports whether p is part of the agent runtime.
func runtimePackage(p string) bool {
	return p == "agent" || strings.HasPrefix(p, "agent/") || p == "harness"
}

// reach returns the packages p depends on, directly or not, never
// walking into skip.
func reach(pkgs map[string][]string, p, skip string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(q string) {
		for _, d := range pkgs[q] {
			if d == skip || seen[d] {
				continue
			}
			seen[d] = true
			walk(d)
		}
	}
	walk(p)
	var out []string
	for d := range seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// TestArchitecture holds the import rules docs/architecture.md states:
// nothing imports cmd, analysis packages never reach the runtime, directly
// or not, only what runs scenarios imports scenarios, and the page's
// package table names every package with exactly the project imports it
// has.
func TestArchitecture(t *testing.T) {
	pkgs := projectImports(t, filepath.Join("..", ".."))

	for _, p := range keys(pkgs) {
		for _, d := range pkgs[p] {
			if d == "cmd" || strings.HasPrefix(d, "cmd/") {
				t.Errorf("%s imports %s: nothing may import cmd", p, d)
			}
		}
	}

	for _, a := range analysisPackages {
		if _, ok := pkgs[a]; !ok {
			t.Errorf("analysis package %s does not exist; update analysisPackages and docs/architecture.md", a)
			continue
		}
		for _, d := range pkgs[a] {
			if runtimePackage(d) {
				t.Errorf("analysis package %s imports the runtime package %s", a, d)
			}
		}
		if deps := reach(pkgs, a, ""); slices.ContainsFunc(deps, runtimePackage) {
			t.Errorf("analysis package %s depends on the runtime: %v", a, slices.DeleteFunc(deps, func(d string) bool { return !runtimePackage(d) }))
		}
	}

	for _, p := range keys(pkgs) {
		if p == "cmd" || strings.HasPrefix(p, "cmd/") || slices.Contains(scenarioRunners, p) {
			continue
		}
		if slices.Contains(pkgs[p], "scenarios") {
			t.Errorf("%s imports scenarios, which runs the agent runtime: read package results instead, or add it to scenarioRunners if it runs scenarios", p)
		}
	}

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z/]+)` \\| [^|]+ \\| ([^|]+) \\|$")
	table := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		table[m[1]] = strings.TrimSpace(m[2])
	}
	for _, p := range keys(pkgs) {
		cell, ok := table[p]
		if !ok {
			t.Errorf("docs/architecture.md: the package table has no row for %s (imports %v)", p, pkgs[p])
			continue
		}
		if cell == "anything" {
			continue
		}
		var want []string
		if cell != "—" {
			want = strings.Split(cell, ", ")
		}
		got := slices.Clone(pkgs[p])
		slices.Sort(got)
		// "agent/…" stands for every agent subpackage.
		if slices.Contains(want, "agent/…") {
			want = slices.DeleteFunc(want, func(s string) bool { return s == "agent/…" })
			got = slices.DeleteFunc(got, func(s string) bool { return strings.HasPrefix(s, "agent/") })
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("docs/architecture.md: %s imports %q, the table says %q", p, strings.Join(got, ", "), strings.Join(want, ", "))
		}
	}
	for p := range table {
		if _, ok := pkgs[p]; !ok {
			t.Errorf("docs/architecture.md names the package %s, which does not exist", p)
		}
	}
}
