package metrics

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// An aggregate names one number computed over loaded runs, the same way
// wherever it is written: in an eval scenario's expect.metrics thresholds
// (p95(bash) < 2s) and in retrace diff's rows and gates
// (p95(bash) <= 1.2*base). The grammar:
//
//	aggregate  = function "(" subject { "," key "=" value } ")"
//	function   = "p50" | "p90" | "p95" | "p99" | "mean" | "min" | "max" | "sum" | "rate" | "count"
//	subject, key, value = a name: a letter or _ then letters, digits, _ . : -
//
// pN, mean, min, max and sum take a tool's name (p95(bash) is
// p95(duration, tool=bash)) or one of duration, model_duration,
// context_tokens, output_tokens (per model response), turns, tool_calls,
// defense_triggers and cost_usd (per session; cost.go). rate takes what it counts among
// the tool calls (failure, success, lost, truncated, spilled, denied,
// prompted), or completed (sessions that ended with end_turn, among the
// sessions). rate(failure) and rate(success) take among=executed to count
// among the calls that ran (tool_calls.ran: the tool's code started; a
// denied or refused call did not) instead of all calls. count takes an
// event type. Every term is read from the one definition in the views
// (doc.go's glossary), never derived here: a duration is a call's
// latency (tool_calls.duration_ms, NULL for a call that did not run).

// Func is an aggregate's function.
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
	FuncSum   Func = "sum"
	FuncRate  Func = "rate"
	FuncCount Func = "count"
)

var funcs = []Func{FuncP50, FuncP90, FuncP95, FuncP99, FuncMean, FuncMin, FuncMax, FuncSum, FuncRate, FuncCount}

// Quantile returns the percentile a pN function takes (0.95), or 0.
func (f Func) Quantile() float64 {
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

// MinSamples is the fewest samples the function decides on: a pN needs
// 1/(1-N) of them (p95: 20), below which it is only the largest sample.
func (f Func) MinSamples() int {
	if q := f.Quantile(); q > 0 {
		return int(math.Round(1 / (1 - q)))
	}
	return 1
}

// The subjects of pN, mean, min and max. Any other name is a tool: p95(bash)
// is p95(duration, tool=bash).
const (
	// SubjectDuration is a tool call's latency: the own run time of a
	// call that ran (tool_calls.duration_ms); a call that did not run is
	// no sample.
	SubjectDuration = "duration"
	// SubjectModelDuration is a model response's time (model_response duration_ms).
	SubjectModelDuration = "model_duration"
	// SubjectContextTokens and SubjectOutputTokens are per model response.
	SubjectContextTokens = "context_tokens"
	SubjectOutputTokens  = "output_tokens"
	// SubjectTurns is a session's model turns.
	SubjectTurns = "turns"
	// SubjectToolCalls is a session's tool calls.
	SubjectToolCalls = "tool_calls"
	// SubjectDefenseTriggers is a session's defense_trigger events.
	SubjectDefenseTriggers = "defense_triggers"
)

var quantities = []string{SubjectDuration, SubjectModelDuration, SubjectContextTokens, SubjectOutputTokens, SubjectTurns, SubjectToolCalls, SubjectDefenseTriggers, SubjectCostUSD}

// RateCompleted is the rate subject counted among sessions: those that
// ended with end_turn.
const RateCompleted = "completed"

// rateSubjects are what rate() counts among the tool calls, then among
// the sessions.
var rateSubjects = []string{"failure", "success", "lost", "truncated", "spilled", "denied", "prompted", RateCompleted}

// countKeys are the columns of the events view count() may filter on.
var countKeys = []string{"tool", "failure_kind", "defense", "action", "kind", "source", "reason", "stop_reason"}

// AmongExecuted is the value of the among filter that counts a rate among
// the calls that ran (tool_calls.ran), the glossary's "ran".
const AmongExecuted = "executed"

// Filter is one key=value of an aggregate.
type Filter struct {
	Key, Value string
}

// Aggregate is one parsed aggregate.
type Aggregate struct {
	Func    Func
	Subject string
	// Filters narrow what is aggregated, in the order written.
	Filters []Filter
}

// Filter returns the value of key, or "".
func (a *Aggregate) Filter(key string) string {
	for _, f := range a.Filters {
		if f.Key == key {
			return f.Value
		}
	}
	return ""
}

// IsDuration reports whether the aggregate is a time in milliseconds.
func (a *Aggregate) IsDuration() bool {
	return a.Func != FuncRate && a.Func != FuncCount && (a.Subject == SubjectDuration || a.Subject == SubjectModelDuration)
}

// PerSession reports whether the aggregate takes one number per session
// (turns, tool_calls, defense_triggers, cost_usd, or a rate of completed
// sessions).
func (a *Aggregate) PerSession() bool {
	switch a.Subject {
	case SubjectTurns, SubjectToolCalls, SubjectDefenseTriggers, SubjectCostUSD, RateCompleted:
		return true
	}
	return false
}

// String writes the aggregate in canonical form; it parses to an equal
// Aggregate.
func (a *Aggregate) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s(%s", a.Func, a.Subject)
	for _, f := range a.Filters {
		fmt.Fprintf(&b, ", %s=%s", f.Key, f.Value)
	}
	b.WriteString(")")
	return b.String()
}

// Unit names the unit of the aggregate's values: ms for a duration,
// fraction for a rate, tokens, usd, or "" for a count.
func (a *Aggregate) Unit() string {
	switch {
	case a.Func != FuncRate && a.Func != FuncCount && a.Subject == SubjectCostUSD:
		return "usd"
	case a.IsDuration():
		return "ms"
	case a.Func == FuncRate:
		return "fraction"
	case a.Func != FuncCount && (a.Subject == SubjectContextTokens || a.Subject == SubjectOutputTokens):
		return "tokens"
	}
	return ""
}

// ExprError is one thing wrong in an expression, at a column of it (from 1).
type ExprError struct {
	Col int
	Msg string
}

// Error formats the error as col N: what is wrong.
func (e *ExprError) Error() string { return fmt.Sprintf("col %d: %s", e.Col, e.Msg) }

// ExprErrors lists every problem of one expression.
type ExprErrors []*ExprError

// Error lists the problems, separated by semicolons.
func (es ExprErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "; ")
}

