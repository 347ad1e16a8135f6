package scenarios

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// A threshold is one line of expect.metrics: an aggregate over a
// scenario's runs, a comparison and a number. The grammar (doc.go says
// what each function and subject means):
//
//	threshold  = aggregate comparison number [unit]
//	aggregate  = function "(" subject { "," key "=" value } ")"
//	function   = "p50" | "p90" | "p95" | "p99" | "mean" | "min" | "max" | "rate" | "count"
//	comparison = "<" | "<=" | ">" | ">=" | "==" | "!="
//	number     = digit { digit } [ "." digit { digit } ]
//	unit       = "ms" | "s" | "m"   (a duration)   | "%"   (a rate)
//	subject, key, value = a name: a letter or _ then letters, digits, _ . : -
//
// Spaces may stand between tokens, but not between a number and its unit.

// Func is a threshold's aggregate function.
type Func string

// The functions.
const (
	FuncP50   Func = "p50"
	FuncP90   Func = "p90"
	FuncP95   Func = "p95"
	FuncP99   Func = "p99"
	FuncMean  Func = "mean"
	FuncMin   Func = "min"
	FuncMax   Func = "max"
	FuncRate  Func = "rate"
	FuncCount Func = "count"
)

var funcs = []Func{FuncP50, FuncP90, FuncP95, FuncP99, FuncMean, FuncMin, FuncMax, FuncRate, FuncCount}

// quantile returns the percentile a pN function takes (0.95), or 0.
func (f Func) quantile() float64 {
	switch f {
	case FuncP50:
		return 0.5
	case FuncP90:
		return 0.9
	case FuncP95:
		return 0.95
	case FuncP99:
		return 0.99
	}
	return 0
}

// minSamples is the fewest samples the function decides on: a pN needs
// 1/(1-N) of them (p95: 20), below which it is only the largest sample.
func (f Func) minSamples() int {
	if q := f.quantile(); q > 0 {
		return int(math.Round(1 / (1 - q)))
	}
	return 1
}

// The subjects of pN, mean, min and max. Any other name is a tool: p95(bash)
// is p95(duration, tool=bash).
const (
	// SubjectDuration is a tool call's own run time (tool_end duration_ms).
	SubjectDuration = "duration"
	// SubjectModelDuration is a model response's time (model_response duration_ms).
	SubjectModelDuration = "model_duration"
	// SubjectContextTokens and SubjectOutputTokens are per model response.
	SubjectContextTokens = "context_tokens"
	SubjectOutputTokens  = "output_tokens"
	// SubjectTurns is a run's model turns.
	SubjectTurns = "turns"
	// SubjectToolCalls is a run's tool calls.
	SubjectToolCalls = "tool_calls"
)

var quantities = []string{SubjectDuration, SubjectModelDuration, SubjectContextTokens, SubjectOutputTokens, SubjectTurns, SubjectToolCalls}

// rateSubjects are what rate() counts among the tool calls.
var rateSubjects = []string{"failure", "success", "lost", "truncated", "spilled", "denied", "prompted"}

// countKeys are the columns of the events view count() may filter on.
var countKeys = []string{"tool", "failure_kind", "defense", "action", "kind", "source", "reason", "stop_reason"}

// Threshold is one parsed metric threshold.
type Threshold struct {
	Func    Func
	Subject string
	// Filters narrow what is aggregated, in the order written.
	Filters []ThresholdFilter
	Op      string
	// Limit is the number compared with, in the aggregate's unit:
	// milliseconds for a duration, a fraction for a rate.
	Limit float64
	// Number is the number as written, in Unit; Unit is the unit as
	// written ("" when none).
	Number float64
	Unit   string
}

// ThresholdFilter is one key=value of an aggregate.
type ThresholdFilter struct {
	Key, Value string
}

// filter returns the value of key, or "".
func (t *Threshold) filter(key string) string {
	for _, f := range t.Filters {
		if f.Key == key {
			return f.Value
		}
	}
	return ""
}

// isDuration reports whether the aggregate is a time in milliseconds.
func (t *Threshold) isDuration() bool {
	return t.Func != FuncRate && t.Func != FuncCount && (t.Subject == SubjectDuration || t.Subject == SubjectModelDuration)
}

// String writes the threshold back in canonical form; it parses to an
// equal Threshold.
func (t *Threshold) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s(%s", t.Func, t.Subject)
	for _, f := range t.Filters {
		fmt.Fprintf(&b, ", %s=%s", f.Key, f.Value)
	}
	fmt.Fprintf(&b, ") %s %s%s", t.Op, strconv.FormatFloat(t.Number, 'f', -1, 64), t.Unit)
	return b.String()
}

// holds compares a value with the limit.
func (t *Threshold) holds(v float64) bool {
	switch t.Op {
	case "<":
		return v < t.Limit
	case "<=":
		return v <= t.Limit
	case ">":
		return v > t.Limit
	case ">=":
		return v >= t.Limit
	case "==":
		return v == t.Limit
	}
	return v != t.Limit
}

