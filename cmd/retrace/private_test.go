package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/recorder"
)

// wantPrivateTree checks that every directory under root (root included)
// is 0700 and every file 0600, and that there is at least one file.
func wantPrivateTree(t *testing.T, root string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			wantPrivate(t, p, 0o700)
		} else {
			files++
			wantPrivate(t, p, 0o600)
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("%s: %d files, %v", root, files, err)
	}
}

// Every file retrace exports holds what models and tools wrote, so it is
// private to the user whatever the umask: a file that was there with a
// wider mode is narrowed too.
func TestExportsAndReportsAreCreatedPrivate(t *testing.T) {
	dir := t.TempDir()

	parquet := filepath.Join(dir, "new", "parquet")
	if code, _, stderr := runCLI(t, nil, "export", fixtures+"/valid", "--parquet", parquet); code != ExitOK {
		t.Fatalf("export --parquet: exit %d, %s", code, stderr)
	}
	wantPrivateTree(t, parquet)

	otlpFile := filepath.Join(dir, "traces.jsonl")
	if err := os.WriteFile(otlpFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, nil, "export", fixtures+"/valid", "--otlp-file", otlpFile); code != ExitOK {
		t.Fatalf("export --otlp-file: exit %d, %s", code, stderr)
	}
	wantPrivate(t, otlpFile, 0o600)

	html := filepath.Join(dir, "report.html")
	if code, _, stderr := runCLI(t, nil, "report", fixtures+"/valid", "-o", html); code != ExitOK {
		t.Fatalf("report: exit %d, %s", code, stderr)
	}
	wantPrivate(t, html, 0o600)

	// mock serve --record makes its directory before the first request.
	record := filepath.Join(dir, "record", "runs")
	if _, err := newLazyRecorder(record, recorder.Options{}); err != nil {
		t.Fatal(err)
	}
	wantPrivate(t, record, 0o700)
}
