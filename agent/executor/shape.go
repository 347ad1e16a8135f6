package executor

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// defaultEmptyOutput is said when a tool declares no text of its own: an
// empty tool_result leaves the model unable to tell "nothing found" from
// "broken" (seed §9.1).
const defaultEmptyOutput = "(the tool succeeded with no output)"

// noticeReserve keeps room in the limit for the truncation notice.
const noticeReserve = 200

// shape runs stage 8 on a call's output: explicit text for empty (or
// blank) output,
// and over the tool's limit head 70 % and tail 30 % with the omitted count,
// the full output spilled to the blob store and the way to read it back
// (seed §9.2, §9.3). An output over the limit is redacted whole before it
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
	limit := c.spec.ResultLimit
	if limit <= 0 {
		return
	}
	n := utf8.RuneCountInString(o.text)
	if n <= limit {
		return
	}
	if red := string(c.ex.cfg.Blobs.Redact([]byte(o.text))); red != o.text {
		o.text = red
		if n = utf8.RuneCountInString(red); n <= limit {
			return
		}
	}
	head := limit * 7 / 10
	tail := max(limit-head-noticeReserve, 0)
	full := o.text
	o.trunc = true
	var where string
	if ref, path, err := c.ex.cfg.Blobs.Put([]byte(full)); err == nil {
		o.spill = ref
		where = fmt.Sprintf("The full output (%d characters) was saved to %s; use the read tool with offset and limit to see the part you need.", n, path)
	} else {
		where = fmt.Sprintf("The full output (%d characters) could not be saved (%v); run a narrower command to see the omitted part.", n, err)
	}
	omitted := n - head - tail
	o.text = fmt.Sprintf("%s\n\n… [%d characters omitted] …\n\n%s\n\n[Output truncated: showing the first %d and the last %d of %d characters. %s]",
		prefixRunes(full, head), omitted, suffixRunes(full, tail), head, tail, n, where)
}

func prefixRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

func suffixRunes(s string, n int) string {
	if n == 0 {
		return ""
	}
	i := 0
	for pos := len(s); pos > 0; {
		_, size := utf8.DecodeLastRuneInString(s[:pos])
		pos -= size
		i++
		if i == n {
			return s[pos:]
		}
	}
	return s
}
