package scenarios

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/trajectory"
)

// Expect is everything a scenario expects of its runs.
type Expect struct {
	Outcome   *OutcomeExpect
	Files     []FileExpect
	Events    []EventExpect
	Detectors *DetectorExpect
	// Replies check the text of the final reply or of a turn's (reply.go).
	Replies []ReplyExpect
	// Sequence is an ordered list of tool calls the run must make
	// (sequence.go); nil checks none.
	Sequence *SequenceExpect
	// Metrics are thresholds over all of the scenario's runs (metricexpr.go).
	Metrics []MetricExpect
	// Divergences bound the divergences of each run from the scenario's
	// reference recording (divergence.go).
	Divergences []DivergenceExpect
}

// Place says where an expectation is written: its file, line and path in
// scenario.yaml (expect.events[2]).
type Place struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Path string `json:"path"`
}

// String formats the place as file:line: path.
func (p Place) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Path) }

// Bounds bound a count; a nil end is open.
type Bounds struct {
	Min, Max *int
}

// holds reports whether n is within the bounds.
func (b Bounds) holds(n int) bool {
	return (b.Min == nil || n >= *b.Min) && (b.Max == nil || n <= *b.Max)
}

// String says the bounds in words.
func (b Bounds) String() string {
	switch {
	case b.Min != nil && b.Max != nil && *b.Min == *b.Max:
		return fmt.Sprintf("exactly %d", *b.Min)
	case b.Min != nil && b.Max != nil:
		return fmt.Sprintf("%d to %d", *b.Min, *b.Max)
	case b.Min != nil:
		return fmt.Sprintf("at least %d", *b.Min)
	case b.Max != nil:
		return fmt.Sprintf("at most %d", *b.Max)
	}
	return "any number"
}

// OutcomeExpect is what the session's end must be.
type OutcomeExpect struct {
	Place
	// Reason is the session_end reason; "" checks none.
	Reason trajectory.EndReason
	// ExitCode is the exit code retrace run gives the session (see
	// ExitCodeOf); nil checks none.
	ExitCode *int
	// Turns bounds the session's model turns.
	Turns *Bounds
}

// FileExpect is what one workspace file must be after the run.
type FileExpect struct {
	Place
	// Path is slash-separated, relative to the workspace.
	Path string
	// Exists, when set, says whether the file must exist.
	Exists *bool
	// Equals, Contains and Matches check the content.
	Equals   *string
	Contains []string
	Matches  []*regexp.Regexp
	// Unchanged says the file must be as the scenario's workspace gave it.
	Unchanged bool
}

// EventKind names what an event expectation matches.
type EventKind string

// The event expectation kinds.
const (
	KindToolCalled    EventKind = "tool_called"
	KindToolNotCalled EventKind = "tool_not_called"
	KindPermission    EventKind = "permission"
	KindFailure       EventKind = "failure"
	KindDefense       EventKind = "defense"
	KindNoDefense     EventKind = "defense_not_triggered"
	KindReminder      EventKind = "reminder"
	KindEvent         EventKind = "event"
)

var eventKinds = []EventKind{KindToolCalled, KindToolNotCalled, KindPermission, KindFailure, KindDefense, KindNoDefense, KindReminder, KindEvent}

// qualifiers lists the keys each kind takes beside the bounds.
var qualifiers = map[EventKind][]string{
	KindToolCalled:    {"input", "input_matches", "streamed"},
	KindToolNotCalled: {"input", "input_matches", "streamed"},
	KindPermission:    {"source", "step", "tool"},
	KindFailure:       {"tool"},
	KindDefense:       {"action"},
	KindNoDefense:     {"action"},
	KindReminder:      {},
	KindEvent:         {"tool", "streamed"},
}

// EventExpect counts the events of one kind that match, and bounds the count.
type EventExpect struct {
	Place
	Kind EventKind
	// Value is the kind's value: a tool name, a decision (allow, prompt,
	// deny), a failure kind, a defense, a reminder kind or an event type.
	Value string
	// Tool, Source, Step and Action narrow the match.
	Tool, Source, Step, Action string
	// Input holds keys the tool input must have with these JSON values;
	// InputMatches regular expressions the string values must match.
	Input        map[string]json.RawMessage
	InputMatches map[string]*regexp.Regexp
	// Streamed, when set, says whether the tool call must have started
	// while its reply was still streaming (tool_call.stream_offset_ms).
	Streamed *bool
	Count    Bounds
}

// DetectorExpect is what the detectors must find in each run.
type DetectorExpect struct {
	Place
	// Fire maps a detector id to the fewest findings it must have.
	Fire map[string]int
	// NotFire lists detectors that must find nothing.
	NotFire []string
	// NoOthers says no detector outside Fire may find anything.
	NoOthers bool
}