// ExprError is one thing wrong in a threshold, at a column of it (from 1).
type ExprError struct {
	Col int
	Msg string
}

// Error formats the error as col N: what is wrong.
func (e *ExprError) Error() string { return fmt.Sprintf("col %d: %s", e.Col, e.Msg) }

// ExprErrors lists every problem of one threshold.
type ExprErrors []*ExprError

// Error lists the problems, separated by semicolons.
func (es ExprErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "; ")
}

// ErrThreshold is wrapped by the errors of ParseThreshold.
var ErrThreshold = errors.New("bad metric threshold")

// Unwrap returns ErrThreshold.
func (es ExprErrors) Unwrap() error { return ErrThreshold }

// ParseThreshold parses one threshold. A syntax error stops the parse;
// the meaning (function, subject, filters, unit) is then checked in
// full, so that every such problem is listed. The error is ExprErrors.
func ParseThreshold(src string) (*Threshold, error) {
	p := &exprParser{src: src}
	t := p.threshold()
	if len(p.errs) == 0 {
		p.check(t)
	}
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return t, nil
}

type token struct {
	kind string // "name", "number", "op", "(", ")", ",", "=", "eof"
	text string
	col  int
}

type exprParser struct {
	src  string
	pos  int
	tok  token
	errs ExprErrors
	// cols remembers where the parts of the threshold were written.
	funcCol, subjectCol, unitCol, numCol int
	filterCols                           []int
}

func (p *exprParser) errorf(col int, format string, args ...any) {
	p.errs = append(p.errs, &ExprError{Col: col, Msg: fmt.Sprintf(format, args...)})
}

func isNameStart(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

func isNameByte(c byte) bool {
	return isNameStart(c) || c >= '0' && c <= '9' || c == '.' || c == ':' || c == '-'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// next reads the next token into p.tok.
func (p *exprParser) next() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
	start := p.pos
	col := start + 1
	if p.pos >= len(p.src) {
		p.tok = token{kind: "eof", col: col}
		return
	}
	c := p.src[p.pos]
	switch {
	case isNameStart(c):
		for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
			p.pos++
		}
		p.tok = token{kind: "name", text: p.src[start:p.pos], col: col}
	case isDigit(c):
		for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
			p.pos++
		}
		if p.pos+1 < len(p.src) && p.src[p.pos] == '.' && isDigit(p.src[p.pos+1]) {
			p.pos++
			for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
				p.pos++
			}
		}
		p.tok = token{kind: "number", text: p.src[start:p.pos], col: col}
	case c == '<' || c == '>' || c == '=' || c == '!':
		p.pos++
		if p.pos < len(p.src) && p.src[p.pos] == '=' {
			p.pos++
		}
		text := p.src[start:p.pos]
		kind := "op"
		switch text {
		case "=":
			kind = "="
		case "!":
			kind = "bad"
		}
		p.tok = token{kind: kind, text: text, col: col}
	case c == '(' || c == ')' || c == ',' || c == '%':
		p.pos++
		p.tok = token{kind: string(c), text: string(c), col: col}
	default:
		// One rune, whatever its width, so the message quotes it whole.
		r := []rune(p.src[start:])[0]
		p.pos += len(string(r))
		p.tok = token{kind: "bad", text: string(r), col: col}
	}
}