// ErrExpr is wrapped by every ExprErrors.
var ErrExpr = errors.New("bad metric expression")

// Unwrap returns ErrExpr.
func (es ExprErrors) Unwrap() error { return ErrExpr }

// ParseAggregate parses a text that is one aggregate and nothing else.
// The error is ExprErrors.
func ParseAggregate(src string) (*Aggregate, error) {
	p := NewExprParser(src)
	a := p.Aggregate()
	if len(p.Errs) == 0 && p.Tok.Kind != "eof" {
		p.Errorf(p.Tok.Col, "want the end of the aggregate, got %s", p.Tok.Describe())
	}
	if len(p.Errs) == 0 {
		p.CheckAggregate(a)
	}
	if len(p.Errs) > 0 {
		return nil, p.Errs
	}
	return a, nil
}

// Token is one token of an expression.
type Token struct {
	// Kind is "name", "number", "op", "(", ")", ",", "=", "%", "*", "+",
	// "-", "bad" or "eof".
	Kind string
	Text string
	// Col is the column of its first byte, from 1.
	Col int
}

// Describe names a token in a message.
func (t Token) Describe() string {
	switch t.Kind {
	case "eof":
		return "the end"
	case "name", "number":
		return fmt.Sprintf("%s %q", t.Kind, t.Text)
	}
	return fmt.Sprintf("%q", t.Text)
}

// ExprParser reads an aggregate, and whatever a caller's grammar puts
// around it (a threshold's comparison and number, a gate's right-hand
// side), from one line. Tok is the current token; Errs collects problems.
type ExprParser struct {
	src  string
	pos  int
	Tok  Token
	Errs ExprErrors
	// Where the parts of the last aggregate were written.
	funcCol, subjectCol int
	filterCols          []int
}

// NewExprParser returns a parser positioned on the first token of src.
func NewExprParser(src string) *ExprParser {
	p := &ExprParser{src: src}
	p.Next()
	return p
}

// Errorf records a problem at col.
func (p *ExprParser) Errorf(col int, format string, args ...any) {
	p.Errs = append(p.Errs, &ExprError{Col: col, Msg: fmt.Sprintf(format, args...)})
}

