package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/trajectory"
)

// failf builds a failure of the expectation at place.
func failf(place Place, what, at, format string, args ...any) results.Failure {
	return results.Failure{Expect: place.String() + ": " + what, Got: fmt.Sprintf(format, args...), At: at}
}

func checkOutcome(o *OutcomeExpect, rec *recording, res results.RunResult) []results.Failure {
	if o == nil {
		return nil
	}
	at := ""
	if rec.end != nil {
		at = rec.at(*rec.end)
	}
	var out []results.Failure
	ended := string(res.Reason)
	if res.EndError != "" {
		ended += " (" + res.EndError + ")"
	}
	if o.Reason != "" && res.Reason != o.Reason {
		out = append(out, failf(o.Place, "the session ends with "+string(o.Reason), at, "it ended with %s", ended))
	}
	if o.ExitCode != nil && res.ExitCode != *o.ExitCode {
		out = append(out, failf(o.Place, fmt.Sprintf("exit code %d", *o.ExitCode), at, "exit code %d: the session ended with %s", res.ExitCode, ended))
	}
	if o.Turns != nil && !o.Turns.holds(res.Turns) {
		out = append(out, failf(o.Place, o.Turns.String()+" turns", at, "%d turns", res.Turns))
	}
	return out
}

// lastTouch names the trajectory line of the last tool call whose input
// names the file rel (file_path or path), else the session's end: where
// to look for what the run did to it.
func lastTouch(rec *recording, rel string) string {
	for i := len(rec.events) - 1; i >= 0; i-- {
		tc, ok := rec.events[i].Payload.(*trajectory.ToolCall)
		if !ok {
			continue
		}
		var in struct {
			FilePath string `json:"file_path"`
			Path     string `json:"path"`
		}
		if json.Unmarshal(tc.Input, &in) == nil && (filepath.ToSlash(filepath.Clean(in.FilePath)) == rel || filepath.ToSlash(filepath.Clean(in.Path)) == rel) {
			return rec.at(rec.events[i])
		}
	}
	if rec.end != nil {
		return rec.at(*rec.end)
	}
	return ""
}

func checkFiles(s *Scenario, ws string, rec *recording) []results.Failure {
	var out []results.Failure
	for _, fe := range s.Expect.Files {
		fs := checkFile(s, fe, ws)
		if len(fs) > 0 {
			at := lastTouch(rec, fe.Path)
			for i := range fs {
				fs[i].At = at
			}
		}
		out = append(out, fs...)
	}
	return out
}

// checkFile checks one file expectation against the workspace after the run.
func checkFile(s *Scenario, fe FileExpect, ws string) []results.Failure {
	data, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(fe.Path)))
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return []results.Failure{failf(fe.Place, fe.Path+" can be read", "", "%v", err)}
	}
	if fe.Exists != nil && exists != *fe.Exists {
		want, got := "exists", "it does not exist"
		if !*fe.Exists {
			want, got = "does not exist", "it exists"
		}
		return []results.Failure{failf(fe.Place, fe.Path+" "+want, "", "after the run %s", got)}
	}
	content := fe.Equals != nil || len(fe.Contains) > 0 || len(fe.Matches) > 0 || fe.Unchanged
	if !exists && content {
		return []results.Failure{failf(fe.Place, fe.Path+"'s content", "", "after the run %s does not exist", fe.Path)}
	}
	var out []results.Failure
	if fe.Equals != nil && string(data) != *fe.Equals {
		out = append(out, failf(fe.Place, fmt.Sprintf("%s equals %q", fe.Path, clip(*fe.Equals)), "", "it holds %q", clip(string(data))))
	}
	for _, c := range fe.Contains {
		if !strings.Contains(string(data), c) {
			out = append(out, failf(fe.Place, fmt.Sprintf("%s contains %q", fe.Path, c), "", "it holds %q", clip(string(data))))
		}
	}
	for _, re := range fe.Matches {
		if !re.Match(data) {
			out = append(out, failf(fe.Place, fmt.Sprintf("%s matches /%s/", fe.Path, re), "", "it holds %q", clip(string(data))))
		}
	}
	if fe.Unchanged && !bytes.Equal(data, s.Files[fe.Path]) {
		out = append(out, failf(fe.Place, fe.Path+" is unchanged", "", "it holds %q, the scenario gave %q", clip(string(data)), clip(string(s.Files[fe.Path]))))
	}
	return out
}

