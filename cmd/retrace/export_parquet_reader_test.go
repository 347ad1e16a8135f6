package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/synth"
)

// lakeColumns are the columns compared row by row between the two readers:
// the envelope, where each event was read, and the tool-layer facts.
var lakeColumns = []string{"session", "seq", "ts", "turn", "type", "file", "line",
	"tool", "tool_use_id", "duration_ms", "duration_unknown", "failure_kind", "output_bytes", "is_error", "usage"}

// cell renders one Arrow value as text the way the DuckDB CSV output does.
func cell(col arrow.Array, i int) string {
	if col.IsNull(i) {
		return ""
	}
	switch c := col.(type) {
	case *array.String:
		return c.Value(i)
	case *array.Binary:
		return string(c.Value(i))
	case *array.Int64:
		return fmt.Sprint(c.Value(i))
	case *array.Int32:
		return fmt.Sprint(c.Value(i))
	case *array.Float64:
		return fmt.Sprint(c.Value(i))
	case *array.Boolean:
		return fmt.Sprint(c.Value(i))
	case *array.Timestamp:
		return c.Value(i).ToTime(arrow.Microsecond).UTC().Format("2006-01-02 15:04:05.000000")
	}
	// An extension type (JSON) holds its storage array.
	if e, ok := col.(array.ExtensionArray); ok {
		return cell(e.Storage(), i)
	}
	return col.ValueStr(i)
}