func isNameStart(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

func isNameByte(c byte) bool {
	return isNameStart(c) || c >= '0' && c <= '9' || c == '.' || c == ':' || c == '-'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// Next reads the next token into p.Tok.
func (p *ExprParser) Next() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
	start := p.pos
	col := start + 1
	if p.pos >= len(p.src) {
		p.Tok = Token{Kind: "eof", Col: col}
		return
	}
	c := p.src[p.pos]
	switch {
	case isNameStart(c):
		for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
			p.pos++
		}
		p.Tok = Token{Kind: "name", Text: p.src[start:p.pos], Col: col}
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
		p.Tok = Token{Kind: "number", Text: p.src[start:p.pos], Col: col}
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
		p.Tok = Token{Kind: kind, Text: text, Col: col}
	case c == '(' || c == ')' || c == ',' || c == '%' || c == '*' || c == '+' || c == '-':
		p.pos++
		p.Tok = Token{Kind: string(c), Text: string(c), Col: col}
	default:
		// One rune, whatever its width, so the message quotes it whole.
		r := []rune(p.src[start:])[0]
		p.pos += len(string(r))
		p.Tok = Token{Kind: "bad", Text: string(r), Col: col}
	}
}

// Expect checks the current token's kind, reporting what was wanted, and
// moves past it when it matches.
func (p *ExprParser) Expect(kind, want string) (Token, bool) {
	t := p.Tok
	if t.Kind != kind {
		p.Errorf(t.Col, "want %s, got %s", want, t.Describe())
		return t, false
	}
	p.Next()
	return t, true
}

// Aggregate reads the syntax of an aggregate; a problem is recorded in
// Errs and the parse stops. CheckAggregate checks its meaning.
func (p *ExprParser) Aggregate() *Aggregate {
	a := &Aggregate{}
	p.filterCols = nil
	fn, ok := p.Expect("name", "a function such as p95, rate or count")
	if !ok {
		return a
	}
	a.Func, p.funcCol = Func(fn.Text), fn.Col
	if _, ok := p.Expect("(", `"(" after `+fn.Text); !ok {
		return a
	}
	sub, ok := p.Expect("name", "what to aggregate, such as a tool name, turns or failure")
	if !ok {
		return a
	}
	a.Subject, p.subjectCol = sub.Text, sub.Col
	for p.Tok.Kind == "," {
		p.Next()
		key, ok := p.Expect("name", "a filter such as tool=bash")
		if !ok {
			return a
		}
		if _, ok := p.Expect("=", `"=" after `+key.Text); !ok {
			return a
		}
		val, ok := p.Expect("name", "the value of "+key.Text)
		if !ok {
			return a
		}
		a.Filters = append(a.Filters, Filter{Key: key.Text, Value: val.Text})
		p.filterCols = append(p.filterCols, key.Col)
	}
	p.Expect(")", `"," or ")"`)
	return a
}

