package metrics

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestZZExperiment(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	ctx := context.Background()
	db := open(t, Options{})
	tmp := t.TempDir()
	start := time.Now()
	_, chunks, _, err := db.checkAll(ctx, []string{"/tmp/one/all.jsonl"}, tmp)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("check %v, %d chunks", time.Since(start), len(chunks))
	big := "/tmp/one/all.jsonl"
	run := func(name, q string) {
		start := time.Now()
		if _, err := db.sql.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
		t.Logf("%-40s %v", name, time.Since(start))
	}
	run("CTAS all columns, one file", "CREATE OR REPLACE TABLE d AS SELECT * FROM read_json("+quoteString(big)+", format = 'newline_delimited', filename = true, columns = "+columnsSQL(Columns())+")")
	run("INSERT raw_events all columns, one file", "INSERT INTO raw_events SELECT * FROM read_json("+quoteString(big)+", format = 'newline_delimited', filename = true, columns = "+columnsSQL(Columns())+")")
	run("delete", "DELETE FROM raw_events")
	var total time.Duration
	for _, c := range chunks {
		s := time.Now()
		cols := columnsSQL(append(typeColumns(c.typ), Column{Name: "file", Type: "VARCHAR"}))
		if _, err := db.sql.ExecContext(ctx, "INSERT INTO raw_events BY NAME SELECT * FROM read_json("+quoteString(c.path)+", format = 'newline_delimited', columns = "+cols+")"); err != nil {
			t.Fatal(err)
		}
		d := time.Since(s)
		total += d
		t.Logf("  %-20s %8d bytes %v", c.typ, c.size, d)
	}
	t.Logf("per type BY NAME total %v", total)
	run("delete", "DELETE FROM raw_events")
	total = 0
	for _, c := range chunks {
		s := time.Now()
		cols := columnsSQL(append(typeColumns(c.typ), Column{Name: "file", Type: "VARCHAR"}))
		if _, err := db.sql.ExecContext(ctx, "CREATE OR REPLACE TABLE x AS SELECT * FROM read_json("+quoteString(c.path)+", format = 'newline_delimited', columns = "+cols+")"); err != nil {
			t.Fatal(err)
		}
		total += time.Since(s)
	}
	t.Logf("per type CTAS total %v", total)
	run("delete", "DELETE FROM raw_events")
	total = 0
	for _, c := range chunks {
		s := time.Now()
		own := map[string]bool{}
		for _, c := range typeColumns(c.typ) {
			own[c.Name] = true
		}
		var sel []string
		for _, col := range append(Columns(), Column{Name: "file", Type: "VARCHAR"}) {
			if own[col.Name] || col.Name == "file" {
				sel = append(sel, quoteIdent(col.Name))
			} else {
				sel = append(sel, "NULL::"+col.Type)
			}
		}
		cols := columnsSQL(append(typeColumns(c.typ), Column{Name: "file", Type: "VARCHAR"}))
		if _, err := db.sql.ExecContext(ctx, "INSERT INTO raw_events SELECT "+strings.Join(sel, ", ")+" FROM read_json("+quoteString(c.path)+", format = 'newline_delimited', columns = "+cols+")"); err != nil {
			t.Fatal(err)
		}
		d := time.Since(s)
		total += d
		t.Logf("  %-20s %8d bytes %v", c.typ, c.size, d)
	}
	t.Logf("per type explicit total %v", total)
}
