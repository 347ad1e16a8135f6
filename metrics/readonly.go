package metrics

import (
	"context"
	"strings"
)

// selectOnly reports whether DuckDB parses q as SELECT statements only,
// a WITH ... SELECT among them, which readOnly cannot tell from an INSERT
// behind a CTE by its first word. json_serialize_sql serializes SELECT
// statements and refuses every other kind; it parses and never runs q.
// Every SQL detector and most named metrics open with WITH: taken for
// writes, each of them made the derived tables plain again, and the next
// made them again (at 1M events, about half a second each time), which
// made detect over 1M events cost more than loading and asking every
// metric.
func (db *DB) selectOnly(ctx context.Context, q string) bool {
	var out string
	if err := db.sql.QueryRowContext(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", q).Scan(&out); err != nil {
		return false
	}
	return strings.HasPrefix(out, `{"error":false`)
}
