package detectors

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// lowYieldSpinMin is the default of low_yield_spin's min_turns.
const lowYieldSpinMin = 3

// scalarOutput matches a tool result that is one number and nothing else,
// as the runtime's low-yield spin defense judges it: the output's shape,
// never the command's name.
var scalarOutput = regexp.MustCompile(`^[-+]?[0-9]+(\.[0-9]+)?%?$`)

// yieldTurn is one turn that ran tool calls, as the low-yield condition
// sees it.
type yieldTurn struct {
	turn int
	// calls are the turn's tool_call events, in order.
	calls []Located
	// sig and out are the calls' signatures and trimmed result texts.
	sig, out string
	// quiet is set when the turn wrote nothing, said nothing and got only
	// single numbers back: conditions 1, 2 and the shape of 4.
	quiet bool
	// held is set when the turn met its four conditions
	// against the turn before it: quiet, and the same calls and numbers.
	held bool
}

// yieldTurns recomputes the low-yield spin condition for
// every turn that ran tool calls: (1) no file was written (no call that
// succeeded carries a snapshot, the contract's record of files a call
// was about to change), (2) the reply has no text for the user, (3) the
// calls are byte for byte those of the turn before, and (4) every result
// is a single number, the same as the turn before. It is the runtime
// defense's own check, recomputed from the events.
func yieldTurns(s *Session) []yieldTurn {
	var out []yieldTurn
	text := map[int]bool{}
	ends := map[string]*trajectory.ToolEnd{}
	results := map[string]*trajectory.ToolResult{}
	byTurn := map[int][]Located{}
	var order []int
	for _, e := range s.Events {
		switch p := e.Payload.(type) {
		case *trajectory.ModelResponse:
			for _, b := range p.Content {
				if b.Type == trajectory.BlockText && strings.TrimSpace(b.Text) != "" {
					text[e.Turn] = true
				}
			}
		case *trajectory.ToolCall:
			if byTurn[e.Turn] == nil {
				order = append(order, e.Turn)
			}
			byTurn[e.Turn] = append(byTurn[e.Turn], e)
		case *trajectory.ToolEnd:
			ends[p.ToolUseID] = p
		case *trajectory.ToolResult:
			results[p.ToolUseID] = p
		}
	}
	prevSig, prevOut := "", ""
	for _, turn := range order {
		calls := byTurn[turn]
		t := yieldTurn{turn: turn, calls: calls}
		sigs, outs := make([]string, len(calls)), make([]string, len(calls))
		wrote, allScalar := false, true
		for i, c := range calls {
			call := c.Payload.(*trajectory.ToolCall)
			sigs[i] = s.signature(call.Tool, call.Input)
			r := results[call.ToolUseID]
			if r == nil {
				// A call without a result observed nothing the check
				// can compare: the turn is not a spin.
				allScalar = false
				continue
			}
			outs[i] = strings.TrimSpace(r.Text)
			allScalar = allScalar && scalarOutput.MatchString(outs[i])
			if end := ends[call.ToolUseID]; end != nil && end.Snapshot != "" && !r.IsError {
				wrote = true
			}
		}
		t.sig, t.out = strings.Join(sigs, "\x00"), strings.Join(outs, "\x00")
		t.quiet = !wrote && !text[turn] && allScalar
		t.held = t.quiet && prevSig != "" && t.sig == prevSig && t.out == prevOut
		prevSig, prevOut = t.sig, t.out
		out = append(out, t)
	}
	return out
}

// lowYieldHeld is the low_yield_spin defense's condition for the liveness
// table: each turn that met it, at the turn's last call (where the
// runtime's defense acts).
func lowYieldHeld(s *Session, _ map[string]trajectory.ToolInfo) (int, []Located) {
	turns := lowYieldTurns(s)
	var held []Located
	for _, t := range turns {
		if t.held {
			held = append(held, t.calls[len(t.calls)-1])
		}
	}
	return len(turns), held
}

// lowYieldSpin finds spins: min_turns or more turns in a row with the same
// calls and single-number results, nothing written and nothing said, that
// met the condition at least once (the same number as the turn before),
// on none of whose turns the low_yield_spin defense acted. A
// spin starts at the turn the first repeat repeats, and goes on through
// turns whose number changed, as long as the calls stay the same.
func lowYieldSpin(d *goDetector, s *Session, p Params) []Finding {
	limit := p.Int("min_turns")
	enabled := false
	acted := map[int]bool{}
	for _, e := range s.Events {
		switch p := e.Payload.(type) {
		case *trajectory.SessionStart:
			for _, n := range p.Defenses {
				enabled = enabled || n == trajectory.DefenseLowYieldSpin
			}
		case *trajectory.DefenseTrigger:
			if p.Defense == trajectory.DefenseLowYieldSpin {
				acted[e.Turn] = true
			}
		}
	}
	var out []Finding
	turns := lowYieldTurns(s)
	flush := func(spin []yieldTurn) {
		if len(spin) < max(limit, 2) {
			return
		}
		for _, t := range spin {
			if acted[t.turn] {
				return
			}
		}
		var ev []Located
		for _, t := range spin[:min(len(spin), livenessEvidenceMax)] {
			ev = append(ev, t.calls[0])
		}
		first := spin[0].calls[0].Payload.(*trajectory.ToolCall)
		why := "the low_yield_spin defense is not enabled in this session"
		if enabled {
			why = "the low_yield_spin defense is enabled and did not act on any of them"
		}
		f := d.finding(s, fmt.Sprintf("%s: the same %d call(s) ran in %d turns in a row (turns %d to %d) and returned a single number each time (%s), with no file written and no text for the user (min_turns %d); %s",
			first.Tool, len(spin[0].calls), len(spin), spin[0].turn, spin[len(spin)-1].turn, runLengths(spin), limit, why), ev...)
		f.ToolUseID = first.ToolUseID
		out = append(out, f)
	}
	var spin []yieldTurn
	for i, t := range turns {
		switch {
		case t.held && len(spin) == 0:
			spin = append(spin, turns[i-1], t)
		case t.held, len(spin) > 0 && t.quiet && t.sig == spin[len(spin)-1].sig:
			// A new number from the same command goes on with the spin,
			// as a type check printing 139, 136 and 113 errors by turns does.
			spin = append(spin, t)
		default:
			flush(spin)
			spin = nil
		}
	}
	flush(spin)
	return out
}

// runLengths renders the turns' outputs as runs: "2 ×4", or
// "139 ×22, 136 ×7" when the number changed.
func runLengths(spin []yieldTurn) string {
	var parts []string
	for i := 0; i < len(spin); {
		j := i
		for j < len(spin) && spin[j].out == spin[i].out {
			j++
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", strings.ReplaceAll(spin[i].out, "\x00", " "), j-i))
		i = j
	}
	return strings.Join(parts, ", ")
}