func (p *parser) place(n *yaml.Node, path string) Place {
	return Place{File: p.file, Line: n.Line, Path: path}
}

func (p *parser) expect(n *yaml.Node, s *Scenario) Expect {
	var e Expect
	for _, f := range p.fields(n, "expect", "outcome", "files", "events", "detectors", "reply", "sequence", "metrics", "divergences") {
		switch f.name {
		case "outcome":
			e.Outcome = p.outcome(f.val)
		case "files":
			if f.val.Kind != yaml.SequenceNode {
				p.at(f.val, "expect.files must be a list, e.g. [{path: calc.go, contains: \"a + b\"}]")
				continue
			}
			for i, c := range f.val.Content {
				e.Files = append(e.Files, p.file1(c, fmt.Sprintf("expect.files[%d]", i), s))
			}
		case "events":
			if f.val.Kind != yaml.SequenceNode {
				p.at(f.val, "expect.events must be a list, e.g. [{tool_called: bash}]")
				continue
			}
			for i, c := range f.val.Content {
				e.Events = append(e.Events, p.event(c, fmt.Sprintf("expect.events[%d]", i)))
			}
		case "detectors":
			e.Detectors = p.detectors(f.val)
		case "reply":
			e.Replies = p.reply(f.val)
		case "sequence":
			e.Sequence = p.sequence(f.val)
		case "metrics":
			e.Metrics = p.metrics(f.val)
		case "divergences":
			e.Divergences = p.divergences(f.val, s)
		}
	}
	return e
}

func (p *parser) outcome(n *yaml.Node) *OutcomeExpect {
	o := &OutcomeExpect{Place: p.place(n, "expect.outcome")}
	for _, f := range p.fields(n, "expect.outcome", "reason", "exit_code", "turns") {
		switch f.name {
		case "reason":
			o.Reason = trajectory.EndReason(p.str(f.val, "expect.outcome.reason"))
			if !o.Reason.Valid() {
				p.at(f.val, "expect.outcome.reason %q is not an end reason; use one of end_turn, stop_sequence, max_turns, max_tokens, token_budget, cost_budget, refused, stuck, aborted, error", o.Reason)
			}
		case "exit_code":
			c := p.integer(f.val, "expect.outcome.exit_code")
			if !slices.Contains([]int{0, 1, 4}, c) {
				p.at(f.val, "expect.outcome.exit_code %d: a session's exit code is 0 (finished), 4 (stopped before finishing) or 1 (error)", c)
			}
			o.ExitCode = &c
		case "turns":
			b := p.bounds(f.val, "expect.outcome.turns")
			o.Turns = &b
		}
	}
	return o
}

// bounds reads N (exactly N) or {min: N, max: M}.
// boundKeys are the count, min and max keys of an expectation that
// counts what matches it.
type boundKeys struct{ count, lo, hi *int }

// set takes the key name (count, min or max) at val, refusing a
// negative number.
func (k *boundKeys) set(p *parser, name string, val *yaml.Node, key string) {
	v := p.integer(val, key)
	if v < 0 {
		p.at(val, "%s must not be negative", key)
	}
	switch name {
	case "count":
		k.count = &v
	case "min":
		k.lo = &v
	default:
		k.hi = &v
	}
}

func (k boundKeys) given() bool { return k.count != nil || k.lo != nil || k.hi != nil }

func (k boundKeys) both() bool { return k.count != nil && (k.lo != nil || k.hi != nil) }

// bounds checks the keys given at n and returns their bounds: count
// exactly, min and max, or at least one when none is given.
func (k boundKeys) bounds(p *parser, n *yaml.Node, where string) Bounds {
	switch {
	case k.both():
		p.at(n, "%s: give count, or min and max, not both", where)
		return Bounds{}
	case k.count != nil:
		return Bounds{Min: k.count, Max: k.count}
	case k.lo == nil && k.hi == nil:
		one := 1
		return Bounds{Min: &one}
	}
	if k.lo != nil && k.hi != nil && *k.lo > *k.hi {
		p.at(n, "%s: min %d is above max %d", where, *k.lo, *k.hi)
	}
	return Bounds{Min: k.lo, Max: k.hi}
}

