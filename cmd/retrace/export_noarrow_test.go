//go:build !duckdb_arrow

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestExportArrowWithoutTheBuildTagSaysHowToBuildIt(t *testing.T) {
	code, _, stderr := runCLI(t, nil, "export", fixtures+"/valid", "--arrow", filepath.Join(t.TempDir(), "x.arrow"))
	if code != ExitInvalid || !strings.Contains(stderr, "-tags duckdb_arrow") {
		t.Fatalf("exit %d, stderr %q; want 2 and how to build with Arrow", code, stderr)
	}
}
