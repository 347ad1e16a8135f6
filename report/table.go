package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/terminal"
)

// WriteTable writes t in format: table, csv, json (an array of objects)
// or markdown. A cell may hold what a model or tool wrote (a tool name, a
// detector's message, a query over the trajectories), so every format but
// JSON, which escapes it, goes through terminal.Writer; the terminal table
// and Markdown escape newlines in a cell too, and Markdown escapes what
// would render as HTML, a link or an image.
func WriteTable(w io.Writer, format string, t metrics.Table) error {
	if format == "json" {
		return WriteTableJSON(w, t, "")
	}
	w = terminal.NewWriter(w)
	switch format {
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(t.Columns)
		for _, r := range t.Rows {
			cw.Write(tableCells(r))
		}
		cw.Flush()
		return cw.Error()
	case "markdown":
		esc := func(ss []string) string {
			for i, s := range ss {
				ss[i] = MarkdownText(s)
			}
			return "| " + strings.Join(ss, " | ") + " |\n"
		}
		sep := make([]string, len(t.Columns))
		for i := range sep {
			sep[i] = "---"
		}
		b := esc(append([]string(nil), t.Columns...)) + esc(sep)
		for _, r := range t.Rows {
			b += esc(tableCells(r))
		}
		_, err := io.WriteString(w, b)
		return err
	}
	return writeTerminalTable(w, t)
}

// MarkdownText escapes s for a Markdown table cell or line: as one line
// without controls (terminal.Line), with a backslash before what would
// render as HTML, an entity, a link, an image, code or a cell boundary, so
// that text a model wrote shows as the text it is, in a PR comment too.
func MarkdownText(s string) string {
	return markdownEscaper.Replace(terminal.Line(s))
}

var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, "|", `\|`, "<", `\<`, ">", `\>`, "&", `\&`, "[", `\[`, "]", `\]`, "!", `\!`, "`", "\\`")

// MaxWidth is the widest a terminal table is drawn, in columns: a CI
// log shows 120 columns without wrapping, and a person's terminal at
// least that.
const MaxWidth = 120

// writeTerminalTable draws t for people: a bordered table, numbers right
// aligned, NULL as an empty cell, no wider than MaxWidth (fitColumns).
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
	rows := make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		rows[i] = tableCells(r)
		for j, c := range rows[i] {
			rows[i][j] = terminal.Line(c)
		}
	}
	header := slices.Clone(t.Columns)
	cut := make([]int, len(align))
	for i, a := range align {
		if a == tw.AlignLeft {
			cut[i] = 1
		}
	}
	fitColumns(header, rows, cut, MaxWidth, 3, 1)
	tbl := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}))
	tbl.Header(header)
	for _, row := range rows {
		if err := tbl.Append(row); err != nil {
			return err
		}
	}
	return tbl.Render()
}

// minColumn is the narrowest a text column is cut to: enough for a
// severity, a short id or the start of a path.
const minColumn = 8

// fitColumns cuts the cells of header and rows so that the table they
// make is at most width columns wide, each column taking its widest cell
// and pad more, plus extra ("│ a │ b │" is pad 3, extra 1). cut says
// which columns may be cut and in which order: 0 never (a number, which
// cut would read as another), then the columns of priority 1, widest
// first, down to minColumn or their header's width, then those of 2. A
// cut cell ends with an ellipsis. When the columns cannot give enough,
// the table stays wider.
func fitColumns(header []string, rows [][]string, cut []int, width, pad, extra int) {
	widths := columnWidths(header, rows)
	total := extra
	for _, w := range widths {
		total += w + pad
	}
	floor := func(i int) int { return max(minColumn, twwidth.Width(header[i])) }
	for priority := 1; priority <= 2 && total > width; priority++ {
		for total > width {
			widest := -1
			for i, w := range widths {
				if cut[i] == priority && w > floor(i) && (widest < 0 || w > widths[widest]) {
					widest = i
				}
			}
			if widest < 0 {
				break
			}
			widths[widest]--
			total--
		}
	}
	for _, r := range rows {
		for i, c := range r {
			r[i] = ellipsis(c, widths[i])
		}
	}
}

// columnWidths returns the display width of each column of a table of
// these cells: its widest cell or its header.
func columnWidths(header []string, rows [][]string) []int {
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = twwidth.Width(h)
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], twwidth.Width(c))
		}
	}
	return widths
}

// ellipsis cuts s to at most w display columns, the last of them an
// ellipsis when anything was cut.
func ellipsis(s string, w int) string {
	if twwidth.Width(s) <= w {
		return s
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		rw := twwidth.Width(string(r))
		if used+rw > w-1 {
			break
		}
		b.WriteRune(r)
		used += rw
	}
	return b.String() + "…"
}

// WriteTableJSON writes t as a JSON array of objects, one per row keyed
// by column, each line after the first prefixed with indent.
func WriteTableJSON(w io.Writer, t metrics.Table, indent string) error {
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
			case decimal:
				// A DECIMAL is a struct of its digits and scale, which
				// JSON would print as such: it is its number, every
				// digit kept.
				v = json.Number(x.String())
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

// decimal is a DECIMAL value as DuckDB's driver gives it: a struct with
// its exact text and a float64 that may round it.
type decimal interface {
	String() string
	Float64() float64
}

// tableCells renders a row for text output; NULL is empty.
func tableCells(r []any) []string {
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
