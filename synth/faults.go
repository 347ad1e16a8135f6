package synth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/retrace-dev/retrace/trajectory"
)

// FaultsFile is the name of the ground-truth file Write puts next to the
// sessions when Options.Faults is set. It is JSON Lines, one Fault a line,
// but not named *.jsonl, so that loading the corpus directory never takes
// it for a trajectory.
const FaultsFile = "faults.ndjson"

// Faults are the failure modes synth can plant, named by the id of the
// detector that finds each, in the detectors catalog's order.
var Faults = []string{
	"lost_call", "unpaired_tool_use", "truncated_tool_use_executed", "stop_reason_as_done",
	"end_turn_with_tool_use", "hallucinated_tool", "empty_input_retry",
	"decision_counted_as_trigger", "spill_read_loop", "prefix_collapse_risk", "low_yield_spin",
	"phantom_user_message", "definition_drift",
	"latency_flattened", "unbounded_label", "denial_loop", "empty_output_unexplained",
	"truncation_unannounced", "hook_changed_input_silently", "cache_breaker", "context_runaway",
}

// ErrFaultNotPlanted is wrapped by Write's error when a requested fault
// found no session it could be planted in: the corpus is too small.
var ErrFaultNotPlanted = errors.New("a fault could not be planted")

// Fault is one planted fault: the detector that must find it and the event
// that proves it, as the first evidence of that detector's finding names
// it. Line and Seq are equal (every line of a synth file is one event,
// numbered from 1).
type Fault struct {
	Detector string `json:"detector"`
	Session  string `json:"session"`
	// File is the trajectory file's name, relative to the corpus directory.
	File      string `json:"file"`
	Line      int    `json:"line"`
	Seq       int64  `json:"seq"`
	ToolUseID string `json:"tool_use_id,omitempty"`
}

// faultFor returns the fault session i is planted with, or "": every
// second session, going round the requested faults, so each gets about
// Sessions/(2·len(faults)) tries and clean sessions stay in the mix.
//
// unbounded_label is planted at most maxLabelPlants times: each plant is a
// new error code, and past 16 distinct codes of one tool the detector also
// reports the tool's spread, a corpus-level finding no plant names.
func faultFor(opts Options, i int) string {
	if len(opts.Faults) == 0 || i%2 == 0 {
		return ""
	}
	n := len(opts.Faults)
	f := opts.Faults[(i/2)%n]
	if f == "unbounded_label" && (i/2)/n >= maxLabelPlants {
		return ""
	}
	return f
}

// maxLabelPlants is how many sessions at most get an unbounded_label.
const maxLabelPlants = 8

// checkFaults rejects a fault name synth cannot plant.
func checkFaults(faults []string) error {
	for _, f := range faults {
		if !slices.Contains(Faults, f) {
			return fmt.Errorf("%w: unknown fault %q; synth plants %v", ErrInvalidOptions, f, Faults)
		}
	}
	return nil
}

// planter changes a clean session's events so that one detector must fire,
// and returns the events and the index of the event each finding's first
// evidence is, or ok false when the session has no place for the fault.
type planter func(p *planting) bool

// planting is a session's events on their way to holding a fault.
type planting struct {
	evs []trajectory.Event
	// marks are indices into evs of the events that prove the fault, with
	// the tool_use id each finding names.
	marks []mark
}

type mark struct {
	at        int
	toolUseID string
}

var planters = map[string]planter{
	"lost_call":                   plantLostCall,
	"unpaired_tool_use":           plantUnpaired,
	"truncated_tool_use_executed": plantTruncated,
	"stop_reason_as_done":         plantStopAsDone,
	"end_turn_with_tool_use":      plantEndTurnWithToolUse,
	"hallucinated_tool":           plantHallucinated,
	"empty_input_retry":           plantEmptyInput,
	"latency_flattened":           plantFlatLatency,
	"denial_loop":                 findDenialLoops,
	"unbounded_label":             plantUnboundedLabel,
	"decision_counted_as_trigger": plantDecisionCountedAsTrigger,
	"spill_read_loop":             plantSpillReadLoop,
	"prefix_collapse_risk":        plantPrefixCollapseRisk,
	"low_yield_spin":              plantLowYieldSpin,
	"empty_output_unexplained":    plantEmptyOutput,
	"truncation_unannounced":      plantUnannouncedTruncation,
	"hook_changed_input_silently": plantSilentInputChange,
	"context_runaway":             plantContextRunaway,
	"phantom_user_message":        plantPhantomUserMessage,
	"definition_drift":            plantDefinitionDrift,
	"cache_breaker":               plantCacheBreaker,
}

