package compare

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/trajectory"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./compare -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test ./compare -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// changedOutput is basic.jsonl replayed with the README's third line
// changed: its tool output differs, and so does the next request, which
// carries that output to the model.
func changedOutput(t *testing.T) Result {
	rep := revolatile(load(t, "basic.jsonl"))
	rep = edit(rep, func(p *trajectory.ToolResult) {
		p.Text = strings.Replace(p.Text, "go install ./cmd/demo", "make install", 1)
	})
	for _, ev := range rep {
		if p, ok := ev.Payload.(*trajectory.ModelRequest); ok && ev.Turn == 2 {
			for i := range p.NewMessages {
				for j := range p.NewMessages[i].Content {
					b := &p.NewMessages[i].Content[j]
					if b.Type == trajectory.BlockToolResult {
						b.Content = strings.Replace(b.Content, "go install ./cmd/demo", "make install", 1)
						p.MessageHashes[len(p.MessageHashes)-len(p.NewMessages)+i] = trajectory.Hash([]byte("changed"))
					}
				}
			}
		}
	}
	return Sessions(load(t, "basic.jsonl"), rep, Options{})
}

func TestReportGoldenFiles(t *testing.T) {
	deny := Sessions(load(t, "basic.jsonl"), denyByRule(load(t, "basic.jsonl"), "toolu_01", "Bash(rm:*)"), Options{})
	dated := func(s string) func(p *trajectory.ToolResult) {
		return func(p *trajectory.ToolResult) { p.Text = s }
	}
	same := Sessions(edit(load(t, "basic.jsonl"), dated("built 2026-11-30T09:00:01Z in 0.41s\n")),
		edit(revolatile(load(t, "basic.jsonl")), dated("built 2026-12-01T20:05:21Z in 1.07s\n")), Options{})
	same.Notes = []string{"not captured: big.bin (too large); the recorded session had it, the replay does not"}
	changed := changedOutput(t)
	render := map[string]func(Result, *bytes.Buffer) error{
		"table":            func(r Result, b *bytes.Buffer) error { return r.Table(b) },
		"details":          func(r Result, b *bytes.Buffer) error { return r.Details(b) },
		"markdown":         func(r Result, b *bytes.Buffer) error { return r.Markdown(b) },
		"markdown_details": func(r Result, b *bytes.Buffer) error { return r.MarkdownDetails(b) },
		"json": func(r Result, b *bytes.Buffer) error {
			enc := json.NewEncoder(b)
			enc.SetIndent("", "  ")
			return enc.Encode(r)
		},
	}
	for _, tc := range []struct {
		name   string
		result Result
	}{
		{"permission", deny},
		{"identical", same},
		{"tool_output", changed},
	} {
		for format, fn := range render {
			t.Run("the "+format+" rendering of the "+tc.name+" report matches its golden file", func(t *testing.T) {
				var b bytes.Buffer
				if err := fn(tc.result, &b); err != nil {
					t.Fatal(err)
				}
				golden(t, tc.name+"."+format+".golden", b.String())
			})
		}
	}
}

func TestOneChangedCallIsOneRowPerCallOrTurn(t *testing.T) {
	r := changedOutput(t)
	rows := r.Rows()
	if len(rows) != 2 {
		t.Fatalf("want a row for the call and one for the next turn's request, got %+v", rows)
	}
	if rows[0].ToolUseID != "toolu_01" || rows[0].Tool != "read" || rows[0].Classes[0] != ClassToolOutput {
		t.Errorf("the first row is not the changed call: %+v", rows[0])
	}
	if !strings.Contains(rows[0].What, `line 3`) || !strings.Contains(rows[0].What, `make install`) {
		t.Errorf("the row does not say what changed: %q", rows[0].What)
	}
	if rows[1].Turn != 2 || rows[1].Classes[0] != ClassRequestPrefix {
		t.Errorf("the second row is not the next request: %+v", rows[1])
	}
	for _, row := range rows {
		if n := utf8.RuneCountInString(row.What); n > maxWhatRunes+1 {
			t.Errorf("a row's description has %d runes: %q", n, row.What)
		}
	}
	if d := r.Divergences[0]; !strings.Contains(d.Diff, "-     3\tInstall with: go install ./cmd/demo") || !strings.Contains(d.Diff, "+     3\tInstall with: make install") {
		t.Errorf("the diff does not show the changed line:\n%s", d.Diff)
	}
}

