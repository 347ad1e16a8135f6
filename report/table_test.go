package report

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/retrace-dev/retrace/metrics"
)

// TestATerminalTableFitsACILog draws a table whose text is far wider than
// a CI log: every line fits MaxWidth, a cut cell ends with an ellipsis,
// numbers are never cut, and a table that fits is left as it is.
func TestATerminalTableFitsACILog(t *testing.T) {
	long := strings.Repeat("a very long message from a tool ", 10)
	wide := metrics.Table{Columns: []string{"detector", "where", "count", "message"}, Rows: [][]any{
		{"lost_call", "/home/ci/work/runs/" + strings.Repeat("x", 90) + ".jsonl:12", int64(123456789), long},
		{"denial_loop", "runs/b.jsonl:3", int64(7), "短い message with wide characters: 漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字"},
	}}
	var b strings.Builder
	if err := WriteTable(&b, "table", wide); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if w := twwidth.Width(line); w > MaxWidth {
			t.Errorf("a line %d columns wide:\n%s", w, line)
		}
	}
	if !strings.Contains(out, "…") || !strings.Contains(out, "123456789") || !strings.Contains(out, "│ lost_call ") {
		t.Errorf("want cut cells with an ellipsis, the number whole and the short cell whole:\n%s", out)
	}

	narrow := metrics.Table{Columns: []string{"detector", "message"}, Rows: [][]any{{"lost_call", "short"}}}
	b.Reset()
	if err := WriteTable(&b, "table", narrow); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "…") || !strings.Contains(b.String(), "│ short ") {
		t.Errorf("a table that fits was cut:\n%s", b.String())
	}
}

// TestWrapKeepsEveryLineWithinTheWidth checks the wrapping of a next
// step or a finding's message: words are kept whole and in order, no line
// is wider than asked but the one word longer than a line (a path), which
// stands whole on its own line.
func TestWrapKeepsEveryLineWithinTheWidth(t *testing.T) {
	path := "/tmp/" + strings.Repeat("z", 200) + ".jsonl:12"
	text := strings.Repeat("word ", 60) + path + " end"
	out := wrap("- ", text, 40, "  ")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines {
		if twwidth.Width(l) > 40 && l != "  "+path {
			t.Errorf("line %q is %d wide", l, twwidth.Width(l))
		}
	}
	if !strings.HasPrefix(lines[0], "- word word") || !strings.HasPrefix(lines[1], "  word") || lines[len(lines)-2] != "  "+path || lines[len(lines)-1] != "  end" {
		t.Errorf("wrapped:\n%s", out)
	}
	if got := strings.Count(out, "word"); got != 60 {
		t.Errorf("%d words after wrapping, want 60", got)
	}
}

// A DECIMAL (what DuckDB makes of 1.5, of a sum of DECIMALs, of a
// division of integers cast to DECIMAL) is a number in every format, its
// digits exact in JSON, as in the table and CSV; a UUID is its text.
func TestEveryFormatPrintsADecimalAsItsNumber(t *testing.T) {
	ctx := context.Background()
	db, err := metrics.Open(ctx, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tab, err := db.Query(ctx, "SELECT 1.5 AS x, CAST('12345678901234567.25' AS DECIMAL(20,2)) AS y, -0.05 AS z, CAST('00000000-0000-0000-0000-00000000002a' AS UUID) AS u")
	if err != nil {
		t.Fatal(err)
	}
	var js strings.Builder
	if err := WriteTable(&js, "json", tab); err != nil {
		t.Fatal(err)
	}
	var got []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js.String()), &got); err != nil || len(got) != 1 {
		t.Fatalf("%v: %s", err, js.String())
	}
	for col, want := range map[string]string{"x": "1.5", "y": "12345678901234567.25", "z": "-0.05", "u": `"00000000-0000-0000-0000-00000000002a"`} {
		if string(got[0][col]) != want {
			t.Errorf("json %s = %s, want %s", col, got[0][col], want)
		}
	}
	var csv strings.Builder
	if err := WriteTable(&csv, "csv", tab); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(csv.String(), "1.5,12345678901234567.25,-0.05,00000000-0000-0000-0000-00000000002a") {
		t.Errorf("csv:\n%s", csv.String())
	}
}
