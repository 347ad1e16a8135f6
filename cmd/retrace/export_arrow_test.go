//go:build duckdb_arrow

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
)

func TestExportArrowWritesTheQueryAsAnIPCStream(t *testing.T) {
	out := filepath.Join(t.TempDir(), "calls.arrow")
	code, _, stderr := runCLI(t, nil, "export", fixtures+"/valid", "--arrow", out, "--query", "select tool, duration_ms from tool_calls")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	rows := int64(0)
	for r.Next() {
		rows += r.RecordBatch().NumRows()
	}
	if r.Err() != nil || rows != 13 || r.Schema().Field(0).Name != "tool" {
		t.Fatalf("read %d rows with schema %v (err %v); want the 13 fixture tool calls", rows, r.Schema(), r.Err())
	}
}

func TestExportArrowWithBadSQLLeavesNoFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bad.arrow")
	code, _, stderr := runCLI(t, nil, "export", fixtures+"/valid", "--arrow", out, "--query", "select nope")
	if _, err := os.Stat(out); code != ExitInvalid || err == nil {
		t.Fatalf("exit %d, stderr %q, file left: %v; want 2 and no file", code, stderr, err == nil)
	}
}

func TestExportArrowIsCreatedPrivate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "calls.arrow")
	if err := os.WriteFile(out, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, nil, "export", fixtures+"/valid", "--arrow", out, "--query", "select tool from tool_calls"); code != ExitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	wantPrivate(t, out, 0o600)
}
