package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExportParquetGivesTheSameMetricsAsTheTrajectories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "warehouse")
	code, stdout, stderr := runCLI(t, nil, "export", fixtures+"/valid", "--parquet", dir, "--format", "json")
	var sum exportSummary
	if code != ExitOK || json.Unmarshal([]byte(stdout), &sum) != nil || sum.Parquet == nil || sum.Parquet.Events == 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q; want a JSON summary of the export", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "partitioned by date") || !strings.HasPrefix(sum.Parquet.Files[0], "date=2026-11-30") {
		t.Fatalf("stderr %q, files %v; want date partitions", stderr, sum.Parquet.Files)
	}
	_, fromJSONL, _ := runCLI(t, nil, "metrics", fixtures+"/valid", "--format", "json")
	code, fromParquet, stderr := runCLI(t, nil, "metrics", dir, "--format", "json")
	if code != ExitOK || fromParquet != fromJSONL || !strings.Contains(fromParquet, `"funnel"`) {
		t.Fatalf("exit %d, stderr %q; metrics over Parquet\n%s\ndiffer from over JSONL\n%s", code, stderr, fromParquet, fromJSONL)
	}
}

func TestExportRefusesBadUsage(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "old.parquet"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"Export without a destination says which flags there are.",
			[]string{"export", fixtures + "/valid"}, "--parquet DIR, --arrow FILE"},
		{"Export into a directory with files in it is refused, pointing at --overwrite.",
			[]string{"export", fixtures + "/valid", "--parquet", full}, "--overwrite"},
		{"Export into a path that is a file is bad usage, not a failure of retrace.",
			[]string{"export", fixtures + "/valid", "--parquet", filepath.Join(full, "old.parquet")}, "--parquet " + filepath.Join(full, "old.parquet") + " is a file"},
		{"A malformed line stops the export naming file:line.",
			[]string{"export", fixtures + "/invalid/malformed_json.jsonl", "--parquet", filepath.Join(t.TempDir(), "x")}, "malformed_json.jsonl:5:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, nil, tc.args...)
			if code != ExitInvalid || !strings.Contains(stderr, tc.wantStderr) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.wantStderr)
			}
		})
	}
}
