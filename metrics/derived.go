package metrics

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"regexp"
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
	if err := db.makeDerived(ctx, ex); err == nil {
		db.materialized.Store(true)
		// Prepared over the plain views, the metrics would still join.
		db.dropPrepared()
	}
}

// changed makes the derived views plain again after the rows may have
// changed, through ex: within the change's transaction for a load, with
// db.dmu held for a statement.
//
// A store keeps its derived tables: they are made again whole instead.
func (db *DB) changed(ctx context.Context, ex execer) error {
	if db.opts.Path != "" {
		if _, err := ex.ExecContext(ctx, materializeSQL()); err != nil {
			return fmt.Errorf("make the derived tables (%s) again: %w", strings.Join(derivedViews, ", "), err)
		}
		return nil
	}
	db.materialized.Store(false)
	if _, err := ex.ExecContext(ctx, plainDerivedSQL()); err != nil {
		return fmt.Errorf("make the derived views (%s) again: %w", strings.Join(derivedViews, ", "), err)
	}
	return nil
}

// A store (Options.Path) keeps its derived tables always: a load brings
// them up to date in its own transaction, for the sessions whose rows it
// changed only (refresh), so that a question over an unchanged corpus
// reads tables made before, and a load of a few new files pays for their
// sessions, not for the corpus.

// scopeTable is the temporary table holding the sessions a refresh
// brings up to date.
const scopeTable = "retrace_refresh_scope"

// fromTables finds where a derived view's query reads a table of events,
// or model_turns (sessions reads it).
var fromTables = regexp.MustCompile(`\bFROM\s+(raw_[a-z_]+|model_turns)\b`)

// scopedSelect returns the query of the derived view name restricted to
// the sessions in scopeTable: every table it reads is filtered to them.
// Each derived row depends on the rows of its own session only (every
// join and group is by session), so these are exactly the rows of those
// sessions the whole query gives.
func scopedSelect(name string) string {
	return fromTables.ReplaceAllString(derivedSelect(name),
		"FROM (SELECT * FROM $1 WHERE session IN (SELECT session FROM "+scopeTable+")) AS $1")
}

// refresh brings a store's derived tables up to date within a load's
// transaction: made again whole (full: a new store, or rows from Parquet,
// whose files it does not track), or else the rows of the sessions in
// scope and of those the files read hold (store_sessions, brought up to
// date first) deleted and selected again.
// parquet records whether the store now holds rows from Parquet.
func (db *DB) refresh(ctx context.Context, tx *sql.Tx, scope, read []string, full, parquet bool) error {
	if parquet != db.fromParquet {
		if _, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO store_meta VALUES ('parquet', "+quoteString(fmt.Sprint(parquet))+")"); err != nil {
			return err
		}
	}
	if full {
		_, err := tx.ExecContext(ctx, materializeSQL())
		return err
	}
	more, err := heldSessions(ctx, tx, read)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var vals []string
	for _, s := range append(scope, more...) {
		if !seen[s] {
			seen[s] = true
			vals = append(vals, "("+quoteString(s)+")")
		}
	}
	if len(vals) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "CREATE OR REPLACE TEMP TABLE "+scopeTable+" (session VARCHAR)"); err != nil {
		return err
	}
	for len(vals) > 0 {
		n := min(len(vals), 1000)
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+scopeTable+" VALUES "+strings.Join(vals[:n], ", ")); err != nil {
			return err
		}
		vals = vals[n:]
	}
	for _, name := range derivedViews {
		q := "DELETE FROM " + derivedTable(name) + " WHERE session IN (SELECT session FROM " + scopeTable + ");\n" +
			"INSERT INTO " + derivedTable(name) + "\n" + scopedSelect(name)
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("refresh %s: %w", name, err)
		}
	}
	_, err = tx.ExecContext(ctx, "DROP TABLE "+scopeTable)
	return err
}
