package metrics

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A metric's statement is prepared on its first call; asked again after a
// Load, it must answer for the rows loaded since, exactly as the same SQL
// run afresh does, or a report or an eval that asks twice would be stale.
func TestAMetricPreparedBeforeALoadAnswersForTheLoad(t *testing.T) {
	ctx := context.Background()
	db := open(t, Options{})
	for _, n := range Metrics() {
		if _, err := db.Metric(ctx, n); err != nil {
			t.Fatalf("%s on an empty database: %v", n, err)
		}
	}
	if _, err := db.Load(ctx, filepath.Join(validDir, "basic.jsonl"), filepath.Join(validDir, "parallel_batch.jsonl")); err != nil {
		t.Fatal(err)
	}
	for _, n := range Metrics() {
		got := preparedRows(t, db, n)
		want := rows(t, db, mustSQL(t, n))
		if !slices.Equal(got, want) {
			t.Errorf("%s after a load: prepared gives\n%v\nafresh gives\n%v", n, got, want)
		}
	}
	if got := preparedRows(t, db, "sessions"); len(got) < 2 {
		t.Errorf("sessions after loading two sessions = %v, want at least two rows", got)
	}
}

// A database closed with prepared statements open closes cleanly, and a
// metric asked of it afterwards fails instead of answering.
func TestClosingADatabaseClosesItsPreparedMetrics(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Metric(ctx, "sessions"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := db.Metric(ctx, "sessions"); err == nil {
		t.Fatal("a metric on a closed database answered")
	}
}

// preparedRows renders db.Metric(name) the way rows renders a query.
func preparedRows(t *testing.T, db *DB, name string) []string {
	t.Helper()
	tb, err := db.Metric(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return renderRows(tb)
}

// A statement that writes, run through Query, drops the prepared metrics
// too: a row inserted by hand shows in the next Metric.
func TestAWriteThroughQueryIsSeenByAPreparedMetric(t *testing.T) {
	ctx := context.Background()
	db := open(t, Options{}, filepath.Join(validDir, "basic.jsonl"))
	before := preparedRows(t, db, "sessions")
	if _, err := db.Query(ctx, "INSERT INTO raw_session_start SELECT * REPLACE ('other' AS session) FROM raw_session_start"); err != nil {
		t.Fatal(err)
	}
	after := preparedRows(t, db, "sessions")
	if want := rows(t, db, mustSQL(t, "sessions")); !slices.Equal(after, want) {
		t.Fatalf("sessions after an insert: prepared gives %v, afresh %v", after, want)
	}
	if slices.Equal(before, after) {
		t.Fatalf("sessions unchanged by inserting a session: %v", after)
	}
}

func TestReadOnlyKnowsOnlyPlainReads(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT 1":                        true,
		"  -- a comment\nselect * from t": true,
		"FROM events;":                    true,
		"DESCRIBE events":                 true,
		"SELECT 1; DROP TABLE t":          false,
		"WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x": false,
		"INSERT INTO t VALUES (1)":                           false,
		"PRAGMA disable_optimizer":                           false,
		"SET threads = 1":                                    false,
		"":                                                   false,
		"-- only a comment":                                  false,
	} {
		if got := readOnly(q); got != want {
			t.Errorf("readOnly(%q) = %v, want %v", q, got, want)
		}
	}
}

// readOnly reads SQL a person typed: whatever it is given, it answers
// without panicking, and a yes always means one statement that starts with
// a read-only keyword.
func FuzzReadOnly(f *testing.F) {
	for _, q := range []string{"SELECT 1", "-- c\nFROM t;", "SELECT 1; DROP TABLE t", "--", "\n--\n--x", "WITH x AS (SELECT 1) SELECT 1"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if !readOnly(q) {
			return
		}
		body := q
		for {
			body = strings.TrimSpace(body)
			rest, ok := strings.CutPrefix(body, "--")
			if !ok {
				break
			}
			_, body, _ = strings.Cut(rest, "\n")
		}
		word := strings.ToUpper(strings.FieldsFunc(body, func(r rune) bool { return r == ' ' || r == '\n' || r == '\t' })[0])
		if !readOnlyWords[word] {
			t.Fatalf("readOnly(%q) = true, but it starts with %q", q, word)
		}
		if i := strings.IndexByte(body, ';'); i >= 0 && strings.TrimSpace(body[i+1:]) != "" {
			t.Fatalf("readOnly(%q) = true for two statements", q)
		}
	})
}
