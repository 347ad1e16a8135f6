package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/terminal"
)

// writeTable writes t in format: table, csv, json (an array of objects)
// or markdown. A cell may hold what a model or tool wrote (a tool name, a
// detector's message, a query over the trajectories), so every format but
// JSON, which escapes it, goes through terminal.Writer; the terminal table
// and Markdown escape newlines in a cell too, and Markdown escapes what
// would render as HTML, a link or an image.
func writeTable(w io.Writer, format string, t metrics.Table) error {
	if format == "json" {
		return writeTableJSON(w, t, "")
	}
	w = terminal.NewWriter(w)
	switch format {
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(t.Columns)
		for _, r := range t.Rows {
			cw.Write(cells(r))
		}
		cw.Flush()
		return cw.Error()
	case "markdown":
		esc := func(ss []string) string {
			for i, s := range ss {
				ss[i] = markdownText(s)
			}
			return "| " + strings.Join(ss, " | ") + " |\n"
		}
		sep := make([]string, len(t.Columns))
		for i := range sep {
			sep[i] = "---"
		}
		b := esc(append([]string(nil), t.Columns...)) + esc(sep)
		for _, r := range t.Rows {
			b += esc(cells(r))
		}
		_, err := io.WriteString(w, b)
		return err
	}
	return writeTerminalTable(w, t)
}

// markdownText escapes s for a Markdown table cell or line: as one line
// without controls (terminal.Line), with a backslash before what would
// render as HTML, an entity, a link, an image, code or a cell boundary, so
// that text a model wrote shows as the text it is, in a PR comment too.
func markdownText(s string) string {
	return markdownEscaper.Replace(terminal.Line(s))
}

var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, "|", `\|`, "<", `\<`, ">", `\>`, "&", `\&`, "[", `\[`, "]", `\]`, "!", `\!`, "`", "\\`")

// writeTerminalTable draws t for people: a bordered table, numbers right
// aligned, NULL as an empty cell.
func writeTerminalTable(w io.Writer, t metrics.Table) error {
	align := make([]tw.Align, len(t.Columns))
	for i := range align {
		align[i] = tw.AlignRight
		for _, r := range t.Rows {
			switch r[i].(type) {
			case nil, int8, int16, int32, int64, uint8, uint16, uint32, uint64, int, float32, float64, *big.Int:
			default:
				align[i] = tw.AlignLeft
			}
		}
	}
	tbl := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}))
	tbl.Header(t.Columns)
	for _, r := range t.Rows {
		row := cells(r)
		for i, c := range row {
			row[i] = terminal.Line(c)
		}
		if err := tbl.Append(row); err != nil {
			return err
		}
	}
	return tbl.Render()
}

func writeTableJSON(w io.Writer, t metrics.Table, indent string) error {
	objs := make([]map[string]any, 0, len(t.Rows))
	for _, r := range t.Rows {
		o := make(map[string]any, len(r))
		for i, v := range r {
			switch x := v.(type) {
			case []byte:
				v = string(x)
			case float64:
				// JSON has no NaN or infinity (0/0 in a user's query, say):
				// they are null, as an empty cell is in the table.
				if math.IsNaN(x) || math.IsInf(x, 0) {
					v = nil
				}
			}
			o[t.Columns[i]] = v
		}
		objs = append(objs, o)
	}
	b, err := json.MarshalIndent(objs, indent, "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// cells renders a row for text output; NULL is empty.
func cells(r []any) []string {
	out := make([]string, len(r))
	for i, v := range r {
		switch v := v.(type) {
		case nil:
		case float64:
			out[i] = strconv.FormatFloat(v, 'f', -1, 64)
		case time.Time:
			out[i] = v.UTC().Format(time.RFC3339Nano)
		case []byte:
			out[i] = string(v)
		default:
			out[i] = cellText(v)
		}
	}
	return out
}

// cellText renders a value that is not a scalar DuckDB gives as a Go
// scalar: a JSON, STRUCT, LIST or MAP column arrives as a Go map, slice or
// struct, which fmt would print as map[command:ls], unreadable to a person
// and unparseable to a script; such values print as JSON, as --format json
// prints them.
func cellText(v any) string {
	if _, ok := v.(json.Marshaler); !ok {
		if s, ok := v.(fmt.Stringer); ok { // a DECIMAL, say, has its own text
			return s.String()
		}
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct:
		if b, err := json.Marshal(v); err == nil {
			return string(b)
		}
	}
	return fmt.Sprint(v)
}
