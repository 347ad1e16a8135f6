package metrics

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// Column is one column of the raw_events view and of the events view.
type Column struct {
	Name string
	// Type is the DuckDB type the column is read as.
	Type string
}

// payloads lists a zero value of every payload type; the schema is the
// union of their top-level fields, so a new payload type must be added here.
var payloads = []trajectory.Payload{
	&trajectory.SessionStart{}, &trajectory.WorkspaceSnapshot{}, &trajectory.ModelRequest{}, &trajectory.ModelResponse{},
	&trajectory.ModelError{}, &trajectory.ToolCall{}, &trajectory.HookRun{},
	&trajectory.PermissionAllow{}, &trajectory.PermissionPrompt{}, &trajectory.PermissionDeny{},
	&trajectory.ToolSuccess{}, &trajectory.ToolFailure{}, &trajectory.ToolEnd{},
	&trajectory.ToolResult{}, &trajectory.DefenseTrigger{}, &trajectory.Reminder{},
	&trajectory.Compaction{}, &trajectory.UserPrompt{}, &trajectory.SessionEnd{}, &trajectory.MCPServer{},
}

var envelope = []Column{
	{"v", "INTEGER"}, {"session", "VARCHAR"}, {"seq", "BIGINT"},
	{"ts", "TIMESTAMP"}, {"turn", "INTEGER"}, {"type", "VARCHAR"},
}

var rawMessage = reflect.TypeOf(json.RawMessage(nil))

// Columns returns the explicit column schema the trajectories are read
// with: the envelope, then the payload fields sorted by name. It is derived
// from the Go types so that the trajectory package stays the single source.
func Columns() []Column {
	types := map[string]string{}
	for _, p := range payloads {
		collect(reflect.TypeOf(p).Elem(), types)
	}
	return append(append([]Column(nil), envelope...), sorted(types, types)...)
}

// typeColumns returns the columns events of type t can carry: the envelope
// and t's payload fields, typed as in Columns. DuckDB's read_json costs
// grow with the columns it looks for, so each event type is read with its
// own few.
func typeColumns(t trajectory.EventType) []Column {
	all := map[string]string{}
	for _, c := range Columns() {
		all[c.Name] = c.Type
	}
	for _, p := range payloads {
		if p.EventType() == t {
			own := map[string]string{}
			collect(reflect.TypeOf(p).Elem(), own)
			return append(append([]Column(nil), envelope...), sorted(own, all)...)
		}
	}
	return Columns()
}

// sorted returns the columns named in names, sorted, typed from types.
func sorted(names, types map[string]string) []Column {
	var cols []Column
	for n := range names {
		cols = append(cols, Column{Name: n, Type: types[n]})
	}
	sort.Slice(cols, func(i, j int) bool { return cols[i].Name < cols[j].Name })
	return cols
}

// collect adds t's JSON fields the way encoding/json sees them: untagged
// embedded structs are promoted. A name two payloads give different types
// falls back to JSON so that neither loses data.
func collect(t reflect.Type, types map[string]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		if f.Anonymous && !hasTag && f.Type.Kind() == reflect.Struct {
			collect(f.Type, types)
			continue
		}
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		typ := duckType(f.Type)
		if old, ok := types[name]; ok && old != typ {
			typ = "JSON"
		}
		types[name] = typ
	}
}

func duckType(t reflect.Type) string {
	if t == rawMessage {
		return "JSON"
	}
	if t.Kind() == reflect.Pointer { // an optional number, such as hook_run's exit_code
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "VARCHAR"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "BIGINT"
	case reflect.Float32, reflect.Float64:
		return "DOUBLE"
	case reflect.Bool:
		return "BOOLEAN"
	}
	return "JSON"
}

// fileColumn is the column naming the file an event was loaded from.
var fileColumn = Column{Name: "file", Type: "VARCHAR"}

// lineColumn is the column holding the line of the file the event was
// read from, counted from 1, so that a finding can point at it; NULL for
// events loaded from a Parquet export made before the column existed.
var lineColumn = Column{Name: "line", Type: "BIGINT"}

// where are the columns the load adds to every event: where it was read.
func where() []Column { return []Column{fileColumn, lineColumn} }

// typeTable names the table holding the events of type t.
func typeTable(t trajectory.EventType) string { return quoteIdent("raw_" + string(t)) }

// schemaSQL creates a table per event type, with only that type's columns,
// and the view raw_events over all of them with every column: DuckDB
// inserts into a narrow table many times faster than into one table with
// every type's columns, and a query filtering on type skips the other
// tables' row groups by their min/max.
//
// raw_events unions the tables BY NAME, DuckDB filling each table's missing
// columns with NULLs of the column's type, and then puts the columns in
// Columns' order. Spelling the 17 × 84 NULL casts out (unionByPosition)
// gives the same view, but every view and query over it then binds those
// 1,400 expressions again: it made Open and planning the named metrics
// about three times slower (BenchmarkStartup).
func schemaSQL() string {
	var b strings.Builder
	var union []string
	for _, t := range trajectory.EventTypes() {
		fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (%s);\n", typeTable(t), columnDefs(t))
		union = append(union, "SELECT * FROM "+typeTable(t))
	}
	all := append(Columns(), where()...)
	cols := make([]string, len(all))
	for i, c := range all {
		cols[i] = quoteIdent(c.Name)
	}
	b.WriteString("CREATE OR REPLACE VIEW raw_events AS\nSELECT " + strings.Join(cols, ", ") + " FROM (\n" +
		strings.Join(union, "\nUNION ALL BY NAME\n") + ");\n")
	return b.String()
}

// tableColumns returns the columns of t's table, which are also those
// read_json reads a staged chunk of t's events with: ts as TIMESTAMP, which
// is right because the staging spells every ts in UTC (see utcTS). Read as
// TIMESTAMP, DuckDB drops an offset, so that 09:00+02:00 would load as
// 09:00 UTC, two hours off; reading TIMESTAMPTZ and converting it costs
// DuckDB a time-zone calendar per row instead.
func tableColumns(t trajectory.EventType) []Column {
	return append(typeColumns(t), where()...)
}

// columnsSQL renders cols as read_json's columns struct literal.
func columnsSQL(cols []Column) string {
	var b strings.Builder
	b.WriteString("{")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteString(c.Name))
		b.WriteString(": ")
		b.WriteString(quoteString(c.Type))
	}
	b.WriteString("}")
	return b.String()
}

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// columnDefs returns the column definitions of event type t's table, as
// CREATE TABLE spells them: a store's tables and a load's tables of the
// rows it adds (addedSQL) have the same.
func columnDefs(t trajectory.EventType) string {
	defs := make([]string, 0, len(tableColumns(t)))
	for _, c := range tableColumns(t) {
		defs = append(defs, quoteIdent(c.Name)+" "+c.Type)
	}
	return strings.Join(defs, ", ")
}
