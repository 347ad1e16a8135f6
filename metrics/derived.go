package metrics

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"strings"
	"sync"
)

// The derived views are what most metrics, the diff and the report read:
// tool_calls joins every call with its permission, pre-hooks, outcome
// and end, model_turns unpacks the usage JSON of every response, sessions
// aggregates every event by session, and defenses lists the triggers. As
// plain views, each query made those joins, parses and aggregates again:
// six metrics the same tool_calls join, and a diff some hundred queries
// (it copied them into temporary tables of its own). So the first query
// that names one after a change of the rows materializes them: their rows
// go into tables of their own (derivedTable) and the views read those.
// Every change (a load, a Query or Arrow export that may write) makes them
// plain views again, at once, so that a view never shows rows the tables
// no longer hold; the tables are made again only when a query asks for
// them, so a load or a query that does not read them does not pay for
// them (at 1M events, 0.6 s). doc.go has the numbers.
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

// plainDerivedSQL makes the derived views plain views over their queries:
// at Open, and after every change of the rows. It costs what making any
// view costs (binding the query), a few milliseconds. Built once per
// process, as openSQL is.
var plainDerivedSQL = sync.OnceValue(func() string {
	var b strings.Builder
	for _, name := range derivedViews {
		fmt.Fprintf(&b, "CREATE OR REPLACE VIEW %s AS\n%s;\n", quoteIdent(name), derivedSelect(name))
	}
	return b.String()
})

// materializeSQL makes the derived tables from the rows as they are now
// and puts the views over them.
var materializeSQL = sync.OnceValue(func() string {
	var b strings.Builder
	for _, name := range derivedViews {
		fmt.Fprintf(&b, "CREATE OR REPLACE TABLE %s AS\n%s;\n", derivedTable(name), derivedSelect(name))
		fmt.Fprintf(&b, "CREATE OR REPLACE VIEW %s AS SELECT * FROM %s;\n", quoteIdent(name), derivedTable(name))
	}
	return b.String()
})

// execer runs a statement: the database, a connection, or a load's
// transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// namesDerived reports whether q names a derived view. It may say yes
// wrongly (the name in a string or a comment), which only costs making
// the tables; a query that reads a derived view through a view of the
// user's own that it does not name reads the plain view, slower but
// right.
func namesDerived(q string) bool {
	q = strings.ToLower(q)
	for _, name := range derivedViews {
		if strings.Contains(q, name) {
			return true
		}
	}
	return false
}

// materialize makes the derived tables when q names a derived view and
// they are not made from the rows as they are now; the caller holds
// db.dmu. A failure leaves the views that were not materialized plain,
// which still answer right, so it is not an error of the query: the next
// query tries again.
func (db *DB) materialize(ctx context.Context, ex execer, q string) {
	if db.materialized.Load() || !namesDerived(q) {
		return
	}
	if _, err := ex.ExecContext(ctx, materializeSQL()); err == nil {
		db.materialized.Store(true)
		// Prepared over the plain views, the metrics would still join.
		db.dropPrepared()
	}
}

// changed makes the derived views plain again after the rows may have
// changed, through ex: within the change's transaction for a load, with
// db.dmu held for a statement.
func (db *DB) changed(ctx context.Context, ex execer) error {
	db.materialized.Store(false)
	if _, err := ex.ExecContext(ctx, plainDerivedSQL()); err != nil {
		return fmt.Errorf("make the derived views (%s) again: %w", strings.Join(derivedViews, ", "), err)
	}
	return nil
}
