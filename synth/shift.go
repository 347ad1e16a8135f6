package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// Shift changes the generator in one planted way each, for before/after
// tests: two corpora of one seed, one with a shift and one without,
// differ in that quantity and in nothing else a metric measures.
type Shift struct {
	// Tool is a tool name the generator uses (bash, read, ...); another
	// name is an error wrapping ErrInvalidOptions.
	Tool string
	// FailurePoints is added to the failure probability of the tool's
	// calls that run (0.05 = +5 points): a call that would have succeeded
	// fails with probability FailurePoints/(1 − p), p the call's own
	// failure probability (at most always), so that among the calls that
	// run the rate rises by FailurePoints. Calls refused before running (denied, blocked,
	// invalid) fail already, so over all of a tool's calls the rate rises
	// by FailurePoints times the share of calls that run (about 0.9 for
	// bash). The failure is drawn from the tool's own tool_error mix
	// (codes and texts), so its output looks like that tool's failures.
	FailurePoints float64
	// TailFactor > 1 stretches the tool's latency tail so that its p95
	// becomes ×TailFactor while its median stays: a drawn duration d above
	// the median m becomes m + (d−m)·k with k = (TailFactor·p95 − m)/(p95 −
	// m) of the call's latency distribution (bash has three: read-only
	// commands, tests and the others, each stretched alike). Timeouts keep
	// their limit.
	TailFactor float64
}