// describe names a token in a message.
func (t token) describe() string {
	switch t.kind {
	case "eof":
		return "the end"
	case "name", "number":
		return fmt.Sprintf("%s %q", t.kind, t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

// expect checks the current token's kind, reporting what was wanted.
func (p *exprParser) expect(kind, want string) (token, bool) {
	t := p.tok
	if t.kind != kind {
		p.errorf(t.col, "want %s, got %s", want, t.describe())
		return t, false
	}
	p.next()
	return t, true
}

func (p *exprParser) threshold() *Threshold {
	t := &Threshold{}
	p.next()
	fn, ok := p.expect("name", "a function such as p95, rate or count")
	if !ok {
		return t
	}
	t.Func, p.funcCol = Func(fn.text), fn.col
	if _, ok := p.expect("(", `"(" after `+fn.text); !ok {
		return t
	}
	sub, ok := p.expect("name", "what to aggregate, such as a tool name, turns or failure")
	if !ok {
		return t
	}
	t.Subject, p.subjectCol = sub.text, sub.col
	for p.tok.kind == "," {
		p.next()
		key, ok := p.expect("name", "a filter such as tool=bash")
		if !ok {
			return t
		}
		if _, ok := p.expect("=", `"=" after `+key.text); !ok {
			return t
		}
		val, ok := p.expect("name", "the value of "+key.text)
		if !ok {
			return t
		}
		t.Filters = append(t.Filters, ThresholdFilter{Key: key.text, Value: val.text})
		p.filterCols = append(p.filterCols, key.col)
	}
	if _, ok := p.expect(")", `"," or ")"`); !ok {
		return t
	}
	op, ok := p.expect("op", "a comparison: <, <=, >, >=, == or !=")
	if !ok {
		return t
	}
	t.Op = op.text
	num, ok := p.expect("number", "a number to compare with")
	if !ok {
		return t
	}
	v, err := strconv.ParseFloat(num.text, 64)
	if err != nil || math.IsInf(v, 0) {
		p.errorf(num.col, "number %q is out of range", num.text)
		return t
	}
	t.Limit, t.Number, p.numCol = v, v, num.col
	// A unit follows its number directly.
	end := num.col - 1 + len(num.text)
	if (p.tok.kind == "name" || p.tok.kind == "%") && p.tok.col-1 == end {
		t.Unit, p.unitCol = p.tok.text, p.tok.col
		p.next()
	}
	if p.tok.kind != "eof" {
		p.errorf(p.tok.col, "want the end of the threshold, got %s", p.tok.describe())
	}
	return t
}

// check checks the meaning of a threshold that parsed, listing every
// problem, and converts the limit to the aggregate's unit.
func (p *exprParser) check(t *Threshold) {
	if !slices.Contains(funcs, t.Func) {
		p.errorf(p.funcCol, "unknown function %q; use p50, p90, p95, p99, mean, min, max, rate or count", t.Func)
		return
	}
	var keys []string
	switch t.Func {
	case FuncRate:
		if !slices.Contains(rateSubjects, t.Subject) {
			p.errorf(p.subjectCol, "rate(%s): rate counts %s among the tool calls", t.Subject, strings.Join(rateSubjects, ", "))
		}
		keys = []string{"tool"}
		if t.Subject == "failure" {
			keys = append(keys, "failure_kind")
		}
	case FuncCount:
		if !trajectory.EventType(t.Subject).Valid() {
			p.errorf(p.subjectCol, "count(%s): count takes an event type, such as tool_call, tool_failure or defense_trigger", t.Subject)
		}
		keys = countKeys
	default:
		switch {
		case slices.Contains(quantities, t.Subject):
		case trajectory.IsToolName(t.Subject):
			// p95(bash) is p95(duration, tool=bash).
			t.Filters = append([]ThresholdFilter{{Key: "tool", Value: t.Subject}}, t.Filters...)
			p.filterCols = append([]int{p.subjectCol}, p.filterCols...)
			t.Subject = SubjectDuration
		default:
			p.errorf(p.subjectCol, "%s(%s): give a tool name or one of %s", t.Func, t.Subject, strings.Join(quantities, ", "))
		}
		if t.Subject == SubjectDuration || t.Subject == SubjectToolCalls {
			keys = []string{"tool"}
		}
	}
	seen := map[string]bool{}
	for i, f := range t.Filters {
		switch {
		case !slices.Contains(keys, f.Key) && len(keys) == 0:
			p.errorf(p.filterCols[i], "%s(%s) takes no filter, got %s=", t.Func, t.Subject, f.Key)
		case !slices.Contains(keys, f.Key):
			p.errorf(p.filterCols[i], "%s(%s): unknown filter %q; the filters are %s", t.Func, t.Subject, f.Key, strings.Join(keys, ", "))
		case seen[f.Key]:
			p.errorf(p.filterCols[i], "filter %s is given twice", f.Key)
		case f.Key == "tool" && !trajectory.IsToolName(f.Value):
			p.errorf(p.filterCols[i], "tool=%s is not a tool name", f.Value)
		case f.Key == "failure_kind" && !trajectory.FailureKind(f.Value).Valid():
			p.errorf(p.filterCols[i], "failure_kind=%s is not a failure kind", f.Value)
		}
		seen[f.Key] = true
	}
	switch {
	case t.isDuration():
		switch t.Unit {
		case "ms":
		case "s":
			t.Limit *= 1000
		case "m":
			t.Limit *= 60000
		case "":
			p.errorf(p.numCol, "a duration needs a unit: ms, s or m (e.g. 2s)")
		default:
			p.errorf(p.unitCol, "unknown unit %q; a duration takes ms, s or m", t.Unit)
		}
	case t.Func == FuncRate:
		switch t.Unit {
		case "%":
			t.Limit /= 100
		case "":
		default:
			p.errorf(p.unitCol, "a rate takes a fraction (0.1) or a percentage (10%%), not %q", t.Unit)
		}
		if t.Limit > 1 {
			p.errorf(p.numCol, "a rate is at most 1 (100%%)")
		}
	case t.Unit != "":
		p.errorf(p.unitCol, "%s(%s) is a plain number; drop the unit %q", t.Func, t.Subject, t.Unit)
	}
	if math.IsInf(t.Limit, 0) {
		p.errorf(p.numCol, "number %s%s is out of range", strconv.FormatFloat(t.Number, 'f', -1, 64), t.Unit)
	}
}
