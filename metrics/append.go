package metrics

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/retrace-dev/retrace/trajectory"
)

// colKind is how a column's value is taken from a line's JSON.
type colKind uint8

const (
	kindVarchar   colKind = iota // a JSON string, unquoted in Go
	kindJSON                     // any JSON value, normalised by DuckDB's json()
	kindTimestamp                // a JSON string, cast by DuckDB as read_json does
	kindBigint
	kindInteger
	kindDouble
	kindBoolean
)

// tablePlan is how the lines of one event type become rows of its table.
type tablePlan struct {
	typ   trajectory.EventType
	cols  []Column
	kinds []colKind
	// index finds a top-level member's column by name.
	index map[string]int
	// query is the query appender's statement: it reads the appended
	// rows, whose JSON and timestamp columns are text, and lets DuckDB
	// turn those into its JSON and TIMESTAMP exactly as read_json did when
	// the load staged JSON for it, so that a value reads the same either
	// way (json() normalises numbers and escapes as read_json does; a
	// TIMESTAMP cast treats an offset as read_json does).
	query string
	types []duckdb.Type
}

// plans returns the plan of every event type, built once per process
// from the same schema the tables were created with.
var plans = sync.OnceValue(func() map[trajectory.EventType]*tablePlan {
	out := map[trajectory.EventType]*tablePlan{}
	for _, t := range trajectory.EventTypes() {
		p := &tablePlan{typ: t, cols: append(typeColumns(t), where()...), index: map[string]int{}}
		exprs := make([]string, len(p.cols))
		for i, c := range p.cols {
			p.index[c.Name] = i
			col := "col" + strconv.Itoa(i+1)
			kind, typ := kindVarchar, duckdb.TYPE_VARCHAR
			switch c.Type {
			case "JSON":
				kind, col = kindJSON, "json("+col+")"
			case "TIMESTAMP":
				kind, col = kindTimestamp, col+"::TIMESTAMP"
			case "BIGINT":
				kind, typ = kindBigint, duckdb.TYPE_BIGINT
			case "INTEGER":
				kind, typ = kindInteger, duckdb.TYPE_INTEGER
			case "DOUBLE":
				kind, typ = kindDouble, duckdb.TYPE_DOUBLE
			case "BOOLEAN":
				kind, typ = kindBoolean, duckdb.TYPE_BOOLEAN
			}
			p.kinds = append(p.kinds, kind)
			p.types = append(p.types, typ)
			exprs[i] = col
		}
		p.query = "INSERT INTO " + typeTable(t) + " SELECT " + strings.Join(exprs, ", ") + " FROM appended_data"
		out[t] = p
	}
	return out
})

// errRow means a checked line could not be turned into a row; the Decoder
// accepted it, so this is a bug in the load, not in the file.
var errRow = errors.New("cannot turn the checked line into a row")

