//go:build duckdb_arrow

package metrics

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

func TestWriteArrowWritesAnIPCStreamOfTheQuery(t *testing.T) {
	db := open(t, Options{}, validDir)
	var buf bytes.Buffer
	n, err := db.WriteArrow(context.Background(), &buf, "select session, seq, type, usage, duration_ms from events order by session, seq")
	if err != nil {
		t.Fatal(err)
	}
	want := rows(t, db, "select count(*) from events")[0]
	r, err := ipc.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if got := r.Schema().Field(0).Name; got != "session" || r.Schema().NumFields() != 5 {
		t.Fatalf("schema %v, want the query's five columns", r.Schema())
	}
	var read int64
	var firstSeq int64 = -1
	for r.Next() {
		rec := r.RecordBatch()
		if firstSeq < 0 && rec.NumRows() > 0 {
			firstSeq = rec.Column(1).(*array.Int64).Value(0)
		}
		read += rec.NumRows()
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if want != fmt.Sprint(read) || n != read || firstSeq != 1 {
		t.Fatalf("read %d rows (WriteArrow said %d, first seq %d), want %s starting at seq 1", read, n, firstSeq, want)
	}
}

func TestWriteArrowReportsBadSQL(t *testing.T) {
	db := open(t, Options{}, filepath.Join(validDir, "basic.jsonl"))
	if _, err := db.WriteArrow(context.Background(), &bytes.Buffer{}, "select nope from events"); err == nil {
		t.Fatal("bad SQL was accepted")
	}
}

// After an export of a statement that writes, the derived views show the
// change, as after a Query.
func TestWriteArrowOfAWriteRefreshesTheDerivedViews(t *testing.T) {
	db := open(t, Options{}, filepath.Join(validDir, "parallel_batch.jsonl"), filepath.Join(validDir, "defenses.jsonl"))
	before := rows(t, db, "SELECT count(*) FROM tool_calls")[0]
	if _, err := db.WriteArrow(context.Background(), &bytes.Buffer{}, "DELETE FROM raw_tool_call WHERE tool_use_id = (SELECT min(tool_use_id) FROM raw_tool_call)"); err != nil {
		t.Fatal(err)
	}
	sameAsDerivedSelect(t, db)
	if after := rows(t, db, "SELECT count(*) FROM tool_calls")[0]; after == before {
		t.Errorf("tool_calls holds %s rows after deleting a call, as before", after)
	}
}
