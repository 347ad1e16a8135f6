package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// built is the retrace binary that go build made for this test process;
// the tests that need a real process (bash's process substitution, another
// user, SIGKILL) share it, so the cgo link is paid once.
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
	out  []byte
}

// TestMain also makes this test binary the retrace command of the
// testscript suite (script_test.go): run under the name "retrace" it is
// the CLI itself.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "retrace" {
		os.Exit(Main())
	}
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildRetrace puts a retrace binary built from this package into dir and
// returns its path. The build runs once per test process.
func buildRetrace(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain to build retrace with")
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "retrace-test-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "retrace")
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		built.out, built.err = exec.CommandContext(ctx, "go", "build", "-o", built.bin, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	data, err := os.ReadFile(built.bin)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "retrace")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
