package replay

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/trajectory"
)

func TestReportRenderers(t *testing.T) {
	deny := Compare(load(t, "basic.jsonl"), denyByRule(load(t, "basic.jsonl"), "toolu_01", "Bash(rm:*)"), Options{})
	same := Compare(load(t, "basic.jsonl"), revolatile(load(t, "basic.jsonl")), Options{})
	tests := []struct {
		name   string
		report Report
		render func(Report, *bytes.Buffer) error
		want   []string
	}{
		{"markdown names the class counts, the what-if line and the divergence", deny,
			func(r Report, b *bytes.Buffer) error { return r.Markdown(b) },
			[]string{"| permission_changed | 1 |", "- turn 1, toolu_01: allowed → denied by rule Bash(rm:*)", "| 1 | `toolu_01` | permission_changed |"}},
		{"markdown of an identical replay says so", same,
			func(r Report, b *bytes.Buffer) error { return r.Markdown(b) },
			[]string{"identical to the recording"}},
		{"the table has a header, one row per divergence and the what-if line", deny,
			func(r Report, b *bytes.Buffer) error { return r.Table(b) },
			[]string{"TURN", "permission_changed", "what-if: turn 1, toolu_01: allowed → denied by rule Bash(rm:*)"}},
		{"the table of an identical replay is one line", same,
			func(r Report, b *bytes.Buffer) error { return r.Table(b) },
			[]string{"identical:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.render(tc.report, &b); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestMarkdownKeepsPipesAndNewlinesInsideTheCell(t *testing.T) {
	rec := edit(load(t, "basic.jsonl"), func(p *trajectory.ToolResult) { p.Text = "a | b\nc" })
	var b bytes.Buffer
	if err := Compare(load(t, "basic.jsonl"), rec, Options{}).Markdown(&b); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "| 1 |") {
			rows++
		}
		if strings.HasPrefix(line, "| 1 |") && strings.Count(line, "|")-strings.Count(line, `\|`) != 8 {
			t.Errorf("row has the wrong number of cells: %s", line)
		}
	}
	if rows != 1 {
		t.Fatalf("want one divergence row, got %d:\n%s", rows, b.String())
	}
}

func TestDivergenceJSONFieldNamesAreStable(t *testing.T) {
	b, err := json.Marshal(Divergence{Turn: 5, ToolUseID: "toolu_07", Class: ClassPermission, Field: "decision", Recorded: "a", Replayed: "b", Detail: "d"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"turn":5,"tool_use_id":"toolu_07","class":"permission_changed","field":"decision","recorded":"a","replayed":"b","detail":"d"}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
}

func TestLongValuesAreTruncated(t *testing.T) {
	long := strings.Repeat("x", 5000)
	rep := edit(load(t, "basic.jsonl"), func(p *trajectory.ToolResult) { p.Text = long })
	d, ok := Compare(load(t, "basic.jsonl"), rep, Options{MaxValueRunes: 40}).First()
	if !ok {
		t.Fatal("want a divergence")
	}
	if n := utf8.RuneCountInString(d.Replayed); n != 41 || !strings.HasSuffix(d.Replayed, "…") {
		t.Fatalf("replayed value has %d runes: %q", n, d.Replayed)
	}
}
