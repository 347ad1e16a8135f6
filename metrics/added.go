package metrics

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/retrace-dev/retrace/trajectory"
)

// A load into a store that holds rows reads the lines it checks into
// temporary tables of their own first (addedTable), one per event type,
// and moves them into the store's tables once the check is done, within
// the same transaction. The rows it adds are then a few thousand rows
// in tables of their own, not a part of every table of a million: the
// sessions they hold go into store_sessions from them (indexAdded), and
// when the load only adds files whose sessions no file held before, their
// derived rows are selected from them too (refreshAdded). Over 1M events
// store_sessions and the derived refresh had cost 0.2-0.25 CPU-s of
// adding 1% new files, each a scan of every row held.

// addedTable names the temporary table a store's load reads the events
// of type t into before they go into typeTable(t).
func addedTable(t trajectory.EventType) string { return quoteIdent("retrace_added_raw_" + string(t)) }

// addedPrefix turns the name of a table or view a derived query reads
// (raw_tool_call, raw_events, model_turns) into that of its counterpart
// over the rows added: addedTable, the view addedEvents, and the
// temporary table of the added sessions' model turns.
const addedPrefix = "retrace_added_"

// addedEvents is the view putting the added tables together, as
// raw_events does the store's.
const addedEvents = addedPrefix + "raw_events"

// addedSQL makes the temporary tables a load reads into, empty, and the
// view over them.
var addedSQL = sync.OnceValue(func() string {
	var b strings.Builder
	var union []string
	for _, t := range trajectory.EventTypes() {
		fmt.Fprintf(&b, "CREATE OR REPLACE TEMP TABLE %s (%s);\n", addedTable(t), columnDefs(t))
		union = append(union, "SELECT * FROM "+addedTable(t))
	}
	fmt.Fprintf(&b, "CREATE OR REPLACE TEMP VIEW %s AS\n%s;\n", addedEvents, strings.Join(union, "\nUNION ALL BY NAME\n"))
	return b.String()
})

// moveAddedSQL moves the added rows into the store's tables and drops
// the temporary tables.
var moveAddedSQL = sync.OnceValue(func() string {
	var b strings.Builder
	for _, t := range trajectory.EventTypes() {
		fmt.Fprintf(&b, "INSERT INTO %s SELECT * FROM %s;\n", typeTable(t), addedTable(t))
	}
	fmt.Fprintf(&b, "DROP VIEW %s;\n", addedEvents)
	for _, t := range trajectory.EventTypes() {
		fmt.Fprintf(&b, "DROP TABLE %s;\n", addedTable(t))
	}
	return b.String()
})

// addedSelect returns the query of the derived view name over the added
// rows only: every table of events it reads (and model_turns, which
// sessions reads) replaced by its counterpart over the rows added. Each
// derived row depends on the rows of its own session only, so for a
// session all of whose rows are among those added these are exactly the
// rows the whole query gives.
func addedSelect(name string) string {
	return fromTables.ReplaceAllString(derivedSelect(name), "FROM "+addedPrefix+"$1")
}

// refreshAdded inserts the derived rows of the added sessions, selected
// from the added rows alone. It is right only when no file the store
// keeps holds rows of those sessions (see load).
func refreshAdded(ctx context.Context, tx *sql.Tx) error {
	var b strings.Builder
	for _, name := range derivedViews {
		if name == "model_turns" {
			// sessions reads the added sessions' model turns.
			fmt.Fprintf(&b, "CREATE OR REPLACE TEMP TABLE %smodel_turns AS\n%s;\n", addedPrefix, addedSelect(name))
			fmt.Fprintf(&b, "INSERT INTO %s SELECT * FROM %smodel_turns;\n", derivedTable(name), addedPrefix)
			continue
		}
		fmt.Fprintf(&b, "INSERT INTO %s\n%s;\n", derivedTable(name), addedSelect(name))
	}
	fmt.Fprintf(&b, "DROP TABLE %smodel_turns;\n", addedPrefix)
	if _, err := tx.ExecContext(ctx, b.String()); err != nil {
		return fmt.Errorf("refresh the derived tables: %w", err)
	}
	return nil
}

// indexAdded brings store_sessions up to date from the added rows, before
// they are moved: the entries of the files forgotten (read again whole,
// grown, or gone) deleted, and those of the files read put in again,
// from the added rows and, for a grown file (resumed), the rows the store
// kept of it too. A file the store did not hold has no entry to delete:
// a load that only adds new files deletes nothing.
func indexAdded(ctx context.Context, tx *sql.Tx, forgotten, resumed []string) error {
	rows := "SELECT file, session, seq FROM " + addedEvents
	if len(resumed) > 0 {
		kept, err := fileSet(ctx, tx, "retrace_resumed", resumed)
		if err != nil {
			return err
		}
		rows += "\nUNION ALL SELECT file, session, seq FROM raw_events WHERE file " + kept
	}
	q := "INSERT INTO store_sessions SELECT file, session, max(seq) FROM (" + rows + ") GROUP BY file, session"
	if len(forgotten) > 0 {
		in, err := fileSet(ctx, tx, "retrace_forgotten", forgotten)
		if err != nil {
			return err
		}
		q = "DELETE FROM store_sessions WHERE file " + in + ";\n" + q
	}
	if _, err := tx.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("load: index the sessions: %w", err)
	}
	return nil
}

// fewFiles is the number of names up to which fileSet spells them out.
const fewFiles = 16

// fileSet returns the condition "IN ..." that a file column meets when it
// is among names: a list of literals for a few, or else a semi-join with
// the temporary table name, made to hold them. DuckDB plans an IN list of
// thousands of literals as an OR of comparisons, row by row, and a DELETE
// with one over a large table was the slowest part of dropping many files.
func fileSet(ctx context.Context, ex execer, name string, names []string) (string, error) {
	if len(names) <= fewFiles {
		if len(names) == 0 {
			return "IN (SELECT NULL::VARCHAR WHERE false)", nil
		}
		return "IN " + sqlList(names), nil
	}
	table := quoteIdent(name)
	if _, err := ex.ExecContext(ctx, "CREATE OR REPLACE TEMP TABLE "+table+" (file VARCHAR)"); err != nil {
		return "", fmt.Errorf("load: %w", err)
	}
	if _, err := ex.ExecContext(ctx, "INSERT INTO "+table+" SELECT unnest(?::VARCHAR[])", names); err != nil {
		return "", fmt.Errorf("load: %w", err)
	}
	return "IN (SELECT file FROM " + table + ")", nil
}

// dropFileSets drops the temporary tables fileSet made, at the end of a
// load: a user's prompt on the same connection should not see them.
func dropFileSets(ctx context.Context, ex execer) error {
	var b strings.Builder
	for _, name := range fileSets {
		fmt.Fprintf(&b, "DROP TABLE IF EXISTS %s;\n", quoteIdent(name))
	}
	if _, err := ex.ExecContext(ctx, b.String()); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

// fileSets are the names of the temporary tables fileSet makes.
var fileSets = []string{"retrace_forgotten", "retrace_resumed", "retrace_gone", "retrace_held", "retrace_files", "retrace_others"}
