package dialect

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/tools"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the current output")

// goldenDialects are the dialects with golden files, by file suffix.
var goldenDialects = []struct {
	suffix  string
	rewrite func([]byte) ([]byte, error)
}{
	{"anthropic", func(b []byte) ([]byte, error) { return Anthropic(b) }},
	{"openai_strict", func(b []byte) ([]byte, error) { return OpenAIStrict(b) }},
}

// TestGoldenBuiltins compares every built-in tool's rewritten schema with
// its golden file byte for byte. A built-in without a golden file fails,
// so a new tool cannot be forgotten; run with -update to write the files.
func TestGoldenBuiltins(t *testing.T) {
	for _, tool := range tools.Builtins() {
		spec := tool.Spec()
		for _, d := range goldenDialects {
			t.Run(spec.Name+"/"+d.suffix, func(t *testing.T) {
				got, err := d.rewrite(spec.Schema)
				if err != nil {
					t.Fatalf("rewriting the %s schema: %v", spec.Name, err)
				}
				got = append(got, '\n')
				path := filepath.Join("testdata", spec.Name+"."+d.suffix+".json")
				if *update {
					if err := os.MkdirAll("testdata", 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("built-in tool %s has no golden file %s (run go test -update to create it): %v",
						spec.Name, path, err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from the output (run go test -update if the change is intended)\n got: %s\nwant: %s",
						path, got, want)
				}
			})
		}
	}
}

// TestNoStaleGoldenFiles fails when testdata holds a golden file for a tool
// that is no longer built in, so renamed tools leave nothing behind.
func TestNoStaleGoldenFiles(t *testing.T) {
	var names []string
	for _, tool := range tools.Builtins() {
		names = append(names, tool.Spec().Name)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 && !*update {
		t.Fatal("testdata has no golden files; run go test -update")
	}
	for _, f := range files {
		name, _, _ := strings.Cut(filepath.Base(f), ".")
		if !slices.Contains(names, name) {
			t.Errorf("golden file %s belongs to no built-in tool; delete it", f)
		}
	}
}

// TestOutputIsStable rewrites each built-in schema twice and expects the
// same bytes, since the provider's prompt cache keys on them.
func TestOutputIsStable(t *testing.T) {
	for _, tool := range tools.Builtins() {
		s := tool.Spec().Schema
		for _, f := range []func([]byte) ([]byte, error){
			func(b []byte) ([]byte, error) { return Anthropic(b) },
			func(b []byte) ([]byte, error) { return OpenAI(b) },
			func(b []byte) ([]byte, error) { return OpenAIStrict(b) },
		} {
			a, err1 := f(s)
			b, err2 := f(s)
			if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
				t.Errorf("%s: two rewrites differ or fail: %v %v\n%s\n%s", tool.Spec().Name, err1, err2, a, b)
			}
		}
	}
}