// plant decodes a generated session, plants fault in it and encodes it
// again with seqs renumbered from 1. It returns the new bytes and the
// planted faults, none when the session had no place for it.
func plant(buf []byte, fault string) ([]byte, []Fault, error) {
	var p planting
	dec := trajectory.NewDecoder(bytes.NewReader(buf), "synth")
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return buf, nil, err
		}
		p.evs = append(p.evs, ev)
	}
	if len(p.evs) == 0 || !planters[fault](&p) {
		return buf, nil, nil
	}
	out := buf[:0:0]
	for i := range p.evs {
		p.evs[i].Seq = int64(i + 1)
		var err error
		if out, err = trajectory.AppendEvent(out, p.evs[i]); err != nil {
			return buf, nil, err
		}
		out = append(out, '\n')
	}
	id := p.evs[0].Session
	var fs []Fault
	for _, m := range p.marks {
		fs = append(fs, Fault{Detector: fault, Session: id, File: id + trajectory.Ext, Line: m.at + 1, Seq: int64(m.at + 1), ToolUseID: m.toolUseID})
	}
	return out, fs, nil
}

// remove deletes the events at the given indices, keeping marks pointing
// at the same events.
func (p *planting) remove(idx ...int) {
	slices.Sort(idx)
	for k := len(idx) - 1; k >= 0; k-- {
		i := idx[k]
		p.evs = slices.Delete(p.evs, i, i+1)
		for m := range p.marks {
			if p.marks[m].at > i {
				p.marks[m].at--
			}
		}
	}
}

// toolEvent returns the index of the first event of type t after from that
// belongs to call id, or -1.
func (p *planting) toolEvent(from int, t trajectory.EventType, id string) int {
	for i := from; i < len(p.evs); i++ {
		if p.evs[i].Type() == t && trajectory.ToolUseIDOf(p.evs[i].Payload) == id {
			return i
		}
	}
	return -1
}

func (p *planting) response(i int) *trajectory.ModelResponse {
	r, _ := p.evs[i].Payload.(*trajectory.ModelResponse)
	return r
}

func (p *planting) provider() string {
	if s, ok := p.evs[0].Payload.(*trajectory.SessionStart); ok {
		return s.Provider
	}
	return ""
}

// succeeded reports whether call id, from index from on, has a tool_call
// and a tool_success, and returns the tool_call's index.
func (p *planting) succeeded(from int, id string) (int, bool) {
	c := p.toolEvent(from, trajectory.TypeToolCall, id)
	return c, c >= 0 && p.toolEvent(c, trajectory.TypeToolSuccess, id) >= 0
}

// plantLostCall removes the tool_success and tool_end of the first call
// that succeeded: the finding is at its tool_call.
func plantLostCall(p *planting) bool {
	for i, e := range p.evs {
		c, ok := e.Payload.(*trajectory.ToolCall)
		if !ok {
			continue
		}
		s, end := p.toolEvent(i, trajectory.TypeToolSuccess, c.ToolUseID), p.toolEvent(i, trajectory.TypeToolEnd, c.ToolUseID)
		if s < 0 || end < 0 {
			continue
		}
		p.marks = []mark{{i, c.ToolUseID}}
		p.remove(s, end)
		return true
	}
	return false
}

// plantUnpaired drops the tool_result of the last tool_use of the first
// response with two or more, from the request that follows it. The
// finding is at the event that carried the tool_use to the detector: the
// request when it repeats the assistant message, else the response.
func plantUnpaired(p *planting) bool {
	for i, e := range p.evs {
		r, ok := e.Payload.(*trajectory.ModelResponse)
		if !ok || len(r.ToolUses()) < 2 {
			continue
		}
		uses := r.ToolUses()
		id := uses[len(uses)-1].ID
		for q := i + 1; q < len(p.evs); q++ {
			if p.evs[q].Type() == trajectory.TypeCompaction || p.evs[q].Type() == trajectory.TypeModelResponse {
				break
			}
			req, ok := p.evs[q].Payload.(*trajectory.ModelRequest)
			if !ok {
				continue
			}
			at := i
			for m := range req.NewMessages {
				msg := &req.NewMessages[m]
				if msg.Role == trajectory.RoleAssistant {
					at = q
					continue
				}
				k := slices.IndexFunc(msg.Content, func(b trajectory.ContentBlock) bool {
					return b.Type == trajectory.BlockToolResult && b.ToolUseID == id
				})
				if k < 0 || len(msg.Content) < 2 {
					continue
				}
				msg.Content = slices.Delete(slices.Clone(msg.Content), k, k+1)
				p.marks = []mark{{at, id}}
				return true
			}
			break
		}
	}
	return false
}

