package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/trajectory"
)

// PropertyKind names what a kept property is about.
type PropertyKind string

// The kinds of property --keep names.
const (
	// PropDetector is a detector finding something: detector:ID.
	PropDetector PropertyKind = "detector"
	// PropFailure is a tool call failing so: failure:KIND[,tool=T].
	PropFailure PropertyKind = "failure"
	// PropDefense is a defense acting: defense:NAME.
	PropDefense PropertyKind = "defense"
	// PropPermission is a permission decision:
	// permission:allow|prompt|deny[,tool=T][,step=S][,source=S].
	PropPermission PropertyKind = "permission"
	// PropEvent is an event of a type: event:TYPE[,tool=T], and for
	// tool_call [,streamed=true|false].
	PropEvent PropertyKind = "event"
	// PropOutcome is how the session ended: outcome.
	PropOutcome PropertyKind = "outcome"
	// PropDivergence is the run differing from the recording as replay
	// compares them (package compare): divergence:CLASS.
	PropDivergence PropertyKind = "divergence"
)

// notPrefix negates a property, as "no new detector" reads in a gate
// (docs/conditions.md): no defense:denial_fuse is a defense that did not
// act, no detector:ID a detector that finds nothing.
const notPrefix = "no "

// Property is what a regression scenario is about, in the expectation
// language: detector:denial_loop, failure:permission_denied,tool=bash,
// defense:denial_fuse, permission:deny,step=sandbox, event:compaction,
// divergence:tool_output_changed, outcome, or one of them but outcome
// negated with "no ".
type Property struct {
	Kind PropertyKind
	// Value is the detector id, failure kind, defense name, permission
	// decision, event type or divergence class.
	Value string
	// Tool narrows a failure, permission decision or event to one tool;
	// Step and Source a permission decision to a chain step and source.
	Tool, Step, Source string
	// Streamed narrows tool_call events to those that started while the
	// reply streamed ("true") or after it ("false").
	Streamed string
	// Not says the property is that it does not happen.
	Not bool
}

// String spells the property as --keep takes it.
func (p Property) String() string {
	s := p.positive()
	if p.Not {
		s = notPrefix + s
	}
	return s
}

// positive spells the property without its negation.
func (p Property) positive() string {
	if p.Kind == PropOutcome {
		return string(p.Kind)
	}
	s := fmt.Sprintf("%s:%s", p.Kind, p.Value)
	for _, q := range [][2]string{{"tool", p.Tool}, {"step", p.Step}, {"source", p.Source}, {"streamed", p.Streamed}} {
		if q[1] != "" {
			s += "," + q[0] + "=" + q[1]
		}
	}
	return s
}

// ErrProperty is wrapped by ParseProperty's errors.
var ErrProperty = errors.New("invalid property")

// propertyQualifiers are the qualifiers each kind takes after its value.
var propertyQualifiers = map[PropertyKind][]string{
	PropFailure:    {"tool"},
	PropPermission: {"tool", "step", "source"},
	PropEvent:      {"tool", "streamed"},
}