func (p *parser) bounds(n *yaml.Node, what string) Bounds {
	if n.Kind == yaml.ScalarNode {
		v := p.integer(n, what)
		return Bounds{Min: &v, Max: &v}
	}
	var b Bounds
	for _, f := range p.fields(n, what, "min", "max") {
		v := p.integer(f.val, what+"."+f.name)
		if v < 0 {
			p.at(f.val, "%s.%s must not be negative", what, f.name)
		}
		if f.name == "min" {
			b.Min = &v
		} else {
			b.Max = &v
		}
	}
	if b.Min != nil && b.Max != nil && *b.Min > *b.Max {
		p.at(n, "%s: min %d is above max %d", what, *b.Min, *b.Max)
	}
	return b
}

func (p *parser) file1(n *yaml.Node, where string, s *Scenario) FileExpect {
	fe := FileExpect{Place: p.place(n, where)}
	checks := 0
	for _, f := range p.fields(n, where, "path", "exists", "equals", "contains", "matches", "unchanged") {
		switch f.name {
		case "path":
			fe.Path = p.str(f.val, where+".path")
			if c := path.Clean(fe.Path); c != fe.Path || path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
				p.at(f.val, "%s.path %q: give a clean path relative to the workspace", where, fe.Path)
			}
		case "exists":
			v := p.boolean(f.val, where+".exists")
			fe.Exists = &v
			checks++
		case "equals":
			v := p.str(f.val, where+".equals")
			fe.Equals = &v
			checks++
		case "contains":
			fe.Contains = p.strOrList(f.val, where+".contains")
			checks++
		case "matches":
			for _, src := range p.strOrList(f.val, where+".matches") {
				re, err := regexp.Compile(src)
				if err != nil {
					p.at(f.val, "%s.matches %q: %v", where, src, err)
					continue
				}
				fe.Matches = append(fe.Matches, re)
			}
			checks++
		case "unchanged":
			fe.Unchanged = p.boolean(f.val, where+".unchanged")
			checks++
		}
	}
	switch {
	case fe.Path == "":
		p.at(n, "%s: no path: name the file, relative to the workspace", where)
	case checks == 0:
		p.at(n, "%s: nothing to check: give exists, equals, contains, matches or unchanged", where)
	case fe.Unchanged && s.Files[fe.Path] == nil:
		p.at(n, "%s: unchanged, but the scenario has no workspace/%s; add the file, or check exists: false", where, fe.Path)
	}
	return fe
}

func (p *parser) strOrList(n *yaml.Node, what string) []string {
	if n.Kind == yaml.SequenceNode {
		return p.strs(n, what)
	}
	return []string{p.str(n, what)}
}

func (p *parser) event(n *yaml.Node, where string) EventExpect {
	e := EventExpect{Place: p.place(n, where)}
	if n.Kind != yaml.MappingNode {
		p.at(n, "%s must be a mapping such as {tool_called: bash}", where)
		return e
	}
	// The kind decides which other keys are known.
	var kinds []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := EventKind(n.Content[i].Value); slices.Contains(eventKinds, k) {
			kinds = append(kinds, string(k))
		}
	}
	if len(kinds) != 1 {
		names := make([]string, len(eventKinds))
		for i, k := range eventKinds {
			names[i] = string(k)
		}
		p.at(n, "%s: give exactly one of %s (got %d)", where, strings.Join(names, ", "), len(kinds))
		return e
	}
	e.Kind = EventKind(kinds[0])
	known := append([]string{kinds[0], "min", "max", "count"}, qualifiers[e.Kind]...)
	var k boundKeys
	for _, f := range p.fields(n, where, known...) {
		key := where + "." + f.name
		switch f.name {
		case kinds[0]:
			e.Value = p.str(f.val, key)
			p.checkValue(f.val, key, e.Kind, e.Value)
		case "tool":
			e.Tool = p.str(f.val, key)
		case "source":
			e.Source = p.str(f.val, key)
			if !trajectory.PermissionSource(e.Source).Valid() {
				p.at(f.val, "%s %q is not a permission source; use rule, mode, read_only, hook, safety, session_memory, user, non_interactive, fuse or sandbox", key, e.Source)
			}
		case "step":
			e.Step = p.str(f.val, key)
			if !trajectory.ChainStep(e.Step).Valid() {
				p.at(f.val, "%s %q is not a permission chain step; use hook, session_memory, deny_rule, dangerous_command, disallowed_tool, path_validation, ask_rule, tool_check, protected_path, bypass_mode, allow_rule, plan_mode, read_only, accept_edits, default, fuse or sandbox", key, e.Step)
			}
		case "action":
			e.Action = p.str(f.val, key)
			if !trajectory.DefenseAction(e.Action).Valid() {
				p.at(f.val, "%s %q is not a defense action", key, e.Action)
			}
		case "streamed":
			v := p.boolean(f.val, key)
			e.Streamed = &v
		case "input":
			e.Input = p.input(f.val, key)
		case "input_matches":
			e.InputMatches = map[string]*regexp.Regexp{}
			for _, kv := range p.fields(f.val, key, p.keys(f.val)...) {
				re, err := regexp.Compile(p.str(kv.val, key+"."+kv.name))
				if err != nil {
					p.at(kv.val, "%s.%s: %v", key, kv.name, err)
					continue
				}
				e.InputMatches[kv.name] = re
			}
		case "count", "min", "max":
			k.set(p, f.name, f.val, key)
		}
	}
	negative := e.Kind == KindToolNotCalled || e.Kind == KindNoDefense
	switch {
	case negative && k.both():
		e.Count = k.bounds(p, n, where)
	case negative && k.given():
		p.at(n, "%s: %s means none; drop count, min and max", where, e.Kind)
	case negative:
		zero := 0
		e.Count = Bounds{Max: &zero}
	default:
		e.Count = k.bounds(p, n, where)
	}
	return e
}