// clip shortens s for a message.
func clip(s string) string {
	const n = 160
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// describe says an event expectation in words.
func (e EventExpect) describe() string {
	var b strings.Builder
	switch e.Kind {
	case KindToolCalled, KindToolNotCalled:
		fmt.Fprintf(&b, "tool %s called", e.Value)
	case KindPermission:
		fmt.Fprintf(&b, "permission %s", e.Value)
	case KindFailure:
		fmt.Fprintf(&b, "tool failure %s", e.Value)
	case KindDefense, KindNoDefense:
		fmt.Fprintf(&b, "defense %s triggered", e.Value)
	case KindReminder:
		fmt.Fprintf(&b, "reminder %s injected", e.Value)
	case KindEvent:
		fmt.Fprintf(&b, "event %s", e.Value)
	}
	if e.Tool != "" {
		fmt.Fprintf(&b, " for tool %s", e.Tool)
	}
	if e.Source != "" {
		fmt.Fprintf(&b, " by %s", e.Source)
	}
	if e.Step != "" {
		fmt.Fprintf(&b, " at step %s", e.Step)
	}
	if e.Action != "" {
		fmt.Fprintf(&b, " with action %s", e.Action)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Input)) {
		fmt.Fprintf(&b, " with %s=%s", k, e.Input[k])
	}
	for _, k := range slices.Sorted(maps.Keys(e.InputMatches)) {
		fmt.Fprintf(&b, " with %s matching /%s/", k, e.InputMatches[k])
	}
	if e.Streamed != nil {
		if *e.Streamed {
			b.WriteString(" started while the reply streamed")
		} else {
			b.WriteString(" started after the reply")
		}
	}
	switch e.Kind {
	case KindToolNotCalled, KindNoDefense:
		b.WriteString(": never")
	default:
		fmt.Fprintf(&b, ": count %s", e.Count)
	}
	return b.String()
}

// candidate reports whether ev is of the kind e counts, before its value
// (but a tool call's tool) and qualifiers: the events a failure message
// lists as near misses.
func (e EventExpect) candidate(ev trajectory.Event) bool {
	switch p := ev.Payload.(type) {
	case *trajectory.ToolCall:
		return (e.Kind == KindToolCalled || e.Kind == KindToolNotCalled) && p.Tool == e.Value
	case *trajectory.PermissionAllow:
		return e.Kind == KindPermission && e.Value == "allow"
	case *trajectory.PermissionPrompt:
		return e.Kind == KindPermission && e.Value == "prompt"
	case *trajectory.PermissionDeny:
		return e.Kind == KindPermission && e.Value == "deny"
	case *trajectory.ToolFailure:
		return e.Kind == KindFailure
	case *trajectory.DefenseTrigger:
		return e.Kind == KindDefense || e.Kind == KindNoDefense
	case *trajectory.Reminder:
		return e.Kind == KindReminder
	}
	return false
}

// matches reports whether ev is counted by e.
func (e EventExpect) matches(ev trajectory.Event) bool {
	if e.Kind == KindEvent {
		if string(ev.Type()) != e.Value || e.Tool != "" && toolOf(ev.Payload) != e.Tool {
			return false
		}
		if e.Streamed == nil {
			return true
		}
		c, ok := ev.Payload.(*trajectory.ToolCall)
		return ok && *e.Streamed == (c.StreamOffsetMs != nil)
	}
	if !e.candidate(ev) {
		return false
	}
	switch p := ev.Payload.(type) {
	case *trajectory.ToolCall:
		if e.Streamed != nil && *e.Streamed != (p.StreamOffsetMs != nil) {
			return false
		}
		return inputMatches(p.Input, e)
	case *trajectory.PermissionAllow:
		return e.decision(p.PermissionDecision)
	case *trajectory.PermissionPrompt:
		return e.decision(p.PermissionDecision)
	case *trajectory.PermissionDeny:
		return e.decision(p.PermissionDecision)
	case *trajectory.ToolFailure:
		return string(p.FailureKind) == e.Value && (e.Tool == "" || p.Tool == e.Tool)
	case *trajectory.DefenseTrigger:
		return string(p.Defense) == e.Value && (e.Action == "" || string(p.Action) == e.Action)
	case *trajectory.Reminder:
		return p.Kind == e.Value
	}
	return true
}

func (e EventExpect) decision(d trajectory.PermissionDecision) bool {
	return (e.Source == "" || string(d.Source) == e.Source) && (e.Step == "" || string(d.Step) == e.Step) && (e.Tool == "" || d.Tool == e.Tool)
}

// toolOf returns the tool an event is about, or "".
func toolOf(p trajectory.Payload) string {
	if r := trajectory.ToolRefOf(p); r != nil {
		return r.Tool
	}
	return ""
}