// plantTruncated turns a tool_use reply (not the last) whose first call
// succeeded into a max_tokens reply with that call's input cut in half:
// the call still ran. The finding is at the reply.
func plantTruncated(p *planting) bool {
	last := lastResponse(p)
	for i, e := range p.evs {
		r, ok := e.Payload.(*trajectory.ModelResponse)
		if !ok || i == last || r.StopReason != trajectory.StopToolUse {
			continue
		}
		for k := range r.Content {
			b := &r.Content[k]
			if b.Type != trajectory.BlockToolUse || len(b.Input) < 4 {
				continue
			}
			if _, ok := p.succeeded(i, b.ID); !ok {
				continue
			}
			b.PartialInput, b.Input = string(b.Input[:len(b.Input)/2]), nil
			r.StopReason, r.StopReasonRaw = trajectory.StopMaxTokens, rawStop(p.provider(), trajectory.StopMaxTokens)
			p.marks = []mark{{i, b.ID}}
			return true
		}
	}
	return false
}

func lastResponse(p *planting) int {
	for i := len(p.evs) - 1; i >= 0; i-- {
		if p.evs[i].Type() == trajectory.TypeModelResponse {
			return i
		}
	}
	return -1
}

// endedTurn reports whether the session ended end_turn.
func endedTurn(p *planting) bool {
	e, ok := p.evs[len(p.evs)-1].Payload.(*trajectory.SessionEnd)
	return ok && e.Reason == trajectory.EndTurn
}

// plantStopAsDone drops the stop reason of the last reply of a session
// that ended end_turn. The finding is at that reply.
func plantStopAsDone(p *planting) bool {
	last := lastResponse(p)
	if last < 0 || !endedTurn(p) {
		return false
	}
	r := p.response(last)
	r.StopReason, r.StopReasonRaw = trajectory.StopMissing, ""
	p.marks = []mark{{last, ""}}
	return true
}

// plantEndTurnWithToolUse ends a session that ended end_turn at its last
// tool_use reply instead, relabelled end_turn, with nothing after it but
// session_end: the loop stopped on the stop reason. The finding is at the
// reply.
func plantEndTurnWithToolUse(p *planting) bool {
	if !endedTurn(p) {
		return false
	}
	end := len(p.evs) - 1
	for i := end - 1; i >= 0; i-- {
		r := p.response(i)
		if r == nil || r.StopReason != trajectory.StopToolUse {
			continue
		}
		if !offered(p, i) {
			// A call to a tool not offered that now never runs would
			// also be a hallucinated_tool warning: take an earlier reply.
			continue
		}
		r.StopReason, r.StopReasonRaw = trajectory.StopEndTurn, rawStop(p.provider(), trajectory.StopEndTurn)
		p.marks = []mark{{i, r.ToolUses()[0].ID}}
		p.evs = append(p.evs[:i+1], p.evs[end])
		return true
	}
	return false
}

// plantHallucinated takes a succeeded call's tool out of the tool_names of
// every request, where a reply calls that tool once: the model called a
// tool it was not offered, and it ran. The findings are at every reply
// that calls it, at error for the chosen call (it ran and succeeded).
func plantHallucinated(p *planting) bool {
	req, first := -1, -1
	for i, e := range p.evs {
		switch pl := e.Payload.(type) {
		case *trajectory.ModelRequest:
			if req < 0 {
				first = i
			}
			req = i
		case *trajectory.ModelResponse:
			if req < 0 {
				continue
			}
			offered := p.evs[req].Payload.(*trajectory.ModelRequest)
			for _, b := range pl.ToolUses() {
				n := 0
				for _, o := range pl.ToolUses() {
					if o.Name == b.Name {
						n++
					}
				}
				if _, ok := p.succeeded(i, b.ID); n != 1 || !ok || !slices.Contains(offered.ToolNames, b.Name) {
					continue
				}
				// The tool is left out of every request, not this one
				// alone: a tool list that changes from request to request
				// would be a cache breaker too. Every call of it is then
				// a call to a tool not offered.
				name := b.Name
				for k, e := range p.evs {
					switch pl := e.Payload.(type) {
					case *trajectory.ModelRequest:
						pl.ToolNames = slices.DeleteFunc(slices.Clone(pl.ToolNames), func(s string) bool { return s == name })
					case *trajectory.ModelResponse:
						for _, u := range pl.ToolUses() {
							if u.Name == name && k > first {
								p.marks = append(p.marks, mark{k, u.ID})
							}
						}
					}
				}
				return true
			}
		}
	}
	return false
}