// keys returns a mapping's keys, for fields where every key is known.
func (p *parser) keys(n *yaml.Node) []string {
	var out []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, n.Content[i].Value)
	}
	return out
}

// input reads a mapping of tool input keys to the JSON values they must have.
func (p *parser) input(n *yaml.Node, what string) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, f := range p.fields(n, what, p.keys(n)...) {
		var v any
		if err := f.val.Decode(&v); err != nil {
			p.at(f.val, "%s.%s: %v", what, f.name, err)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			p.at(f.val, "%s.%s: %v", what, f.name, err)
			continue
		}
		out[f.name] = b
	}
	return out
}

func (p *parser) checkValue(n *yaml.Node, key string, k EventKind, v string) {
	switch k {
	case KindToolCalled, KindToolNotCalled:
		if !trajectory.IsToolName(v) {
			p.at(n, "%s %q is not a tool name", key, v)
		}
	case KindPermission:
		if !slices.Contains([]string{"allow", "prompt", "deny"}, v) {
			p.at(n, "%s %q: a permission decision is allow, prompt or deny", key, v)
		}
	case KindFailure:
		if !trajectory.FailureKind(v).Valid() {
			p.at(n, "%s %q is not a failure kind; use not_found, hook_blocked, invalid_input, permission_denied, aborted, timeout, exception or tool_error", key, v)
		}
	case KindDefense, KindNoDefense:
		if !trajectory.DefenseName(v).Valid() {
			p.at(n, "%s %q is not a defense; use empty_input_retry, end_turn_fallthrough, truncated_tool_use, repeated_readonly, low_yield_spin, loop_detection, denial_fuse or reminder_cap", key, v)
		}
	case KindReminder:
		if !trajectory.IsLabel(v) {
			p.at(n, "%s %q is not a reminder kind (a label)", key, v)
		}
	case KindEvent:
		if !trajectory.EventType(v).Valid() {
			p.at(n, "%s %q is not an event type", key, v)
		}
	}
}

func (p *parser) detectors(n *yaml.Node) *DetectorExpect {
	d := &DetectorExpect{Place: p.place(n, "expect.detectors"), Fire: map[string]int{}}
	for _, f := range p.fields(n, "expect.detectors", "fire", "not_fire", "no_others") {
		switch f.name {
		case "fire":
			for _, kv := range p.fields(f.val, "expect.detectors.fire", p.keys(f.val)...) {
				min := p.integer(kv.val, "expect.detectors.fire."+kv.name)
				if min < 1 {
					p.at(kv.val, "expect.detectors.fire.%s: the fewest findings must be at least 1 (use not_fire for none)", kv.name)
				}
				p.detector(kv.key, kv.name)
				d.Fire[kv.name] = min
			}
		case "not_fire":
			for i, id := range p.strs(f.val, "expect.detectors.not_fire") {
				p.detector(f.val.Content[i], id)
				if _, both := d.Fire[id]; both {
					p.at(f.val.Content[i], "expect.detectors: %s is both under fire and not_fire", id)
				}
				d.NotFire = append(d.NotFire, id)
			}
		case "no_others":
			d.NoOthers = p.boolean(f.val, "expect.detectors.no_others")
		}
	}
	return d
}

// detector refuses an id the catalog does not have, or a detector that
// judges a corpus rather than one session.
func (p *parser) detector(n *yaml.Node, id string) {
	ds, err := detectors.Select([]string{id}, nil)
	if err != nil {
		p.at(n, "expect.detectors: %v", err)
		return
	}
	if ds[0].Info().Corpus && !p.exhibit {
		p.at(n, "expect.detectors: %s judges a corpus of sessions, not one scenario's run (an exhibit of recordings/*.jsonl can expect it)", id)
	}
}