// ParseProperty reads a property as --keep takes it.
func ParseProperty(s string) (Property, error) {
	bad := func(format string, args ...any) (Property, error) {
		return Property{}, fmt.Errorf("%w %q: %s; give detector:ID, failure:KIND[,tool=T], defense:NAME, permission:DECISION[,tool=T][,step=S][,source=S], event:TYPE[,tool=T][,streamed=true|false], divergence:CLASS or outcome, or one of them but outcome after \"no \"", ErrProperty, s, fmt.Sprintf(format, args...))
	}
	rest, not := strings.CutPrefix(s, notPrefix)
	if rest == string(PropOutcome) {
		if not {
			return bad("an outcome cannot be negated")
		}
		return Property{Kind: PropOutcome}, nil
	}
	kind, rest, ok := strings.Cut(rest, ":")
	if !ok || rest == "" {
		return bad("no kind:value")
	}
	value, quals, _ := strings.Cut(rest, ",")
	p := Property{Kind: PropertyKind(kind), Value: value, Not: not}
	if quals != "" {
		allowed := propertyQualifiers[p.Kind]
		for q := range strings.SplitSeq(quals, ",") {
			k, v, ok := strings.Cut(q, "=")
			switch {
			case !ok || v == "":
				return bad("%q: give KEY=VALUE after the value", q)
			case !slices.Contains(allowed, k):
				return bad("%s takes %s, not %q", kind, cmpOr(strings.Join(allowed, ", "), "no qualifier"), k)
			case k == "tool" && !trajectory.IsToolName(v):
				return bad("tool=%q is not a tool name", v)
			case k == "tool" && p.Tool != "", k == "step" && p.Step != "", k == "source" && p.Source != "", k == "streamed" && p.Streamed != "":
				return bad("%s given twice", k)
			}
			switch k {
			case "tool":
				p.Tool = v
			case "step":
				if !trajectory.ChainStep(v).Valid() {
					return bad("step=%q is not a permission chain step", v)
				}
				p.Step = v
			case "source":
				if !trajectory.PermissionSource(v).Valid() {
					return bad("source=%q is not a permission source", v)
				}
				p.Source = v
			case "streamed":
				if v != "true" && v != "false" {
					return bad("streamed=%q: give true or false", v)
				}
				p.Streamed = v
			}
		}
	}
	switch p.Kind {
	case PropDetector:
		if _, err := detectors.Select([]string{value}, nil); err != nil {
			return bad("%v", err)
		}
	case PropFailure:
		if !trajectory.FailureKind(value).Valid() {
			return bad("%q is not a failure kind", value)
		}
	case PropDefense:
		if !trajectory.DefenseName(value).Valid() {
			return bad("%q is not a defense", value)
		}
	case PropPermission:
		if !slices.Contains([]string{"allow", "prompt", "deny"}, value) {
			return bad("%q is not a permission decision (allow, prompt or deny)", value)
		}
	case PropEvent:
		if !trajectory.EventType(value).Valid() {
			return bad("%q is not an event type", value)
		}
		if p.Streamed != "" && value != string(trajectory.TypeToolCall) {
			return bad("streamed= narrows tool_call events only")
		}
	case PropDivergence:
		if !validClass(value) {
			return bad("%q is not a divergence class (%s)", value, classNames())
		}
	default:
		return bad("unknown kind %q", kind)
	}
	return p, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// keptEvent is the event expectation of a property of events (all but
// detector and outcome), matching each event that shows it.
func keptEvent(p Property) EventExpect {
	one := 1
	e := EventExpect{Value: p.Value, Tool: p.Tool, Step: p.Step, Source: p.Source, Count: Bounds{Min: &one}}
	switch p.Kind {
	case PropFailure:
		e.Kind = KindFailure
	case PropDefense:
		e.Kind = KindDefense
	case PropPermission:
		e.Kind = KindPermission
	case PropEvent:
		e.Kind = KindEvent
		if p.Streamed != "" {
			streamed := p.Streamed == "true"
			e.Streamed = &streamed
		}
	}
	return e
}

// expectYAML writes the expectations of a kept detector, divergence or
// event property, under expect:.
func (p Property) expectYAML() string {
	if p.Kind == PropDivergence {
		if p.Not {
			return fmt.Sprintf("  divergences:\n    - {class: %s, count: 0}\n", p.Value)
		}
		return fmt.Sprintf("  divergences:\n    - {class: %s}\n", p.Value)
	}
	if p.Kind == PropDetector {
		if p.Not {
			return fmt.Sprintf("  detectors:\n    not_fire: [%s]\n", p.Value)
		}
		return fmt.Sprintf("  detectors:\n    fire: {%s: 1}\n", p.Value)
	}
	if p.Kind == PropDefense && p.Not {
		return fmt.Sprintf("  events:\n    - {defense_not_triggered: %s}\n", p.Value)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  events:\n    - {%s: %s", keptEvent(p).Kind, p.Value)
	for _, q := range [][2]string{{"tool", p.Tool}, {"step", p.Step}, {"source", p.Source}} {
		if q[1] != "" {
			fmt.Fprintf(&b, ", %s: %s", q[0], quote(q[1]))
		}
	}
	if p.Streamed != "" {
		fmt.Fprintf(&b, ", streamed: %s", p.Streamed)
	}
	if p.Not {
		b.WriteString(", count: 0}\n")
	} else {
		b.WriteString(", min: 1}\n")
	}
	return b.String()
}