// plantEmptyInput empties the first tool_use input of four replies in a
// row, one more than a capped retry allows. The finding is at the first
// reply of the run of empty-input replies (which may start earlier, where
// the session's own empty input was retried).
func plantEmptyInput(p *planting) bool {
	var resp []int
	for i, e := range p.evs {
		if e.Type() == trajectory.TypeModelResponse {
			resp = append(resp, i)
		}
	}
	full := func(i int) bool {
		uses := p.response(i).ToolUses()
		return len(uses) > 0 && len(uses[0].Input) > 0
	}
	for k := 0; k+4 <= len(resp); k++ {
		if !full(resp[k]) || !full(resp[k+1]) || !full(resp[k+2]) || !full(resp[k+3]) {
			continue
		}
		for _, i := range resp[k : k+4] {
			r := p.response(i)
			for c := range r.Content {
				if r.Content[c].Type == trajectory.BlockToolUse {
					r.Content[c].Input = json.RawMessage(`{}`)
					// tool_call records the input as the model sent it.
					if j := p.toolEvent(i, trajectory.TypeToolCall, r.Content[c].ID); j >= 0 {
						p.evs[j].Payload.(*trajectory.ToolCall).Input = json.RawMessage(`{}`)
					}
					break
				}
			}
		}
		first := k
		for first > 0 && slices.ContainsFunc(p.response(resp[first-1]).ToolUses(), func(b trajectory.ContentBlock) bool {
			return b.PartialInput == "" && bytes.Equal(bytes.TrimSpace(b.Input), []byte(`{}`))
		}) {
			first--
		}
		var id string
		for _, b := range p.response(resp[first]).ToolUses() {
			if b.PartialInput == "" && bytes.Equal(bytes.TrimSpace(b.Input), []byte(`{}`)) {
				id = b.ID
				break
			}
		}
		p.marks = []mark{{resp[first], id}}
		return true
	}
	return false
}

// plantFlatLatency gives every call of the first batch of two or more
// calls that ran the first one's duration, as a batch total divided among
// its calls would. The finding is at the batch's first tool_end.
func plantFlatLatency(p *planting) bool {
	type key struct{ turn, batch int }
	ends := map[key][]int{}
	var order []key
	for i, e := range p.evs {
		c, ok := e.Payload.(*trajectory.ToolCall)
		if !ok {
			continue
		}
		j := p.toolEvent(i, trajectory.TypeToolEnd, c.ToolUseID)
		if j < 0 || p.evs[j].Payload.(*trajectory.ToolEnd).DurationMs <= 0 {
			continue
		}
		k := key{e.Turn, c.Batch}
		if ends[k] == nil {
			order = append(order, k)
		}
		ends[k] = append(ends[k], j)
	}
	for _, k := range order {
		js := ends[k]
		if len(js) < 2 {
			continue
		}
		slices.Sort(js)
		first := p.evs[js[0]].Payload.(*trajectory.ToolEnd)
		// Below the detector's min_duration_ms (1) equal durations are
		// no evidence: plant where the first call took longer.
		if first.DurationMs < 1 {
			continue
		}
		for _, j := range js[1:] {
			p.evs[j].Payload.(*trajectory.ToolEnd).DurationMs = first.DurationMs
		}
		p.marks = []mark{{js[0], first.ToolUseID}}
		return true
	}
	return false
}

// findDenialLoops plants nothing: a denial_loop session was generated with
// the fuse off and denied calls always retried. It finds the calls denied
// three or more times with the same input, each a finding at its first
// denial.
func findDenialLoops(p *planting) bool {
	type key struct{ tool, input string }
	first := map[key]mark{}
	n := map[key]int{}
	var order []key
	for i, e := range p.evs {
		d, ok := e.Payload.(*trajectory.PermissionDeny)
		if !ok || d.Source == trajectory.SourceFuse {
			continue
		}
		c := p.toolEvent(0, trajectory.TypeToolCall, d.ToolUseID)
		if c < 0 {
			continue
		}
		k := key{d.Tool, string(p.evs[c].Payload.(*trajectory.ToolCall).Input)}
		if n[k] == 0 {
			first[k] = mark{i, d.ToolUseID}
			order = append(order, k)
		}
		n[k]++
	}
	for _, k := range order {
		if n[k] >= 3 {
			p.marks = append(p.marks, first[k])
		}
	}
	return len(p.marks) > 0
}

// plantUnboundedLabel appends the session id to the first failure's error
// code, a label that now carries data. The finding is at that failure.
func plantUnboundedLabel(p *planting) bool {
	for i, e := range p.evs {
		f, ok := e.Payload.(*trajectory.ToolFailure)
		if !ok || f.ErrorCode == "" {
			continue
		}
		f.ErrorCode += ":" + e.Session
		p.marks = []mark{{i, f.ToolUseID}}
		return true
	}
	return false
}

// offered reports whether every tool_use of reply i names a tool of the
// request before it.
func offered(p *planting, i int) bool {
	for q := i - 1; q >= 0; q-- {
		if req, ok := p.evs[q].Payload.(*trajectory.ModelRequest); ok {
			for _, b := range p.response(i).ToolUses() {
				if !slices.Contains(req.ToolNames, b.Name) {
					return false
				}
			}
			return true
		}
	}
	return false
}