// row turns a checked line into the values of its table's columns, file
// and line last.
func (p *tablePlan) row(line []byte, file string, lineNo int) ([]driver.Value, error) {
	// The Decoder reads invalid UTF-8 in strings as U+FFFD, as encoding/json
	// does, but DuckDB refuses it; the row gets the same replacement.
	if !utf8.Valid(line) {
		line = bytes.ToValidUTF8(line, []byte("\uFFFD"))
	}
	vals := make([]driver.Value, len(p.cols))
	err := members(line, func(key, raw []byte) error {
		i, ok := p.index[string(key)]
		if !ok {
			return fmt.Errorf("%w: no column %q in %s", errRow, key, typeTable(p.typ))
		}
		v, err := value(p.kinds[i], raw)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", errRow, key, err)
		}
		vals[i] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	vals[len(vals)-2] = file
	vals[len(vals)-1] = int64(lineNo)
	return vals, nil
}

// value converts one member's raw JSON for a column of kind k.
func value(k colKind, raw []byte) (driver.Value, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	switch k {
	case kindJSON:
		return string(raw), nil
	case kindVarchar, kindTimestamp:
		return unquote(raw)
	case kindBigint:
		return strconv.ParseInt(string(raw), 10, 64)
	case kindInteger:
		n, err := strconv.ParseInt(string(raw), 10, 32)
		return int32(n), err
	case kindDouble:
		return strconv.ParseFloat(string(raw), 64)
	case kindBoolean:
		switch string(raw) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return nil, fmt.Errorf("unexpected value %.40s", raw)
}

// unquote returns the string a JSON string literal holds.
func unquote(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", fmt.Errorf("want a string, got %.40s", raw)
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// members calls fn with every top-level member of the JSON object b: its
// key, unescaped, and its value's raw bytes. b was checked by the Decoder,
// so only its outline is followed here.
func members(b []byte, fn func(key, raw []byte) error) error {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return fmt.Errorf("%w: not an object", errRow)
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for i < len(b) {
		end, escaped := stringEnd(b, i)
		if end < 0 {
			return fmt.Errorf("%w: bad key", errRow)
		}
		key := b[i+1 : end-1]
		if escaped {
			var k string
			if err := json.Unmarshal(b[i:end], &k); err != nil {
				return fmt.Errorf("%w: bad key: %v", errRow, err)
			}
			key = []byte(k)
		}
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return fmt.Errorf("%w: no colon after a key", errRow)
		}
		i = skipWS(b, i+1)
		vend := valueEnd(b, i)
		if vend < 0 {
			return fmt.Errorf("%w: bad value of %s", errRow, key)
		}
		if err := fn(key, b[i:vend]); err != nil {
			return err
		}
		i = skipWS(b, vend)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return nil
		}
		break
	}
	return fmt.Errorf("%w: unterminated object", errRow)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the offset past the JSON string at b[i] and whether it
// holds an escape, or -1.
func stringEnd(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return -1, false
	}
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, false
}

// valueEnd returns the offset past the JSON value at b[i], or -1.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := stringEnd(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := stringEnd(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\r' && b[j] != '\n' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// appendBatch bounds the rows a check worker gathers before it hands
// them to the sink: enough to pay the channel once per DuckDB vector.
const appendBatch = 2048

// typedRow is one row for the table of its plan.
type typedRow struct {
	plan *tablePlan
	vals []driver.Value
}

// sink puts checked rows into DuckDB with its Appender as the check goes
// on, so that a load neither writes a copy of its input to disk for
// read_json (the staging it did before: 446 MB of temporary files for
// 380 MB of input) nor makes DuckDB parse every line's JSON a second time.
// One goroutine owns the connection's appenders, one per event type, inside
// the load's transaction: a refused load rolls back what they appended.
type sink struct {
	rows chan []typedRow
	done chan struct{}
	err  error
}

// openSink starts appending, on conn, within its open transaction.
func openSink(ctx context.Context, conn *sql.Conn) *sink {
	s := &sink{rows: make(chan []typedRow, 4), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.err = conn.Raw(func(dc any) error {
			c, ok := dc.(driver.Conn)
			if !ok {
				return fmt.Errorf("load: the DuckDB driver gave no connection")
			}
			apps := map[trajectory.EventType]*duckdb.Appender{}
			var err error
			for batch := range s.rows {
				if err != nil {
					continue // drain, so that the workers never block
				}
				err = appendRows(c, apps, batch)
			}
			for _, a := range apps {
				err = errors.Join(err, a.Close())
			}
			return err
		})
		if s.err != nil {
			s.err = fmt.Errorf("load: append to DuckDB: %w", s.err)
		}
	}()
	return s
}

// appendRows appends batch, creating the appender of a table on its first
// row.
func appendRows(c driver.Conn, apps map[trajectory.EventType]*duckdb.Appender, batch []typedRow) error {
	for _, r := range batch {
		a := apps[r.plan.typ]
		if a == nil {
			types := make([]duckdb.TypeInfo, len(r.plan.types))
			for i, t := range r.plan.types {
				ti, err := duckdb.NewTypeInfo(t)
				if err != nil {
					return err
				}
				types[i] = ti
			}
			var err error
			if a, err = duckdb.NewQueryAppender(c, r.plan.query, "", types, nil); err != nil {
				return fmt.Errorf("%s: %w", typeTable(r.plan.typ), err)
			}
			apps[r.plan.typ] = a
		}
		if err := a.AppendRow(r.vals...); err != nil {
			return fmt.Errorf("%s: %w", typeTable(r.plan.typ), err)
		}
	}
	return nil
}

// put hands a batch to the sink. It returns false once the sink failed.
func (s *sink) put(ctx context.Context, batch []typedRow) bool {
	select {
	case s.rows <- batch:
		return true
	case <-s.done:
		return false
	case <-ctx.Done():
		return false
	}
}

// close flushes what is appended and returns the first error.
func (s *sink) close() error {
	close(s.rows)
	<-s.done
	return s.err
}

// rowWriter gathers one check worker's rows into batches for the sink.
type rowWriter struct {
	ctx   context.Context
	sink  *sink
	batch []typedRow
}

// write adds the checked line of an event of type typ, read from file
// at lineNo.
func (w *rowWriter) write(typ trajectory.EventType, line []byte, file string, lineNo int) error {
	p := plans()[typ]
	if p == nil {
		return fmt.Errorf("%w: no table for event type %q", errRow, typ)
	}
	vals, err := p.row(line, file, lineNo)
	if err != nil {
		return err
	}
	w.batch = append(w.batch, typedRow{plan: p, vals: vals})
	if len(w.batch) >= appendBatch {
		return w.flush()
	}
	return nil
}

// flush hands the gathered rows to the sink.
func (w *rowWriter) flush() error {
	if len(w.batch) == 0 {
		return nil
	}
	b := w.batch
	w.batch = make([]typedRow, 0, appendBatch)
	if !w.sink.put(w.ctx, b) {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		return errors.New("DuckDB stopped taking rows")
	}
	return nil
}