// CheckAggregate checks the meaning of the aggregate Aggregate last read,
// listing every problem; p95(bash) becomes p95(duration, tool=bash). It
// returns false when the function is unknown, so that nothing (a unit)
// can be judged against it.
func (p *ExprParser) CheckAggregate(a *Aggregate) bool {
	if !slices.Contains(funcs, a.Func) {
		p.Errorf(p.funcCol, "unknown function %q; use p50, p90, p95, p99, mean, min, max, sum, rate or count", a.Func)
		return false
	}
	var keys []string
	switch a.Func {
	case FuncRate:
		if !slices.Contains(rateSubjects, a.Subject) {
			// The message eval scripts match: completed (among the
			// sessions) is in the doc comment of the grammar.
			p.Errorf(p.subjectCol, "rate(%s): rate counts %s among the tool calls", a.Subject, strings.Join(rateSubjects[:len(rateSubjects)-1], ", "))
		}
		if a.Subject != RateCompleted {
			keys = []string{"tool"}
		}
		if a.Subject == "failure" {
			keys = append(keys, "failure_kind")
		}
		if a.Subject == "failure" || a.Subject == "success" {
			keys = append(keys, "among")
		}
	case FuncCount:
		if !trajectory.EventType(a.Subject).Valid() {
			p.Errorf(p.subjectCol, "count(%s): count takes an event type, such as tool_call, tool_failure or defense_trigger", a.Subject)
		}
		keys = countKeys
	default:
		switch {
		case slices.Contains(quantities, a.Subject):
		case trajectory.IsToolName(a.Subject):
			// p95(bash) is p95(duration, tool=bash).
			a.Filters = append([]Filter{{Key: "tool", Value: a.Subject}}, a.Filters...)
			p.filterCols = append([]int{p.subjectCol}, p.filterCols...)
			a.Subject = SubjectDuration
		default:
			p.Errorf(p.subjectCol, "%s(%s): give a tool name or one of %s", a.Func, a.Subject, strings.Join(quantities, ", "))
		}
		if a.Subject == SubjectDuration || a.Subject == SubjectToolCalls {
			keys = []string{"tool"}
		}
	}
	seen := map[string]bool{}
	for i, f := range a.Filters {
		switch {
		case !slices.Contains(keys, f.Key) && len(keys) == 0:
			p.Errorf(p.filterCols[i], "%s(%s) takes no filter, got %s=", a.Func, a.Subject, f.Key)
		case !slices.Contains(keys, f.Key):
			p.Errorf(p.filterCols[i], "%s(%s): unknown filter %q; the filters are %s", a.Func, a.Subject, f.Key, strings.Join(keys, ", "))
		case seen[f.Key]:
			p.Errorf(p.filterCols[i], "filter %s is given twice", f.Key)
		case f.Key == "tool" && !trajectory.IsToolName(f.Value):
			p.Errorf(p.filterCols[i], "tool=%s is not a tool name", f.Value)
		case f.Key == "failure_kind" && !trajectory.FailureKind(f.Value).Valid():
			p.Errorf(p.filterCols[i], "failure_kind=%s is not a failure kind", f.Value)
		case f.Key == "among" && f.Value != AmongExecuted && f.Value != "calls":
			p.Errorf(p.filterCols[i], "among=%s: a rate is among calls (the default) or among=executed (the calls that ran)", f.Value)
		}
		seen[f.Key] = true
	}
	// among=calls is the default: the canonical form leaves it out.
	a.Filters = slices.DeleteFunc(a.Filters, func(f Filter) bool { return f.Key == "among" && f.Value == "calls" })
	return true
}

// Number is a number as written in an expression, with its unit.
type Number struct {
	// Value is the number as written, in Unit; Unit is "" when none.
	Value float64
	Unit  string
	// Col and UnitCol are where the number and the unit were written.
	Col, UnitCol int
}

// String writes the number back as it was written.
func (n Number) String() string { return strconv.FormatFloat(n.Value, 'f', -1, 64) + n.Unit }

// Number reads a number and the unit written right after it; false after
// recording a problem. ConvertNumber gives it the aggregate's unit.
func (p *ExprParser) Number(want string) (Number, bool) {
	num, ok := p.Expect("number", want)
	if !ok {
		return Number{}, false
	}
	v, err := strconv.ParseFloat(num.Text, 64)
	if err != nil || math.IsInf(v, 0) {
		p.Errorf(num.Col, "number %q is out of range", num.Text)
		return Number{}, false
	}
	n := Number{Value: v, Col: num.Col}
	// A unit follows its number directly.
	end := num.Col - 1 + len(num.Text)
	if (p.Tok.Kind == "name" || p.Tok.Kind == "%") && p.Tok.Col-1 == end {
		n.Unit, n.UnitCol = p.Tok.Text, p.Tok.Col
		p.Next()
	}
	return n, true
}

