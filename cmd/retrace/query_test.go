package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestQuery(t *testing.T) {
	valid := fixtures + "/valid"
	malformed := fixtures + "/invalid/malformed_json.jsonl"
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   ExitCode
		wantOut    string
		wantStderr string
	}{
		{"Counting tool_calls over a directory of runs gives the 13 fixture calls.",
			[]string{"query", "select count(*) AS n from tool_calls", valid, "--format", "csv"}, ExitOK, "n\n13\n", "torn_last_line.jsonl:11: warning"},
		{"The default table is drawn with borders and right-aligned numbers.",
			[]string{"query", "select 'x' AS tool, 13 AS n", valid}, ExitOK, "┌──────┬────┐\n│ tool │ n  │\n├──────┼────┤\n│ x    │ 13 │\n└──────┴────┘\n", ""},
		{"CSV output quotes nothing it need not and keeps the header.",
			[]string{"query", "select tool, count(*) AS n from tool_calls group by tool order by tool", valid, "--format", "csv"},
			ExitOK, "tool,n\nbash,5\nread,7\nwrite,1\n", ""},
		{"Markdown output is a pipe table.",
			[]string{"query", "select 1 AS a", valid, "--format", "markdown"}, ExitOK, "| a |\n| --- |\n| 1 |\n", ""},
		{"Bad SQL exits 2 with DuckDB's message and the position.",
			[]string{"query", "select count(* from tool_calls", valid}, ExitInvalid, "", "LINE 1:"},
		{"A malformed line exits 2 naming file:line.",
			[]string{"query", "select 1", malformed}, ExitInvalid, "", malformed + ":5:"},
		{"With --lenient the malformed line is skipped and counted.",
			[]string{"query", "select count(*) AS n from events", malformed, "--lenient", "--format", "csv"}, ExitOK, "n\n10\n", "skipped 1 malformed line"},
		{"A query without SQL is a usage error.",
			[]string{"query"}, ExitInvalid, "", "needs the SQL"},
		{"An unknown format is a usage error.",
			[]string{"query", "select 1", valid, "--format", "xml"}, ExitInvalid, "", "--format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, tc.args...)
			if code != tc.wantCode || (tc.wantOut != "" && stdout != tc.wantOut) || !strings.Contains(stderr, tc.wantStderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr containing %q",
					code, stdout, stderr, tc.wantCode, tc.wantOut, tc.wantStderr)
			}
		})
	}
}

func TestQueryKeepsADatabaseWithDB(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.duckdb")
	if code, _, stderr := runCLI(t, nil, "query", "select 1", fixtures+"/valid/basic.jsonl", "--db", db); code != ExitOK {
		t.Fatalf("load exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, nil, "query", "select count(*) AS n from sessions", "--db", db, "--format", "json")
	var got []map[string]any
	if code != ExitOK || json.Unmarshal([]byte(stdout), &got) != nil || len(got) != 1 || got[0]["n"] != float64(1) {
		t.Fatalf("exit %d, stdout %q, stderr %q; want one kept session", code, stdout, stderr)
	}
}