// TestAParquetExportReadsTheSameWithArrowGoAsWithDuckDB is the lake's
// second-reader test: the files retrace export --parquet writes are read by
// arrow-go's Parquet reader, independent of DuckDB, and hold the documented
// columns and the same rows DuckDB reads from them, in every date partition.
func TestAParquetExportReadsTheSameWithArrowGoAsWithDuckDB(t *testing.T) {
	corpus := t.TempDir()
	srep, err := synth.Write(context.Background(), corpus, synth.Options{Sessions: 60, Seed: 11, Days: 3})
	if err != nil {
		t.Fatal(err)
	}
	lake := filepath.Join(t.TempDir(), "lake")
	if code, _, stderr := runCLI(t, nil, "export", corpus, "--parquet", lake); code != ExitOK {
		t.Fatalf("export: exit %d, %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(lake, "date=*", "*.parquet"))
	if len(files) < 3 {
		t.Fatalf("%d Parquet files, want one per date partition of 3 days: %v", len(files), files)
	}

	// arrow-go's reading, partition by partition.
	want := map[string]bool{}
	for _, c := range metrics.Columns() {
		want[c.Name] = true
	}
	want["file"], want["line"] = true, true
	var fromArrow []string
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := pqarrow.ReadTable(context.Background(), r, nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		r.Close()
		if err != nil {
			t.Fatalf("arrow-go cannot read %s: %v", f, err)
		}
		sch := tbl.Schema()
		got := map[string]bool{}
		for _, fld := range sch.Fields() {
			got[fld.Name] = true
		}
		for n := range want {
			if !got[n] {
				t.Fatalf("%s has no column %q", f, n)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%s has %d columns, the documented schema %d", f, len(got), len(want))
		}
		date := strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "date=")
		tr := array.NewTableReader(tbl, 1024)
		for tr.Next() {
			rec := tr.RecordBatch()
			cols := make([]arrow.Array, len(lakeColumns))
			for i, n := range lakeColumns {
				cols[i] = rec.Column(sch.FieldIndices(n)[0])
			}
			for row := 0; row < int(rec.NumRows()); row++ {
				vals := []string{date}
				for _, c := range cols {
					vals = append(vals, cell(c, row))
				}
				fromArrow = append(fromArrow, strings.Join(vals, "|"))
			}
		}
		tr.Release()
		tbl.Release()
	}

	// DuckDB's reading of the same files, in place, with the partition column.
	q := "SELECT CAST(date AS VARCHAR) AS d, " + strings.Join(quoteCols(lakeColumns), ", ") +
		" FROM read_parquet('" + lake + "/date=*/*.parquet', hive_partitioning = true)"
	code, stdout, stderr := runCLI(t, nil, "query", q, corpus, "--format", "json")
	if code != ExitOK {
		t.Fatalf("query: exit %d, %s", code, stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil || len(rows) == 0 {
		t.Fatalf("query output %.300s: %v", stdout, err)
	}
	var fromDuck []string
	for _, r := range rows {
		vals := []string{duckCell(r["d"])}
		for _, c := range lakeColumns {
			vals = append(vals, duckCell(r[c]))
		}
		fromDuck = append(fromDuck, strings.Join(vals, "|"))
	}
	sort.Strings(fromArrow)
	sort.Strings(fromDuck)
	if len(fromArrow) != len(fromDuck) || int64(len(fromArrow)) != srep.Events {
		t.Fatalf("arrow-go reads %d rows, DuckDB %d; the corpus has %d events", len(fromArrow), len(fromDuck), srep.Events)
	}
	for i := range fromArrow {
		if fromArrow[i] != fromDuck[i] {
			t.Fatalf("row %d differs:\narrow-go %s\nDuckDB   %s", i, fromArrow[i], fromDuck[i])
		}
	}
}

func quoteCols(cols []string) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = `"` + c + `"`
		if c == "ts" {
			out[i] = `strftime(ts, '%Y-%m-%d %H:%M:%S.%f') AS ts`
		}
		if c == "usage" {
			out[i] = `CAST(usage AS VARCHAR) AS usage`
		}
	}
	return out
}

func duckCell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return fmt.Sprint(x)
	case bool:
		return fmt.Sprint(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestDocsParquetListsEveryColumnWithItsType keeps docs/parquet.md, the
// lake's documented interface, in step with the schema the export writes.
func TestDocsParquetListsEveryColumnWithItsType(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "parquet.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	cols := append(metrics.Columns(), metrics.Column{Name: "file", Type: "VARCHAR"}, metrics.Column{Name: "line", Type: "BIGINT"})
	for _, c := range cols {
		if row := "| `" + c.Name + "` | " + c.Type + " |"; !strings.Contains(doc, row) {
			t.Errorf("docs/parquet.md has no row %q", row)
		}
	}
	if n := strings.Count(doc, "\n| `"); n != len(cols) {
		t.Errorf("docs/parquet.md lists %d columns, the export writes %d", n, len(cols))
	}
}

func TestAParquetExportPartitionedByLabelHasTheSessionsTagInItsPathAndTheSameMetrics(t *testing.T) {
	corpus := t.TempDir()
	if _, err := synth.Write(context.Background(), corpus, synth.Options{Sessions: 30, Seed: 5, Days: 2}); err != nil {
		t.Fatal(err)
	}
	lake := filepath.Join(t.TempDir(), "lake")
	code, _, stderr := runCLI(t, nil, "export", corpus, "--parquet", lake, "--partition-label", "project")
	if code != ExitOK || !strings.Contains(stderr, "partitioned by label project and date") {
		t.Fatalf("export: exit %d, %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(lake, "label=*", "date=*", "*.parquet"))
	if len(files) < 2 {
		t.Fatalf("files %v: want label=*/date=* partitions", files)
	}
	// Each event sits under its session's project tag.
	q := "SELECT count(*) FROM read_parquet('" + lake + "/label=*/date=*/*.parquet', hive_partitioning = true) e" +
		" JOIN (SELECT session, json_extract_string(tags, '$.project') AS p FROM events WHERE type = 'session_start') s USING (session)" +
		" WHERE e.label IS DISTINCT FROM s.p"
	code, stdout, stderr := runCLI(t, nil, "query", q, corpus, "--format", "csv")
	if code != ExitOK || strings.TrimSpace(stdout) != "count_star()\n0" {
		t.Fatalf("events under another session's label: exit %d, %q %s", code, stdout, stderr)
	}
	_, fromJSONL, _ := runCLI(t, nil, "metrics", corpus, "--format", "json")
	code, fromLake, stderr := runCLI(t, nil, "metrics", lake, "--format", "json")
	if code != ExitOK || fromLake != fromJSONL {
		t.Fatalf("exit %d, %s; metrics over the labelled lake differ from over the trajectories", code, stderr)
	}
	for _, bad := range [][]string{
		{"export", corpus, "--parquet", filepath.Join(t.TempDir(), "x"), "--partition-label", "no key"},
		{"export", corpus, "--arrow", filepath.Join(t.TempDir(), "x"), "--partition-label", "project"},
	} {
		if code, _, _ := runCLI(t, nil, bad...); code != ExitInvalid {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}
