package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/retrace-dev/retrace/compare"
	"github.com/retrace-dev/retrace/harness"
	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/trajectory"
)

// sectionReference holds the recording a run is compared against for
// expect.divergences.
const sectionReference = "reference.jsonl"

// DivergenceExpect bounds how many divergences of one class a run shows
// against the scenario's reference recording, as replay compares a
// replay with its recording (package compare).
type DivergenceExpect struct {
	Place
	Class compare.Class
	// Count bounds the divergences of Class; at least one when the
	// expectation gives no bound.
	Count Bounds
}

// classNames lists the divergence classes for a message.
func classNames() string {
	names := make([]string, len(compare.Classes))
	for i, c := range compare.Classes {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// validClass reports whether c is one of compare's classes.
func validClass(c string) bool { return slices.Contains(compare.Classes, compare.Class(c)) }

// divergences reads expect.divergences: a list of {class: C} with an
// optional count, or min and max.
func (p *parser) divergences(n *yaml.Node, s *Scenario) []DivergenceExpect {
	if n.Kind != yaml.SequenceNode {
		p.at(n, "expect.divergences must be a list, e.g. [{class: tool_output_changed}]")
		return nil
	}
	if s.Reference == nil {
		p.at(n, "expect.divergences: the scenario has no %s section to compare the run against; add one holding the recording (retrace scenario from --keep divergence:CLASS writes it)", sectionReference)
	}
	var out []DivergenceExpect
	for i, c := range n.Content {
		where := fmt.Sprintf("expect.divergences[%d]", i)
		d := DivergenceExpect{Place: p.place(c, where)}
		var k boundKeys
		for _, f := range p.fields(c, where, "class", "count", "min", "max") {
			key := where + "." + f.name
			if f.name == "class" {
				d.Class = compare.Class(p.str(f.val, key))
				if !validClass(string(d.Class)) {
					p.at(f.val, "%s %q is not a divergence class; use one of %s", key, d.Class, classNames())
				}
				continue
			}
			k.set(p, f.name, f.val, key)
		}
		if d.Class == "" && c.Kind == yaml.MappingNode {
			p.at(c, "%s: no class: name one of %s", where, classNames())
		} else {
			d.Count = k.bounds(p, c, where)
		}
		out = append(out, d)
	}
	return out
}

// referenceSection takes the reference recording, refusing one that
// does not decode at its line in the archive.
func (p *parser) referenceSection(s *Scenario, line int, data []byte) {
	s.Reference = data
	if len(p.checkRecording(sectionReference, line, data)) > 1 {
		p.addf(line-1, "%s holds more than one session; give the one recording the run is compared against", sectionReference)
	}
}

// decodeEvents reads a trajectory held in memory.
func decodeEvents(data []byte, name string) ([]trajectory.Event, error) {
	dec := trajectory.NewDecoder(bytes.NewReader(data), name)
	var out []trajectory.Event
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
}

// Divergences compares a run's events against the scenario's reference
// recording with compare.Sessions, the comparison replay makes, the
// reference's workspace (and, for a recording of an eval run, its
// throwaway home) standing for the run's.
func (s *Scenario) Divergences(run []trajectory.Event) (compare.Result, error) {
	ref, err := decodeEvents(s.Reference, s.File+": "+sectionReference)
	if err != nil {
		return compare.Result{}, err
	}
	var opts compare.Options
	old, now := startOf(ref), startOf(run)
	if old != nil && now != nil && old.Workspace != "" && now.Workspace != "" {
		opts.PathRewrites = []compare.PathRewrite{{Old: old.Workspace, New: now.Workspace}}
		if old.Tags[harness.ScenarioTag] != "" && now.Tags[harness.ScenarioTag] != "" {
			// As replay does: an eval run's tools saw a throwaway home
			// beside its workspace.
			opts.PathRewrites = append(opts.PathRewrites, compare.PathRewrite{Old: harness.ScenarioHome(old.Workspace), New: harness.ScenarioHome(now.Workspace)})
		}
	}
	return compare.Sessions(ref, run, opts), nil
}

// startOf is a session's session_start, nil without one.
func startOf(events []trajectory.Event) *trajectory.SessionStart {
	for _, ev := range events {
		if st, ok := ev.Payload.(*trajectory.SessionStart); ok {
			return st
		}
	}
	return nil
}

// classCounts counts a comparison's divergences by class.
func classCounts(r compare.Result) map[compare.Class]int {
	out := map[compare.Class]int{}
	for _, d := range r.Divergences {
		out[d.Class]++
	}
	return out
}

// shownClasses says which classes a comparison found, in report order.
func shownClasses(counts map[compare.Class]int) string {
	var parts []string
	for _, c := range compare.Classes {
		if n := counts[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s ×%d", c, n))
		}
	}
	if len(parts) == 0 {
		return "no divergence"
	}
	return strings.Join(parts, ", ")
}

// checkDivergences checks expect.divergences against the run.
func checkDivergences(s *Scenario, rec *recording) []results.Failure {
	if len(s.Expect.Divergences) == 0 {
		return nil
	}
	run := make([]trajectory.Event, len(rec.events))
	for i, ev := range rec.events {
		run[i] = ev.Event
	}
	res, err := s.Divergences(run)
	if err != nil {
		return []results.Failure{failf(s.Expect.Divergences[0].Place, "the reference recording reads", "", "%v", err)}
	}
	counts := classCounts(res)
	at := ""
	if rec.end != nil {
		at = rec.at(*rec.end)
	}
	var out []results.Failure
	for _, d := range s.Expect.Divergences {
		if n := counts[d.Class]; !d.Count.holds(n) {
			out = append(out, failf(d.Place, fmt.Sprintf("%s %s divergences from %s", d.Count, d.Class, sectionReference), at, "%d (the run shows %s)", n, shownClasses(counts)))
		}
	}
	return out
}