// inputMatches reports whether a tool input has each key of e.Input with
// an equal JSON value and each key of e.InputMatches with a matching
// string.
func inputMatches(raw json.RawMessage, e EventExpect) bool {
	if len(e.Input) == 0 && len(e.InputMatches) == 0 {
		return true
	}
	var in map[string]any
	if err := json.Unmarshal(raw, &in); err != nil {
		return false
	}
	for k, want := range e.Input {
		var w any
		if json.Unmarshal(want, &w) != nil {
			return false
		}
		got, ok := in[k]
		if !ok || !jsonEqual(got, w) {
			return false
		}
	}
	for k, re := range e.InputMatches {
		s, ok := in[k].(string)
		if !ok || !re.MatchString(s) {
			return false
		}
	}
	return true
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func checkEvent(e EventExpect, rec *recording) []results.Failure {
	var hits, near []located
	for _, ev := range rec.events {
		switch {
		case e.matches(ev.Event):
			hits = append(hits, ev)
		case e.candidate(ev.Event):
			near = append(near, ev)
		}
	}
	if e.Count.holds(len(hits)) {
		return nil
	}
	got := fmt.Sprintf("%d matching events", len(hits))
	at := ""
	switch {
	case len(hits) > 0:
		// Too many: the first one the bound does not allow shows it.
		i := 0
		if e.Count.Max != nil {
			i = min(*e.Count.Max, len(hits)-1)
		}
		at = rec.at(hits[i])
		got += "; " + summary(hits[i].Event)
	case len(near) > 0:
		at = rec.at(near[0])
		got += fmt.Sprintf("; %d of the kind that do not match, the first: %s", len(near), summary(near[0].Event))
	case rec.end != nil:
		at = rec.at(*rec.end)
	}
	return []results.Failure{failf(e.Place, e.describe(), at, "%s", got)}
}

// summary says what an event is, in one line.
func summary(ev trajectory.Event) string {
	switch p := ev.Payload.(type) {
	case *trajectory.ToolCall:
		return fmt.Sprintf("%s %s in turn %d", p.Tool, clip(string(p.Input)), ev.Turn)
	case *trajectory.PermissionAllow:
		return fmt.Sprintf("allow %s by %s at %s", p.Tool, p.Source, p.Step)
	case *trajectory.PermissionPrompt:
		return fmt.Sprintf("prompt %s by %s at %s", p.Tool, p.Source, p.Step)
	case *trajectory.PermissionDeny:
		return fmt.Sprintf("deny %s by %s at %s", p.Tool, p.Source, p.Step)
	case *trajectory.ToolFailure:
		return fmt.Sprintf("%s failed with %s %s", p.Tool, p.FailureKind, p.ErrorCode)
	case *trajectory.DefenseTrigger:
		return fmt.Sprintf("%s %s", p.Defense, p.Action)
	case *trajectory.Reminder:
		return "reminder " + p.Kind
	}
	return fmt.Sprintf("%s in turn %d", ev.Type(), ev.Turn)
}

func checkDetectors(d *DetectorExpect, fs []detectors.Finding) []results.Failure {
	if d == nil {
		return nil
	}
	byID := map[string][]detectors.Finding{}
	for _, f := range fs {
		byID[f.Detector] = append(byID[f.Detector], f)
	}
	first := func(f detectors.Finding) string {
		if len(f.Evidence) == 0 {
			return ""
		}
		return fmt.Sprintf("%s:%d", f.Evidence[0].File, f.Evidence[0].Line)
	}
	var out []results.Failure
	for _, id := range slices.Sorted(maps.Keys(d.Fire)) {
		if n := len(byID[id]); n < d.Fire[id] {
			out = append(out, failf(d.Place, fmt.Sprintf("detector %s fires at least %d times", id, d.Fire[id]), "", "it found %d", n))
		}
	}
	for _, id := range d.NotFire {
		if got := byID[id]; len(got) > 0 {
			out = append(out, failf(d.Place, "detector "+id+" does not fire", first(got[0]), "it found %d: %s", len(got), got[0].Message))
		}
	}
	if d.NoOthers {
		for _, id := range slices.Sorted(maps.Keys(byID)) {
			if _, expected := d.Fire[id]; expected || slices.Contains(d.NotFire, id) {
				continue
			}
			got := byID[id]
			out = append(out, failf(d.Place, "no detector fires but those under fire", first(got[0]), "%s found %d: %s", id, len(got), got[0].Message))
		}
	}
	return out
}
