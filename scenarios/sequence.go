package scenarios

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/trajectory"
)

// SequenceExpect is an ordered list of tool calls a run must make, in
// the order of the recording's tool_call events. Other calls may come
// between two steps, unless Strict: then each step is the call right
// after the previous step's (the first step may be any call).
type SequenceExpect struct {
	Place
	Strict bool
	Steps  []SequenceStep
}

// SequenceStep matches one tool call: its tool, and its input.
type SequenceStep struct {
	Place
	Tool string
	// Input holds keys the input must have with these JSON values;
	// InputContains substrings and InputMatches regular expressions
	// their string values must contain or match.
	Input         map[string]json.RawMessage
	InputContains map[string]string
	InputMatches  map[string]*regexp.Regexp
}

// sequence reads expect.sequence: a list of steps (gaps allowed), or
// {strict: BOOL, steps: [...]}.
func (p *parser) sequence(n *yaml.Node) *SequenceExpect {
	q := &SequenceExpect{Place: p.place(n, "expect.sequence")}
	steps, where := n, "expect.sequence"
	if n.Kind == yaml.MappingNode {
		where = "expect.sequence.steps"
		steps = nil
		for _, f := range p.fields(n, "expect.sequence", "strict", "steps") {
			switch f.name {
			case "strict":
				q.Strict = p.boolean(f.val, "expect.sequence.strict")
			case "steps":
				steps = f.val
			}
		}
		if steps == nil {
			p.at(n, "expect.sequence: no steps: give {strict: true, steps: [{tool: read}, {tool: edit}]}")
			return q
		}
	}
	if steps.Kind != yaml.SequenceNode || len(steps.Content) == 0 {
		p.at(steps, "expect.sequence must be a list of tool calls, e.g. [{tool: read}, {tool: edit, input_contains: {file_path: calc.go}}], or {strict: true, steps: [...]}")
		return q
	}
	for i, c := range steps.Content {
		q.Steps = append(q.Steps, p.step(c, fmt.Sprintf("%s[%d]", where, i)))
	}
	return q
}

func (p *parser) step(n *yaml.Node, where string) SequenceStep {
	st := SequenceStep{Place: p.place(n, where)}
	for _, f := range p.fields(n, where, "tool", "input", "input_contains", "input_matches") {
		key := where + "." + f.name
		switch f.name {
		case "tool":
			st.Tool = p.str(f.val, key)
			if !trajectory.IsToolName(st.Tool) {
				p.at(f.val, "%s %q is not a tool name", key, st.Tool)
			}
		case "input":
			st.Input = p.input(f.val, key)
		case "input_contains":
			st.InputContains = map[string]string{}
			for _, kv := range p.fields(f.val, key, p.keys(f.val)...) {
				st.InputContains[kv.name] = p.str(kv.val, key+"."+kv.name)
			}
		case "input_matches":
			st.InputMatches = map[string]*regexp.Regexp{}
			for _, kv := range p.fields(f.val, key, p.keys(f.val)...) {
				re, err := regexp.Compile(p.str(kv.val, key+"."+kv.name))
				if err != nil {
					p.at(kv.val, "%s.%s: %v", key, kv.name, err)
					continue
				}
				st.InputMatches[kv.name] = re
			}
		}
	}
	if st.Tool == "" && n.Kind == yaml.MappingNode {
		p.at(n, "%s: no tool: name the tool called, e.g. {tool: read}", where)
	}
	return st
}

// matches reports whether a tool call is the step's.
func (st SequenceStep) matches(tc *trajectory.ToolCall) bool {
	if tc.Tool != st.Tool || !inputMatches(tc.Input, EventExpect{Input: st.Input, InputMatches: st.InputMatches}) {
		return false
	}
	if len(st.InputContains) == 0 {
		return true
	}
	var in map[string]any
	if json.Unmarshal(tc.Input, &in) != nil {
		return false
	}
	for k, sub := range st.InputContains {
		s, ok := in[k].(string)
		if !ok || !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// String says the step in words: read with file_path containing "calc".
func (st SequenceStep) String() string {
	var b strings.Builder
	b.WriteString(st.Tool)
	var with []string
	for _, k := range slices.Sorted(maps.Keys(st.Input)) {
		with = append(with, fmt.Sprintf("%s=%s", k, st.Input[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(st.InputContains)) {
		with = append(with, fmt.Sprintf("%s containing %q", k, st.InputContains[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(st.InputMatches)) {
		with = append(with, fmt.Sprintf("%s matching /%s/", k, st.InputMatches[k]))
	}
	if len(with) > 0 {
		b.WriteString(" with " + strings.Join(with, ", "))
	}
	return b.String()
}

// describe says the whole sequence, for a failure's expectation.
func (q *SequenceExpect) describe() string {
	names := make([]string, len(q.Steps))
	for i, st := range q.Steps {
		names[i] = st.Tool
	}
	how := "in this order"
	if q.Strict {
		how = "in this order, one right after another"
	}
	return fmt.Sprintf("tool calls %s %s", strings.Join(names, " → "), how)
}

// checkSequence finds the steps among the run's tool calls, in order. A
// missing step is reported with the call it was looked for after.
func checkSequence(q *SequenceExpect, rec *recording) []results.Failure {
	if q == nil || len(q.Steps) == 0 {
		return nil
	}
	var calls []located
	for _, ev := range rec.events {
		if _, ok := ev.Payload.(*trajectory.ToolCall); ok {
			calls = append(calls, ev)
		}
	}
	call := func(i int) *trajectory.ToolCall { return calls[i].Payload.(*trajectory.ToolCall) }
	// matched[k] is the call index of step k in the best attempt: the one
	// that got furthest (for gaps allowed, the greedy one is best).
	var best []int
	starts := []int{0}
	if q.Strict {
		starts = nil
		for i := range calls {
			if q.Steps[0].matches(call(i)) {
				starts = append(starts, i)
			}
		}
	}
	for _, from := range starts {
		var got []int
		next := from
		for _, st := range q.Steps {
			found := -1
			if q.Strict {
				if next < len(calls) && st.matches(call(next)) {
					found = next
				}
			} else {
				for i := next; i < len(calls); i++ {
					if st.matches(call(i)) {
						found = i
						break
					}
				}
			}
			if found < 0 {
				break
			}
			got = append(got, found)
			next = found + 1
		}
		if len(got) > len(best) {
			best = got
		}
		if len(best) == len(q.Steps) {
			return nil
		}
	}
	k := len(best)
	st := q.Steps[k]
	what := fmt.Sprintf("%s: step %d (%s)", q.describe(), k+1, st)
	var got, at string
	switch {
	case k == 0 && len(calls) == 0:
		got = "the run made no tool call"
		if rec.end != nil {
			at = rec.at(*rec.end)
		}
	case k == 0:
		got = fmt.Sprintf("no call matches it among the run's %d; the first: %s", len(calls), summary(calls[0].Event))
		at = rec.at(calls[0])
	default:
		prev := calls[best[k-1]]
		after := fmt.Sprintf("after step %d, call %d (%s)", k, best[k-1]+1, summary(prev.Event))
		at = rec.at(prev)
		switch n := best[k-1] + 1; {
		case n >= len(calls):
			got = fmt.Sprintf("not found %s: no call came after it", after)
		case q.Strict:
			got = fmt.Sprintf("not found right %s: the next call was %s", after, summary(calls[n].Event))
			at = rec.at(calls[n])
		default:
			got = fmt.Sprintf("not found %s: %d later calls, none matches", after, len(calls)-n)
		}
	}
	return []results.Failure{failf(st.Place, what, at, "%s", got)}
}
