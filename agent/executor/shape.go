package executor

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/agent/tools"
)

// defaultEmptyOutput is said when a tool declares no text of its own: an
// empty tool_result leaves the model unable to tell "nothing found" from
// "broken".
const defaultEmptyOutput = "(the tool succeeded with no output)"

// noticeReserve keeps room in the limit for the truncation notice.
const noticeReserve = 200

// shape runs stage 8 on a call's output: explicit text for empty (or
// blank) output,
// and over the tool's limit head 70 % and tail 30 % with the omitted count,
// the full output spilled to the blob store and the way to read it back. An output over the limit is redacted whole before it
// is cut: a secret cut in two is no longer recognised, and its pieces
// would reach the trajectory and the model's context.
func (c *call) shape(o *outcome) {
	o.bytes = len(o.text)
	// Output of blanks and newlines alone tells the model no more than
	// none (an echo, a command that prints a newline).
	if strings.TrimSpace(o.text) == "" && o.kind == "" {
		o.text = c.spec.EmptyOutput
		if o.text == "" {
			o.text = defaultEmptyOutput
		}
		return
	}
	m := c.measure()
	if m.budget <= 0 {
		return
	}
	// Every character costs at most one unit, so text of no more bytes
	// than the budget fits without counting (the fast path).
	if len(o.text) <= m.budget {
		return
	}
	n := m.of(o.text)
	if n <= m.budget {
		return
	}
	if red := string(c.ex.cfg.Blobs.Redact([]byte(o.text))); red != o.text {
		o.text = red
		if n = m.of(red); n <= m.budget {
			return
		}
	}
	head := m.budget * 7 / 10
	tail := max(m.budget-head-noticeReserve, 0)
	full := o.text
	chars := utf8.RuneCountInString(full)
	o.trunc = true
	var where string
	if ref, path, err := c.ex.cfg.Blobs.Put([]byte(full)); err == nil {
		o.spill = ref
		where = fmt.Sprintf("The full output (%d characters) was saved to %s; use the read tool with offset and limit to see the part you need.", chars, path)
	} else {
		where = fmt.Sprintf("The full output (%d characters) could not be saved (%v); run a narrower command to see the omitted part.", chars, err)
	}
	first, last := prefixCost(full, head, m.cost), suffixCost(full, tail, m.cost)
	headChars, tailChars := utf8.RuneCountInString(first), utf8.RuneCountInString(last)
	omitted := chars - headChars - tailChars
	limit := ""
	if m.tokens {
		limit = fmt.Sprintf(" The limit is %d estimated tokens; the output is about %d.", m.budget/4, (n+3)/4)
	}
	o.text = fmt.Sprintf("%s\n\n… [%d characters omitted] …\n\n%s\n\n[Output truncated: showing the first %d and the last %d of %d characters.%s %s]",
		first, omitted, last, headChars, tailChars, chars, limit, where)
}

// measure is how a tool's output limit counts: characters (ResultLimit),
// or quarters of an estimated token (ResultTokens, tools.QuarterTokens).
// noticeReserve is 200 units either way: 200 characters, or 50 tokens.
type measure struct {
	budget int
	tokens bool
	cost   func(rune) int
}

func (c *call) measure() measure {
	if t := c.spec.ResultTokens; t > 0 {
		return measure{budget: t * 4, tokens: true, cost: tools.RuneQuarterTokens}
	}
	return measure{budget: c.spec.ResultLimit, cost: func(rune) int { return 1 }}
}

// of is the cost of s.
func (m measure) of(s string) int {
	if m.tokens {
		return tools.QuarterTokens(s)
	}
	return utf8.RuneCountInString(s)
}

// prefixCost is the longest prefix of s that costs at most budget.
func prefixCost(s string, budget int, cost func(rune) int) string {
	spent := 0
	for pos, r := range s {
		if spent += cost(r); spent > budget {
			return s[:pos]
		}
	}
	return s
}

// suffixCost is the longest suffix of s that costs at most budget.
func suffixCost(s string, budget int, cost func(rune) int) string {
	spent := 0
	for pos := len(s); pos > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:pos])
		if spent += cost(r); spent > budget {
			return s[pos:]
		}
		pos -= size
	}
	return s
}
