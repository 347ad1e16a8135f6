package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadRecordsEachScenarioPathWithinItsSuite loads a suite by its
// absolute directory and one file alone: each scenario's suite path is
// relative to the directory it was found under (the file's own name for
// a file given alone), never the machine's path.
func TestLoadRecordsEachScenarioPathWithinItsSuite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "suite")
	for file, name := range map[string]string{"top.txtar": "top", "sub/deep/nested.txtar": "nested"} {
		p := filepath.Join(dir, filepath.FromSlash(file))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(minimal, "name: minimal", "name: "+name, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	suite, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range suite {
		got[s.Name] = s.SuitePath
	}
	if got["top"] != "top.txtar" || got["nested"] != "sub/deep/nested.txtar" {
		t.Errorf("suite paths %v, want top.txtar and sub/deep/nested.txtar", got)
	}
	alone, err := Load(filepath.Join(dir, "sub", "deep", "nested.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if alone[0].SuitePath != "nested.txtar" {
		t.Errorf("a file given alone: suite path %q, want nested.txtar", alone[0].SuitePath)
	}
	builtin, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if p := builtin[0].SuitePath; strings.Contains(p, "/") || !strings.HasSuffix(p, ".txtar") {
		t.Errorf("a built-in scenario's suite path %q, want NAME.txtar", p)
	}
}
