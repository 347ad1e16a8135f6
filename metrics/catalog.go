package metrics

import (
	"context"
	"fmt"
	"strings"
)

// Views lists the views the database holds (the ones this package makes
// and any a person adds) with their row and column counts, read from the
// catalog; a comment column is added when any view has a comment.
func (db *DB) Views(ctx context.Context) (Table, error) {
	views, err := db.Query(ctx, `SELECT v.view_name, count(c.column_name), coalesce(any_value(v.comment), '')
FROM duckdb_views() v JOIN information_schema.columns c
  ON c.table_catalog = v.database_name AND c.table_schema = v.schema_name AND c.table_name = v.view_name
WHERE NOT v.internal
GROUP BY v.view_name ORDER BY v.view_name`)
	if err != nil {
		return views, err
	}
	t := Table{Columns: []string{"view", "rows", "columns"}}
	if len(views.Rows) == 0 {
		return t, nil
	}
	var counts []string
	for _, v := range views.Rows {
		name := fmt.Sprint(v[0])
		counts = append(counts, fmt.Sprintf("SELECT %s AS view, count(*) AS rows FROM %s", quoteString(name), quoteIdent(name)))
	}
	rows, err := db.Query(ctx, strings.Join(counts, " UNION ALL "))
	if err != nil {
		return rows, err
	}
	rowsOf := map[string]any{}
	for _, row := range rows.Rows {
		rowsOf[fmt.Sprint(row[0])] = row[1]
	}
	commented := false
	for _, v := range views.Rows {
		commented = commented || fmt.Sprint(v[2]) != ""
	}
	if commented {
		t.Columns = append(t.Columns, "comment")
	}
	for _, v := range views.Rows {
		row := []any{v[0], rowsOf[fmt.Sprint(v[0])], v[1]}
		if commented {
			row = append(row, v[2])
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// Describe lists the columns of the view or table name with their types.
func (db *DB) Describe(ctx context.Context, name string) (Table, error) {
	t, err := db.Query(ctx, `SELECT column_name AS column, data_type AS type
FROM information_schema.columns WHERE table_name = `+quoteString(name)+`
ORDER BY table_schema, ordinal_position`)
	if err == nil && len(t.Rows) == 0 {
		err = fmt.Errorf("no view named %q; .tables lists the views", name)
	}
	return t, err
}

// About returns what the named metric counts: the first part of its
// header comment, before its denominator.
func About(name string) (string, error) {
	q, err := MetricSQL(name)
	if err != nil {
		return "", err
	}
	var header []string
	for _, l := range strings.Split(q, "\n") {
		text, ok := strings.CutPrefix(strings.TrimSpace(l), "--")
		if !ok {
			break
		}
		header = append(header, strings.TrimSpace(text))
	}
	about, _, _ := strings.Cut(strings.Join(header, " "), "Denominator")
	return strings.TrimSpace(strings.TrimPrefix(about, name+":")), nil
}
