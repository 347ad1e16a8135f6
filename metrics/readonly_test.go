package metrics

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

func TestAWithSelectKeepsTheDerivedTablesAndAWriteDropsThem(t *testing.T) {
	ctx := context.Background()
	db := open(t, Options{}, filepath.Join(validDir, "basic.jsonl"))
	if _, err := db.Query(ctx, "SELECT count(*) FROM tool_calls"); err != nil {
		t.Fatal(err)
	}
	if !db.materialized.Load() {
		t.Fatal("a query naming tool_calls did not make the derived tables")
	}
	for _, q := range []string{
		"WITH c AS (SELECT * FROM tool_calls) SELECT count(*) FROM c",
		"-- a comment first\nWITH c AS (SELECT * FROM sessions) SELECT count(*) FROM c;",
	} {
		if _, err := db.Query(ctx, q); err != nil {
			t.Fatal(err)
		}
		if !db.materialized.Load() {
			t.Fatalf("%q, which only reads, made the derived views plain again", q)
		}
	}
	// Two SELECTs are refused, as only the last one's rows would be
	// returned, and change nothing.
	if _, err := db.Query(ctx, "SELECT 1; SELECT 2"); !errors.Is(err, ErrManyResults) {
		t.Fatalf("two SELECTs: %v, want ErrManyResults", err)
	}
	if !db.materialized.Load() {
		t.Fatal("two SELECTs, refused, made the derived views plain again")
	}
	for _, q := range []string{
		"WITH c AS (SELECT * FROM raw_tool_call LIMIT 1) INSERT INTO raw_tool_call SELECT * FROM c",
		"SELECT 1; DELETE FROM raw_tool_call WHERE false",
	} {
		if _, err := db.Query(ctx, "SELECT count(*) FROM tool_calls"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Query(ctx, q); err != nil {
			t.Fatal(err)
		}
		if db.materialized.Load() {
			t.Fatalf("%q may write, and left the derived tables as they were", q)
		}
	}
	if got := rows(t, db, "SELECT count(*) FROM tool_calls")[0]; got != rows(t, db, "SELECT count(*) FROM raw_tool_call")[0] {
		t.Fatalf("tool_calls has %s rows after a write, not the raw table's", got)
	}
}
