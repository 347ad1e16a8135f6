package metrics

import (
	"context"
	"encoding/json"
	"strings"
)

// selects returns how many statements q holds when DuckDB parses it as
// SELECT statements only, a WITH ... SELECT among them, which readOnly
// cannot tell from an INSERT behind a CTE by its first word, and 0 when
// it does not. json_serialize_sql serializes SELECT statements and
// refuses every other kind; it parses and never runs q. Every SQL
// detector and most named metrics open with WITH: taken for writes, each
// of them made the derived tables plain again, and the next made them
// again (at 1M events, about half a second each time), which made detect
// over 1M events cost more than loading and asking every metric.
func (db *DB) selects(ctx context.Context, q string) int {
	var out string
	if err := db.sql.QueryRowContext(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", q).Scan(&out); err != nil {
		return 0
	}
	if !strings.HasPrefix(out, `{"error":false`) {
		return 0
	}
	var parsed struct {
		Statements []json.RawMessage `json:"statements"`
	}
	if json.Unmarshal([]byte(out), &parsed) != nil {
		return 0
	}
	return len(parsed.Statements)
}
