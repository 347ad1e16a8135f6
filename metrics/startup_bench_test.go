package metrics

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkStartup measures the fixed cost every command pays before it
// reads a byte of a trajectory, beside DuckDB's own start-up and beside
// the way Open and Metric worked before (raw_events spelled out by
// position, every metric planned on every call), all in the same run:
// opening the database with retrace's schema; every named metric on an
// empty database, on a fresh database as a command asks them and again on
// a database that answered them before; and retrace metrics' whole path
// over one session.
func BenchmarkStartup(b *testing.B) {
	ctx := context.Background()
	session := filepath.Join(validDir, "basic.jsonl")
	type opener func(b *testing.B) *DB
	forms := []struct {
		name string
		open opener
	}{{"before", openBefore}, {"after", openNow}}

	b.Run("duckdb_select1_baseline", func(b *testing.B) {
		for b.Loop() {
			db, err := sql.Open("duckdb", "")
			if err != nil {
				b.Fatal(err)
			}
			var one int
			if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
				b.Fatalf("select 1 = %d, %v", one, err)
			}
			db.Close()
		}
		reportMs(b)
	})
	for _, f := range forms {
		b.Run("open_empty/"+f.name, func(b *testing.B) {
			for b.Loop() {
				f.open(b).Close()
			}
			reportMs(b)
		})
	}
	for _, f := range forms {
		b.Run("open_and_all_metrics_empty/"+f.name, func(b *testing.B) {
			for b.Loop() {
				db := f.open(b)
				runAll(b, db, f.name)
				db.Close()
			}
			reportMs(b)
		})
	}
	for _, f := range forms {
		b.Run("all_metrics_again_same_db/"+f.name, func(b *testing.B) {
			db := f.open(b)
			defer db.Close()
			runAll(b, db, f.name) // the first round pays for preparing
			b.ResetTimer()
			for b.Loop() {
				runAll(b, db, f.name)
			}
			reportMs(b)
		})
	}
	b.Run("open_load_one_session", func(b *testing.B) {
		// Less open_empty/after, what loading one session costs.
		for b.Loop() {
			db := openNow(b)
			if _, err := db.Load(ctx, session); err != nil {
				b.Fatal(err)
			}
			db.Close()
		}
		reportMs(b)
	})
	for _, f := range forms {
		b.Run("open_load_all_metrics_one_session/"+f.name, func(b *testing.B) {
			for b.Loop() {
				db := f.open(b)
				if _, err := db.Load(ctx, session); err != nil {
					b.Fatal(err)
				}
				runAll(b, db, f.name)
				db.Close()
			}
			reportMs(b)
		})
	}
}

// openNow is Open.
func openNow(b *testing.B) *DB {
	db, err := Open(context.Background(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// openBefore opens a database the way Open did before raw_events was
// unioned by name.
func openBefore(b *testing.B) *DB {
	s := schemaSQL()
	tables := s[:strings.Index(s, "CREATE OR REPLACE VIEW raw_events")]
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.ExecContext(context.Background(), tables+unionByPosition()+plainDerivedSQL()+viewsSQL); err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return &DB{sql: db}
}

// runAll asks db for every named metric: through Metric after, as plain
// queries (planned every time) before.
func runAll(b *testing.B, db *DB, form string) {
	b.Helper()
	ctx := context.Background()
	for _, n := range Metrics() {
		var err error
		if form == "before" {
			_, err = db.Query(ctx, mustSQL(b, n))
		} else {
			_, err = db.Metric(ctx, n)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// reportMs reports the mean wall time of one iteration in milliseconds.
func reportMs(b *testing.B) {
	b.Helper()
	if b.N > 0 {
		b.ReportMetric(float64(b.Elapsed())/float64(b.N)/1e6, "ms/op")
	}
}
