package detectors

import (
	"fmt"
	"slices"

	"github.com/retrace-dev/retrace/trajectory"
)

// repeatedReadOnly finds the same call returning the same result text
// repeatedCallMin times with nothing changed between (no call that
// may change state, other than the repeated one, succeeded), and no
// repeated_readonly defense acting on it: the model re-reads a fact it
// already has, often because two sources of truth disagree (seed §13.9).
// Unlike the defense's own condition (liveness.go), bash counts here: the
// seed's case is git status run eleven times, and the repetition is the
// symptom whether or not the command is provably read-only.
// repeatedCallMin is how many identical observations in a row make a
// repeated_readonly finding: past the guard's threshold (3) and its two
// reminders, since re-reading a file two or three times is ordinary.
const repeatedCallMin = 5

func repeatedReadOnly(d *goDetector, s *Session) []Finding {
	type run struct {
		text  string
		calls []Located
	}
	tools := map[string]trajectory.ToolInfo{}
	acted := map[string]bool{}
	for _, e := range s.Events {
		switch p := e.Payload.(type) {
		case *trajectory.SessionStart:
			for _, t := range p.Tools {
				tools[t.Name] = t
			}
		case *trajectory.DefenseTrigger:
			if p.Defense == trajectory.DefenseRepeatedReadOnly {
				acted[p.ToolUseID] = true
			}
		}
	}
	var out []Finding
	runs := map[string]run{}
	for _, c := range callsWithResults(s) {
		// A denied or failed call observed nothing: only calls that ran
		// and succeeded repeat an observation.
		if !c.found || !c.ok {
			continue
		}
		sig := signature(c.call.Tool, c.call.Input)
		r := runs[sig]
		if len(r.calls) > 0 && r.text == c.text {
			r.calls = append(r.calls, c.at)
		} else {
			r = run{text: c.text, calls: []Located{c.at}}
		}
		if !tools[c.call.Tool].ReadOnly {
			// A call that may change state makes every other repeated
			// observation new again.
			for k := range runs {
				if k != sig {
					delete(runs, k)
				}
			}
		}
		if len(r.calls) >= repeatedCallMin {
			if !slices.ContainsFunc(r.calls, func(e Located) bool { return acted[e.Payload.(*trajectory.ToolCall).ToolUseID] }) {
				f := d.finding(s, fmt.Sprintf("%s ran %d times with the same input and got the same %d-byte result each time (threshold %d), and no repeated_readonly defense acted on any of them",
					c.call.Tool, len(r.calls), len(r.text), repeatedCallMin), r.calls...)
				f.ToolUseID = r.calls[0].Payload.(*trajectory.ToolCall).ToolUseID
				out = append(out, f)
			}
			r = run{}
		}
		runs[sig] = r
	}
	return out
}
