package detectors

import (
	"fmt"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// callTrace is one call's events as the tool-result detectors read them:
// its tool_call, its outcome (tool_success or tool_failure), its tool_end
// and its tool_result, each with a flag saying whether it was recorded.
type callTrace struct {
	call, outcome, end, result Located
	// index is the position of the tool_result in the session's events,
	// from where the request that carries it is looked for.
	index                         int
	hasOutcome, hasEnd, hasResult bool
}

// traceCalls returns the calls of s in the order of their tool_call, each
// with the events recorded for it. A tool_result without a tool_call is
// left out: no call ran for it.
func traceCalls(s *Session) []*callTrace {
	var out []*callTrace
	byID := map[string]*callTrace{}
	for i, e := range s.Events {
		if c, ok := e.Payload.(*trajectory.ToolCall); ok {
			t := &callTrace{call: e}
			byID[c.ToolUseID] = t
			out = append(out, t)
			continue
		}
		t := byID[trajectory.ToolUseIDOf(e.Payload)]
		if t == nil {
			continue
		}
		switch e.Payload.(type) {
		case *trajectory.ToolSuccess, *trajectory.ToolFailure:
			if !t.hasOutcome {
				t.outcome, t.hasOutcome = e, true
			}
		case *trajectory.ToolEnd:
			if !t.hasEnd {
				t.end, t.hasEnd = e, true
			}
		case *trajectory.ToolResult:
			if !t.hasResult {
				t.result, t.hasResult, t.index = e, true, i
			}
		}
	}
	return out
}

func (t *callTrace) id() string   { return t.call.Payload.(*trajectory.ToolCall).ToolUseID }
func (t *callTrace) tool() string { return t.call.Payload.(*trajectory.ToolCall).Tool }

// resultText returns the text of the call's tool_result event.
func (t *callTrace) resultText() string { return t.result.Payload.(*trajectory.ToolResult).Text }

// sentBlock returns the first model_request after index from that carries
// a tool_result block for id, with the block's content, or false when no
// later request carries one (the session ended before the next request,
// or the request was not recorded).
func sentBlock(s *Session, from int, id string) (Located, string, bool) {
	for _, e := range s.Events[from:] {
		r, ok := e.Payload.(*trajectory.ModelRequest)
		if !ok {
			continue
		}
		for _, m := range r.NewMessages {
			for _, b := range m.Content {
				if b.Type == trajectory.BlockToolResult && b.ToolUseID == id {
					return e, b.Content, true
				}
			}
		}
	}
	return Located{}, "", false
}

// emptyOutputUnexplained finds calls that succeeded and whose tool_result
// is empty: the model cannot tell "nothing found" from "the tool broke"
// or "the output was lost". It is an error when the request
// that sends the result to the model carries the empty block too, since
// then the model certainly saw nothing; a warning when no later request
// carries the block, since then only the tool_result event says so.
func emptyOutputUnexplained(d *goDetector, s *Session, _ Params) []Finding {
	var out []Finding
	for _, t := range callTraces(s) {
		if !t.hasOutcome || !t.hasResult {
			continue
		}
		if _, ok := t.outcome.Payload.(*trajectory.ToolSuccess); !ok {
			continue
		}
		r := t.result.Payload.(*trajectory.ToolResult)
		if r.IsError || strings.TrimSpace(r.Text) != "" {
			continue
		}
		produced := "no output"
		switch {
		case r.Text != "":
			produced = fmt.Sprintf("output of blanks and newlines only (%d bytes), passed on as it was", len(r.Text))
		case t.hasEnd:
			if n := t.end.Payload.(*trajectory.ToolEnd).OutputBytes; n > 0 {
				// The tool printed something and the model got none of it:
				// the output was lost on the way, not merely unexplained.
				produced = fmt.Sprintf("%d bytes of output (tool_end), none of which reached the model", n)
			} else {
				produced = "no output (tool_end output_bytes 0)"
			}
		}
		ev := []Located{t.result, t.outcome}
		if t.hasEnd {
			ev = append(ev, t.end)
		}
		sev, seen := SeverityWarning, "no later model_request carries its tool_result block, so only the tool_result event shows it"
		if req, content, ok := sentBlock(s, t.index+1, t.id()); ok {
			if strings.TrimSpace(content) != "" {
				// The model got text after all; the tool_result event
				// disagrees with the request, which is not this mode.
				continue
			}
			sev, seen = SeverityError, fmt.Sprintf("the request of turn %d sent the model an empty tool_result", req.Turn)
			ev = append(ev, req)
		}
		f := d.finding(s, fmt.Sprintf("%s (%s) succeeded with %s, and its tool_result text is empty or blank, with no \"(no output)\"-style explanation; %s",
			t.id(), t.tool(), produced, seen), ev...)
		f.Severity, f.ToolUseID = sev, t.id()
		out = append(out, f)
	}
	return out
}