// String gives the shift in ParseShift's form, one part per quantity.
func (s Shift) String() string {
	var parts []string
	if s.FailurePoints != 0 {
		parts = append(parts, s.Tool+".failure+"+strconv.FormatFloat(s.FailurePoints, 'g', -1, 64))
	}
	if s.TailFactor != 0 {
		parts = append(parts, s.Tool+".p95*"+strconv.FormatFloat(s.TailFactor, 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

// ShiftTools lists the tools a Shift may name: the generator's built-in
// and MCP tools.
func ShiftTools() []string {
	var out []string
	for _, t := range builtins {
		out = append(out, t.name)
	}
	for _, t := range mcpTools {
		out = append(out, t.name)
	}
	return out
}

// neverFail are the tools that have no failure of their own in synth, so a
// failure shift has nothing to draw from.
var neverFail = []string{"todo_write", "tool_search"}

// maxTailFactor bounds TailFactor: a larger stretch describes no latency
// regression anyone would plant.
const maxTailFactor = 100

// ParseShift reads a shift from its command-line form:
//
//	TOOL.failure+POINTS   e.g. bash.failure+0.05  (+5 points of failures)
//	TOOL.p95*FACTOR       e.g. read.p95*1.5       (p95 ×1.5, median kept)
//
// Errors wrap ErrInvalidOptions and name the part that is wrong.
func ParseShift(s string) (Shift, error) {
	tool, rest, ok := strings.Cut(strings.TrimSpace(s), ".")
	if !ok || tool == "" {
		return Shift{}, fmt.Errorf("%w: shift %q: want TOOL.failure+POINTS or TOOL.p95*FACTOR, e.g. bash.failure+0.05 or read.p95*1.5", ErrInvalidOptions, s)
	}
	var sh Shift
	sh.Tool = tool
	switch {
	case strings.HasPrefix(rest, "failure"):
		num, ok := strings.CutPrefix(rest, "failure+")
		if !ok {
			return Shift{}, fmt.Errorf("%w: shift %q: after %q want +POINTS, e.g. %s.failure+0.05", ErrInvalidOptions, s, tool+".failure", tool)
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return Shift{}, fmt.Errorf("%w: shift %q: the points %q are not a number; give a fraction such as 0.05 for +5 points", ErrInvalidOptions, s, num)
		}
		if !(v > 0 && v <= 1) {
			return Shift{}, fmt.Errorf("%w: shift %q: the points must be above 0 and at most 1 (0.05 is +5 points)", ErrInvalidOptions, s)
		}
		sh.FailurePoints = v
	case strings.HasPrefix(rest, "p95"):
		num, ok := strings.CutPrefix(rest, "p95*")
		if !ok {
			return Shift{}, fmt.Errorf("%w: shift %q: after %q want *FACTOR, e.g. %s.p95*1.5", ErrInvalidOptions, s, tool+".p95", tool)
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return Shift{}, fmt.Errorf("%w: shift %q: the factor %q is not a number; give one above 1 such as 1.5", ErrInvalidOptions, s, num)
		}
		sh.TailFactor = v
	default:
		return Shift{}, fmt.Errorf("%w: shift %q: the quantity %q is not one synth shifts; give failure+POINTS or p95*FACTOR", ErrInvalidOptions, s, rest)
	}
	if err := sh.check(); err != nil {
		return Shift{}, err
	}
	return sh, nil
}

// check validates one shift.
func (s Shift) check() error {
	if !slices.Contains(ShiftTools(), s.Tool) {
		return fmt.Errorf("%w: shift of %q: synth has no such tool; give one of %s", ErrInvalidOptions, s.Tool, strings.Join(ShiftTools(), ", "))
	}
	if s.FailurePoints == 0 && s.TailFactor == 0 {
		return fmt.Errorf("%w: shift of %s changes nothing; set FailurePoints or TailFactor", ErrInvalidOptions, s.Tool)
	}
	if s.FailurePoints != 0 {
		if !(s.FailurePoints > 0 && s.FailurePoints <= 1) {
			return fmt.Errorf("%w: shift %s.failure+%v: the points must be above 0 and at most 1 (0.05 is +5 points)", ErrInvalidOptions, s.Tool, s.FailurePoints)
		}
		if slices.Contains(neverFail, s.Tool) {
			return fmt.Errorf("%w: shift %s.failure: %s never fails in synth, so there is no failure of its own to plant; shift another tool", ErrInvalidOptions, s.Tool, s.Tool)
		}
	}
	if s.TailFactor != 0 && !(s.TailFactor > 1 && s.TailFactor <= maxTailFactor) {
		return fmt.Errorf("%w: shift %s.p95*%v: the factor must be above 1 and at most %d", ErrInvalidOptions, s.Tool, s.TailFactor, maxTailFactor)
	}
	return nil
}

// checkShifts validates the shifts and merges them by tool; two shifts of
// one quantity of one tool are an error.
func checkShifts(shifts []Shift) (map[string]Shift, error) {
	if len(shifts) == 0 {
		return nil, nil
	}
	out := map[string]Shift{}
	for _, s := range shifts {
		if err := s.check(); err != nil {
			return nil, err
		}
		m := out[s.Tool]
		m.Tool = s.Tool
		if s.FailurePoints != 0 {
			if m.FailurePoints != 0 {
				return nil, fmt.Errorf("%w: two failure shifts of %s; give one", ErrInvalidOptions, s.Tool)
			}
			m.FailurePoints = s.FailurePoints
		}
		if s.TailFactor != 0 {
			if m.TailFactor != 0 {
				return nil, fmt.Errorf("%w: two p95 shifts of %s; give one", ErrInvalidOptions, s.Tool)
			}
			m.TailFactor = s.TailFactor
		}
		out[s.Tool] = m
	}
	return out, nil
}

// shiftStream is the salt of the PRNG stream a session's shifts draw from,
// separate from the session's own stream so that a shift leaves every
// other draw as it was.
const shiftStream = 0x5348494654 // "SHIFT"

// newShiftRand returns session i's shift stream.
func newShiftRand(seed int64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed)^shiftStream, uint64(i)))
}

// z95 is the standard normal's 0.95 quantile: a log-normal's p95 is its
// median times exp(z95·σ).
const z95 = 1.6448536269514722

// stretch applies a tail factor to a duration drawn from l.
func (l latency) stretch(d time.Duration, factor float64) time.Duration {
	m := float64(l.median)
	if factor <= 1 || float64(d) <= m {
		return d
	}
	p95 := m * math.Exp(z95*l.sigma)
	k := (factor*p95 - m) / (p95 - m)
	return time.Duration(m + (float64(d)-m)*k)
}

// shiftRun applies the session's shift of c's tool to the outcome o of a
// call that ran: the planted failure goes to c.shown, leaving c.out — and
// with it everything the session does next — as it was. p is the call's
// own failure probability, failures its tool_error mix.
func (g *session) shiftRun(c *call, o outcome, p float64, failures []failure) {
	s, ok := g.shifts[c.name]
	if !ok || s.FailurePoints == 0 {
		return
	}
	// One draw per call that ran, whatever its outcome, so the shift
	// stream does not depend on which calls succeeded.
	u, pick1 := g.shiftR.Float64(), g.shiftR.Float64()
	if o.kind != "" || len(failures) == 0 || u >= s.FailurePoints/(1-p) {
		return
	}
	f := pickAt(pick1, weights(failures))
	shown := o
	shown.kind, shown.code, shown.text = trajectory.FailureToolError, f.code, f.text
	if c.kind != kindBashTest && c.kind != kindMCP {
		shown.bytes = int64(len(f.text))
	}
	shown.truncated = false
	if c.spec.limit > 0 && shown.bytes > c.spec.limit {
		shown.truncated = true
		shown.text += truncationNotice(shown.bytes, g.id, g.spillRef(c))
	}
	c.shown = &shown
}

// pickAt is pick with the uniform draw given.
func pickAt[T any](x float64, choices []weighted[T]) T {
	total := 0.0
	for _, c := range choices {
		total += c.w
	}
	x *= total
	for _, c := range choices {
		if x < c.w {
			return c.v
		}
		x -= c.w
	}
	return choices[len(choices)-1].v
}

// visible is the outcome the trajectory records for c: the planted one
// when a shift planted a failure, else the one the session acts on.
func (c *call) visible() *outcome {
	if c.shown != nil {
		return c.shown
	}
	return &c.out
}
