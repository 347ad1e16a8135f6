package metrics

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"strings"
)

// The derived views are what most metrics, the diff and the report read:
// tool_calls joins every call with its permission, pre-hooks, outcome
// and end, model_turns unpacks the usage JSON of every response, sessions
// aggregates every event by session, and defenses lists the triggers. As
// plain views, each query made those joins, parses and aggregates again,
// six metrics the same tool_calls join, and a diff some hundred queries
// (it copied them into temporary tables of its own). So each is a view over a
// table of its rows (derivedTable), which every change of the rows
// refreshes in the same transaction: the end of a load, and a Query or
// Arrow export that may write (doc.go has the numbers). A view, so that a
// query names it as before and a user may still replace it with one of
// their own.
//
//go:embed derived/*.sql
var derivedFiles embed.FS

// derivedViews are the derived views, in the order they are made:
// sessions reads model_turns.
var derivedViews = []string{"tool_calls", "model_turns", "sessions", "defenses"}

// derivedTable names the table holding the rows of the derived view name.
func derivedTable(name string) string { return quoteIdent("derived_" + name) }

// derivedSelect returns the query whose rows the derived view name shows.
func derivedSelect(name string) string {
	b, err := derivedFiles.ReadFile("derived/" + name + ".sql")
	if err != nil {
		panic("metrics: no query for derived view " + name) // embedded; a test reads every one
	}
	return string(b)
}

// derivedOpenSQL makes the derived views when a database is opened. A
// new database in memory holds no rows yet, so they are plain views over
// their queries, as cheap to make as any view (making the tables would
// plan and run both queries, which cost every command a quarter more
// start-up, `query 'select 1'` included); the first load puts them over
// their tables. A kept database gets its tables where it has none, and
// views over them.
func derivedOpenSQL(kept bool) string {
	var b strings.Builder
	for _, name := range derivedViews {
		if kept {
			fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s AS\n%s;\n", derivedTable(name), derivedSelect(name))
			fmt.Fprintf(&b, "CREATE OR REPLACE VIEW %s AS SELECT * FROM %s;\n", quoteIdent(name), derivedTable(name))
			continue
		}
		fmt.Fprintf(&b, "CREATE OR REPLACE VIEW %s AS\n%s;\n", quoteIdent(name), derivedSelect(name))
	}
	return b.String()
}

// execer runs a statement: the database, or a load's transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// refreshDerived makes the derived tables again from the rows as they are
// now, through ex.
func refreshDerived(ctx context.Context, ex execer) error {
	var b strings.Builder
	for _, name := range derivedViews {
		fmt.Fprintf(&b, "CREATE OR REPLACE TABLE %s AS\n%s;\n", derivedTable(name), derivedSelect(name))
		fmt.Fprintf(&b, "CREATE OR REPLACE VIEW %s AS SELECT * FROM %s;\n", quoteIdent(name), derivedTable(name))
	}
	if _, err := ex.ExecContext(ctx, b.String()); err != nil {
		return fmt.Errorf("refresh the derived views (%s): %w", strings.Join(derivedViews, ", "), err)
	}
	return nil
}