func TestMarkdownKeepsPipesAndNewlinesInsideTheCell(t *testing.T) {
	rec := edit(load(t, "basic.jsonl"), func(p *trajectory.ToolResult) { p.Text = "a | b\nc" })
	var b bytes.Buffer
	if err := Sessions(load(t, "basic.jsonl"), rec, Options{}).Markdown(&b); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(line, "| 1 |") {
			continue
		}
		rows++
		if cells := strings.Count(line, "|") - strings.Count(line, `\|`); cells != 6 {
			t.Errorf("row has %d separators, want 6: %s", cells, line)
		}
	}
	if rows != 1 {
		t.Fatalf("want one row for the call, got %d:\n%s", rows, b.String())
	}
}

func TestDivergenceJSONFieldNamesAreStable(t *testing.T) {
	b, err := json.Marshal(Divergence{Turn: 5, ToolUseID: "toolu_07", Tool: "bash", Class: ClassPermission, Field: "decision",
		Recorded: "a", Replayed: "b", Detail: "d", Summary: "allowed → denied", Diff: "-a\n+b\n"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"turn":5,"tool_use_id":"toolu_07","tool":"bash","class":"permission_changed","field":"decision","recorded":"a","replayed":"b","detail":"d","summary":"allowed → denied","diff":"-a\n+b\n"}`
	if string(b) != want {
		t.Fatalf("got %s\nwant %s", b, want)
	}
}

func TestLongValuesAreCutWithAMarker(t *testing.T) {
	long := strings.Repeat("x", 5000)
	rep := edit(load(t, "basic.jsonl"), func(p *trajectory.ToolResult) { p.Text = long })
	r := Sessions(load(t, "basic.jsonl"), rep, Options{MaxValueRunes: 40})
	d, ok := r.First()
	if !ok {
		t.Fatal("want a divergence")
	}
	if n := utf8.RuneCountInString(d.Replayed); n != 41 || !strings.HasSuffix(d.Replayed, "…") {
		t.Fatalf("replayed value has %d runes: %q", n, d.Replayed)
	}
	var b bytes.Buffer
	if err := r.Table(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > 200 {
			t.Errorf("a table line has %d runes: %q", n, line)
		}
	}
}

func TestALongDiffIsCutWithAMarker(t *testing.T) {
	var a, b strings.Builder
	for i := range 500 {
		a.WriteString("line a\n")
		if i%2 == 0 {
			b.WriteString("line b\n")
		} else {
			b.WriteString("line a\n")
		}
	}
	d := unifiedDiff(a.String(), b.String())
	if n := strings.Count(d, "\n"); n != maxDiffLines+1 || !strings.Contains(d, "more diff lines") {
		t.Fatalf("a long diff has %d lines:\n%s", n, d)
	}
}

func TestHowTheSessionEndedIsARowOfItsOwn(t *testing.T) {
	rep := revolatile(load(t, "basic.jsonl"))
	for _, ev := range rep {
		if p, ok := ev.Payload.(*trajectory.ModelResponse); ok && ev.Turn == 2 {
			p.Content[0].Text = "Something else entirely."
		}
	}
	rep = edit(rep, func(p *trajectory.SessionEnd) { p.Reason = trajectory.EndMaxTurns })
	rows := Sessions(load(t, "basic.jsonl"), rep, Options{}).Rows()
	if len(rows) != 2 || rows[0].Classes[0] != ClassResponse || rows[1].Classes[0] != ClassEnd || len(rows[1].Classes) != 1 {
		t.Fatalf("want the turn's reply and the end in two rows, got %+v", rows)
	}
	if rows[1].What != "reason: end_turn → max_turns" {
		t.Errorf("the end row says %q", rows[1].What)
	}
}
