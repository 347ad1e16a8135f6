package detectors

import (
	"fmt"
	"slices"

	"github.com/retrace-dev/retrace/trajectory"
)

// repeatedCallMin is the default of min_repeats.
const repeatedCallMin = 5

// repeatedReadOnly finds the same call returning the same result text
// min_repeats times in a row, no other call between, and no
// repeated_readonly defense acting on any of them: the model re-reads a
// fact it already has, often because two sources of truth disagree.
// Unlike the defense's own condition (liveness.go), bash counts here: the
// typical case is git status run eleven times, and the repetition is the
// symptom whether or not the command is provably read-only.
func repeatedReadOnly(d *goDetector, s *Session, p Params) []Finding {
	limit := p.Int("min_repeats")
	type run struct {
		text  string
		calls []Located
	}
	acted := map[string]bool{}
	for _, e := range s.Events {
		if p, ok := e.Payload.(*trajectory.DefenseTrigger); ok && p.Defense == trajectory.DefenseRepeatedReadOnly {
			acted[p.ToolUseID] = true
		}
	}
	var out []Finding
	var r run
	sig := ""
	for _, c := range callsWithResults(s) {
		// A denied or failed call observed nothing: only calls that ran
		// and succeeded repeat an observation; any other call between
		// two breaks the run.
		if !c.found || !c.ok {
			continue
		}
		next := s.signature(c.call.Tool, c.call.Input)
		if next == sig && r.text == c.text {
			r.calls = append(r.calls, c.at)
		} else {
			sig, r = next, run{text: c.text, calls: []Located{c.at}}
		}
		if len(r.calls) < limit {
			continue
		}
		if !slices.ContainsFunc(r.calls, func(e Located) bool { return acted[e.Payload.(*trajectory.ToolCall).ToolUseID] }) {
			f := d.finding(s, fmt.Sprintf("%s ran %d times in a row with the same input and got the same %d-byte result each time (threshold %d), and no repeated_readonly defense acted on any of them",
				c.call.Tool, len(r.calls), len(r.text), limit), r.calls...)
			f.ToolUseID = r.calls[0].Payload.(*trajectory.ToolCall).ToolUseID
			out = append(out, f)
		}
		sig, r = "", run{}
	}
	return out
}
