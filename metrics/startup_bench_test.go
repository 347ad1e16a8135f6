package metrics

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkStartup measures the fixed cost every command pays before it
// reads a byte of a trajectory, beside DuckDB's own start-up measured in
// the same run (the baseline): opening the database with retrace's schema,
// running every named metric on an empty database, once on a fresh
// database as a command does and again on a database that ran them before
// (the statements prepared once), and retrace metrics' whole path over one
// session.
func BenchmarkStartup(b *testing.B) {
	ctx := context.Background()
	names := Metrics()
	session := filepath.Join(validDir, "basic.jsonl")

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
	b.Run("open_empty_statement_by_statement_before", func(b *testing.B) {
		// What Open did before: the same schema, each statement its own
		// transaction.
		for b.Loop() {
			db, err := sql.Open("duckdb", "")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, schemaSQL()+loadedFilesSQL+viewsSQL); err != nil {
				b.Fatal(err)
			}
			db.Close()
		}
		reportMs(b)
	})
	b.Run("open_empty", func(b *testing.B) {
		for b.Loop() {
			db, err := Open(ctx, Options{})
			if err != nil {
				b.Fatal(err)
			}
			db.Close()
		}
		reportMs(b)
	})
	b.Run("open_and_all_metrics_empty", func(b *testing.B) {
		for b.Loop() {
			db, err := Open(ctx, Options{})
			if err != nil {
				b.Fatal(err)
			}
			runAll(b, db, names)
			db.Close()
		}
		reportMs(b)
	})
	b.Run("all_metrics_again_same_db_unprepared_before", func(b *testing.B) {
		// What a second round of metrics on one database cost before
		// Metric kept its statements: every query planned again.
		db, err := Open(ctx, Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		qs := make([]string, len(names))
		for i, n := range names {
			if qs[i], err = MetricSQL(n); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			for _, q := range qs {
				if _, err := db.Query(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportMs(b)
	})
	b.Run("all_metrics_again_same_db", func(b *testing.B) {
		db, err := Open(ctx, Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		runAll(b, db, names) // the first run pays for preparing
		b.ResetTimer()
		for b.Loop() {
			runAll(b, db, names)
		}
		reportMs(b)
	})
	b.Run("open_load_all_metrics_one_session", func(b *testing.B) {
		for b.Loop() {
			db, err := Open(ctx, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := db.Load(ctx, session); err != nil {
				b.Fatal(err)
			}
			runAll(b, db, names)
			db.Close()
		}
		reportMs(b)
	})
}

func runAll(b *testing.B, db *DB, names []string) {
	b.Helper()
	for _, n := range names {
		if _, err := db.Metric(context.Background(), n); err != nil {
			b.Fatal(err)
		}
	}
}

// reportMs reports the mean wall time of one iteration in milliseconds.
func reportMs(b *testing.B) {
	b.Helper()
	if b.N > 0 {
		b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(time.Millisecond), "ms/op")
	}
}
