package scaffold_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/scaffold"
	"github.com/retrace-dev/retrace/scenarios"
)

// TestFiles: the scaffold holds the two scenarios, the configuration and
// the CI job, and the scenarios load as retrace eval loads them.
func TestFiles(t *testing.T) {
	want := []string{".github/workflows/retrace.yml", "retrace.yaml", "scenarios/fix_bug.txtar", "scenarios/refused_delete.txtar"}
	if got := scaffold.Files(); !slices.Equal(got, want) {
		t.Fatalf("Files() = %v, want %v", got, want)
	}
	dir := t.TempDir()
	if _, err := scaffold.Write(dir, false); err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.Load(filepath.Join(dir, "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc) != 2 {
		t.Fatalf("loaded %d scenarios, want 2", len(sc))
	}
	ci, err := scaffold.Content(".github/workflows/retrace.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "retrace eval scenarios --junit") {
		t.Errorf("the CI job does not run retrace eval --junit on the scenarios:\n%s", ci)
	}
}

// TestConfigIsCommentedDefaults: retrace.yaml spells every top-level key
// of config.Config, each under a comment line, checks like any
// configuration, and changes nothing when layered as an untrusted
// workspace file over the defaults: no refusal, the same effective
// configuration.
func TestConfigIsCommentedDefaults(t *testing.T) {
	data, err := scaffold.Content("retrace.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	ct := reflect.TypeFor[config.Config]()
	for i := range ct.NumField() {
		keys = append(keys, strings.Split(ct.Field(i).Tag.Get("yaml"), ",")[0])
	}
	lines := strings.Split(string(data), "\n")
	for _, k := range keys {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, k+":") })
		if i < 0 {
			t.Errorf("retrace.yaml does not spell the key %s", k)
			continue
		}
		if i == 0 || !strings.HasPrefix(lines[i-1], "# ") {
			t.Errorf("retrace.yaml:%d: %s has no comment line above it", i+1, k)
		}
	}
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	for k := range top {
		if !slices.Contains(keys, k) {
			t.Errorf("retrace.yaml has the key %s, which config.Config does not", k)
		}
	}

	f, err := config.ParseFile(data, "retrace.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Config.Check("retrace.yaml", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	got, refused := config.Restrict(config.Config{}, f)
	if len(refused) > 0 {
		t.Errorf("as a workspace file, retrace.yaml asks for more than the defaults: %v", refused)
	}
	ge, err := config.Effective(got)
	if err != nil {
		t.Fatal(err)
	}
	de, err := config.Effective(config.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if string(ge) != string(de) {
		t.Errorf("retrace.yaml over the defaults is %s, want the defaults %s", ge, de)
	}
}

// TestWriteRefusesToOverwrite: an existing file stops Write before it
// writes anything, naming every such file; force overwrites them.
func TestWriteRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "retrace.yaml")
	if err := os.WriteFile(mine, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := scaffold.Write(dir, false)
	var ee *scaffold.ExistsError
	if !errors.As(err, &ee) || !errors.Is(err, scaffold.ErrExists) {
		t.Fatalf("Write over an existing file: %v, want an *ExistsError", err)
	}
	if !slices.Equal(ee.Paths, []string{mine}) {
		t.Errorf("ExistsError.Paths = %v, want [%s]", ee.Paths, mine)
	}
	if _, err := os.Stat(filepath.Join(dir, "scenarios")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Write wrote the scenarios anyway (stat: %v)", err)
	}
	if b, _ := os.ReadFile(mine); string(b) != "# mine\n" {
		t.Errorf("a refused Write changed %s: %q", mine, b)
	}

	wrote, err := scaffold.Write(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(wrote) != len(scaffold.Files()) {
		t.Errorf("Write with force wrote %v, want every file", wrote)
	}
	if b, _ := os.ReadFile(mine); string(b) == "# mine\n" {
		t.Errorf("Write with force left %s as it was", mine)
	}

	if err := os.RemoveAll(filepath.Join(dir, "scenarios")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "scenarios", "fix_bug.txtar"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := scaffold.Write(dir, true); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Write over a directory with force: %v, want an error naming the directory", err)
	}
}