// ConvertNumber converts n to the aggregate's unit (milliseconds for a
// duration, a fraction for a rate), recording a problem and returning
// false when the unit does not fit. capRate refuses a rate above 1 (a
// limit is a rate; a difference from base need not be one).
func (p *ExprParser) ConvertNumber(a *Aggregate, n Number, capRate bool) (float64, bool) {
	before := len(p.Errs)
	limit := n.Value
	switch {
	case a.IsDuration():
		switch n.Unit {
		case "ms":
		case "s":
			limit *= 1000
		case "m":
			limit *= 60000
		case "":
			p.Errorf(n.Col, "a duration needs a unit: ms, s or m (e.g. 2s)")
		default:
			p.Errorf(n.UnitCol, "unknown unit %q; a duration takes ms, s or m", n.Unit)
		}
	case a.Func == FuncRate:
		switch n.Unit {
		case "%":
			limit /= 100
		case "":
		default:
			p.Errorf(n.UnitCol, "a rate takes a fraction (0.1) or a percentage (10%%), not %q", n.Unit)
		}
		if capRate && limit > 1 {
			p.Errorf(n.Col, "a rate is at most 1 (100%%)")
		}
	case n.Unit != "":
		p.Errorf(n.UnitCol, "%s(%s) is a plain number; drop the unit %q", a.Func, a.Subject, n.Unit)
	}
	if math.IsInf(limit, 0) {
		p.Errorf(n.Col, "number %s is out of range", n)
	}
	return limit, len(p.Errs) == before
}

// aggSQL is the SQL aggregate of f over col; a percentile is the latency
// metric's: quantile_cont rounded to the microsecond.
func aggSQL(f Func, col string) string {
	if q := f.Quantile(); q > 0 {
		return fmt.Sprintf("round(quantile_cont(%s, %g), 3)", col, q)
	}
	switch f {
	case FuncMean:
		return "avg(" + col + ")"
	case FuncMin:
		return "min(" + col + ")"
	case FuncSum:
		return "sum(" + col + ")"
	}
	return "max(" + col + ")"
}

// RateCond is the SQL condition over tool_calls that rate(subject)
// counts (over sessions for rate(completed)).
func (a *Aggregate) RateCond() string {
	switch a.Subject {
	case "failure":
		c := "outcome = 'failure'"
		if k := a.Filter("failure_kind"); k != "" {
			c += " AND failure_kind = " + quoteString(k)
		}
		return c
	case "success":
		return "outcome = 'success'"
	case "lost":
		return "outcome = 'lost'"
	case "truncated":
		return "coalesce(truncated, false)"
	case "spilled":
		return "coalesce(spilled, false)"
	case "denied":
		return "permission = 'deny'"
	case RateCompleted:
		return "reason = 'end_turn'"
	}
	return "permission_prompted"
}

// callsWhere is the condition on tool_calls of the aggregate's filters
// (tool, among=executed: the calls that ran) and of cond.
func (a *Aggregate) callsWhere(cond string) string {
	w := []string{"true"}
	if cond != "" {
		w = append(w, "("+cond+")")
	}
	if v := a.Filter("tool"); v != "" {
		w = append(w, "tool = "+quoteString(v))
	}
	if a.Filter("among") == AmongExecuted {
		w = append(w, "ran")
	}
	return strings.Join(w, " AND ")
}

// ValueSQL returns the query of the aggregate over the sessions cond (an
// SQL condition on a session column; "" for all) keeps. Its one row is:
// for a rate, (denominator, numerator); for count, (count); otherwise
// (samples, value), value NULL without samples.
func (a *Aggregate) ValueSQL(cond string) string {
	sessCond := "true"
	if cond != "" {
		sessCond = "(" + cond + ")"
	}
	switch {
	case a.Func == FuncRate && a.Subject == RateCompleted:
		return fmt.Sprintf("SELECT count(*), count(*) FILTER (WHERE %s) FROM sessions WHERE %s", a.RateCond(), sessCond)
	case a.Func == FuncRate:
		return fmt.Sprintf("SELECT count(*), count(*) FILTER (WHERE %s) FROM tool_calls WHERE %s", a.RateCond(), a.callsWhere(cond))
	case a.Func == FuncCount:
		conds := []string{sessCond, "type = " + quoteString(a.Subject)}
		for _, f := range a.Filters {
			conds = append(conds, fmt.Sprintf("%s = %s", f.Key, quoteString(f.Value)))
		}
		return "SELECT count(*) FROM events WHERE " + strings.Join(conds, " AND ")
	}
	return fmt.Sprintf("SELECT count(value), %s FROM (%s)", aggSQL(a.Func, "value"), a.SamplesSQL(cond))
}

