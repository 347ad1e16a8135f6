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
// never the command's name (seed §13.8).
var scalarOutput = regexp.MustCompile(`^[-+]?[0-9]+(\.[0-9]+)?%?$`)

// yieldTurn is one turn that ran tool calls, as the low-yield condition
// sees it.
type yieldTurn struct {
	turn int
	// calls are the turn's tool_call events, in order.
	calls []Located
	// sig and out are the calls' signatures and trimmed result texts.
	sig, out string
	// held is set when the turn met the four conditions of seed §13.8
	// against the turn before it.
	held bool
}

// lowYieldTurns recomputes the low-yield spin condition of seed §13.8 for
// every turn that ran tool calls: (1) no file was written (no call that
// succeeded carries a snapshot, the contract's record of files a call
// was about to change), (2) the reply has no text for the user, (3) the
// calls are byte for byte those of the turn before, and (4) every result
// is a single number, the same as the turn before. It is the runtime
// defense's own check, recomputed from the events.
func lowYieldTurns(s *Session) []yieldTurn {
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
			sigs[i] = signature(call.Tool, call.Input)
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
		t.held = !wrote && !text[turn] && allScalar && prevSig != "" && t.sig == prevSig && t.out == prevOut
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
// calls and the same single-number results, nothing written and nothing
// said, on none of whose turns the low_yield_spin defense acted (seed
// §13.8). A spin is the turns the condition held on and the turn they
// repeat.
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
		f := d.finding(s, fmt.Sprintf("%s: the same %d call(s) ran in %d turns in a row (turns %d to %d) and returned the same single number %q each time, with no file written and no text for the user (min_turns %d); %s",
			first.Tool, len(spin[0].calls), len(spin), spin[0].turn, spin[len(spin)-1].turn, strings.ReplaceAll(spin[0].out, "\x00", ", "), limit, why), ev...)
		f.ToolUseID = first.ToolUseID
		out = append(out, f)
	}
	var spin []yieldTurn
	for i, t := range turns {
		if !t.held {
			flush(spin)
			spin = nil
			continue
		}
		if len(spin) == 0 {
			spin = append(spin, turns[i-1])
		}
		spin = append(spin, t)
	}
	flush(spin)
	return out
}