// SamplesSQL returns the query of the aggregate's samples over the
// sessions cond keeps, so that a caller can compare or resample them.
// For a rate the rows are (session, hits, total): per session, the calls
// (or the session itself, for completed) counted and in the denominator.
// For count they are (session, value): the session's matching events.
// Otherwise they are (session, value), one per sample: a call's duration
// (latency: only calls that ran, measured), a model response's number,
// or a session's count.
func (a *Aggregate) SamplesSQL(cond string) string {
	sessCond := "true"
	if cond != "" {
		sessCond = "(" + cond + ")"
	}
	switch {
	case a.Func == FuncRate && a.Subject == RateCompleted:
		return fmt.Sprintf("SELECT session, CAST(coalesce(%s, false) AS BIGINT) AS hits, 1 AS total FROM sessions WHERE %s", a.RateCond(), sessCond)
	case a.Func == FuncRate:
		return fmt.Sprintf("SELECT session, count(*) FILTER (WHERE %s) AS hits, count(*) AS total FROM tool_calls WHERE %s GROUP BY session", a.RateCond(), a.callsWhere(cond))
	case a.Func == FuncCount:
		conds := []string{"e.type = " + quoteString(a.Subject)}
		for _, f := range a.Filters {
			conds = append(conds, fmt.Sprintf("e.%s = %s", quoteIdent(f.Key), quoteString(f.Value)))
		}
		return fmt.Sprintf("SELECT s.session, count(e.seq) AS value FROM sessions s LEFT JOIN events e ON e.session = s.session AND %s WHERE %s GROUP BY s.session",
			strings.Join(conds, " AND "), inSessions(sessCond))
	case a.Subject == SubjectDuration:
		return fmt.Sprintf("SELECT session, duration_ms AS value FROM tool_calls WHERE %s AND duration_ms IS NOT NULL", a.callsWhere(cond))
	case a.Subject == SubjectModelDuration:
		return fmt.Sprintf("SELECT session, duration_ms AS value FROM model_turns WHERE %s AND duration_ms IS NOT NULL", sessCond)
	case a.Subject == SubjectContextTokens || a.Subject == SubjectOutputTokens:
		return fmt.Sprintf("SELECT session, %s AS value FROM model_turns WHERE %s AND %s IS NOT NULL", a.Subject, sessCond, a.Subject)
	case a.Subject == SubjectTurns:
		return fmt.Sprintf("SELECT session, turns AS value FROM sessions WHERE %s AND turns IS NOT NULL", sessCond)
	case a.Subject == SubjectCostUSD:
		// A session's cost is unknown (NULL) when one of its responses
		// has no price: never the sum of the others.
		return fmt.Sprintf("SELECT session, CASE WHEN count(*) = count(cost_usd) THEN sum(cost_usd) END AS value FROM model_costs WHERE %s GROUP BY session", sessCond)
	case a.Subject == SubjectDefenseTriggers:
		return fmt.Sprintf("SELECT s.session, count(d.defense) AS value FROM sessions s LEFT JOIN defenses d ON d.session = s.session WHERE %s GROUP BY s.session",
			inSessions(sessCond))
	}
	// tool_calls per session.
	join := ""
	if v := a.Filter("tool"); v != "" {
		join = " AND c.tool = " + quoteString(v)
	}
	return fmt.Sprintf("SELECT s.session, count(c.tool_use_id) AS value FROM sessions s LEFT JOIN tool_calls c ON c.session = s.session%s WHERE %s GROUP BY s.session",
		join, inSessions(sessCond))
}

// inSessions is the condition on s.session that keeps the sessions cond
// (a condition on the sessions view's columns) keeps.
func inSessions(cond string) string {
	if cond == "true" {
		return "true"
	}
	return "s.session IN (SELECT session FROM sessions WHERE " + cond + ")"
}

// CountKeys returns the columns of the events view count() may filter on.
func CountKeys() []string { return slices.Clone(countKeys) }

// ValueNumber reads a value of a query's Table as a float64: a DuckDB number
// of any width, a boolean (1 or 0), or text that parses as one; NULL and
// anything else are not ok.
func ValueNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case nil:
		return 0, false
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
	return f, err == nil
}
