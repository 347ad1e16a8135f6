package compare

import (
	"encoding/json"
	"sort"

	"github.com/retrace-dev/retrace/trajectory"
)

// Class names what kind of difference a Divergence is. The set is closed.
type Class string

// The divergence classes.
const (
	// ClassToolOutput means a tool_result's text or is_error differs.
	ClassToolOutput Class = "tool_output_changed"
	// ClassPermission means a call's permission decisions differ.
	ClassPermission Class = "permission_changed"
	// ClassHook means a hook ran with another outcome, or ran on one side only.
	ClassHook Class = "hook_changed"
	// ClassFailureKind means success became failure, or the failure kind or code changed.
	ClassFailureKind Class = "failure_kind_changed"
	// ClassDefenseFired means a defense acted only in the replay, or acted differently.
	ClassDefenseFired Class = "defense_fired"
	// ClassDefenseStopped means a defense acted only in the recording.
	ClassDefenseStopped Class = "defense_stopped"
	// ClassRequestPrefix means a model request differs; Detail names the field
	// and whether the prompt cache breaks.
	ClassRequestPrefix Class = "request_prefix_changed"
	// ClassResponse means a model response, or the tool input it carried, differs.
	ClassResponse Class = "response_changed"
	// ClassCallMissing means a call, request or response of the recording did not happen.
	ClassCallMissing Class = "call_missing"
	// ClassCallExtra means the replay made a call, request or response the recording lacks.
	ClassCallExtra Class = "call_extra"
	// ClassEnd means the session ended for another reason.
	ClassEnd Class = "end_changed"
)

// Classes lists every Class in report order.
var Classes = []Class{
	ClassToolOutput, ClassPermission, ClassHook, ClassFailureKind,
	ClassDefenseFired, ClassDefenseStopped, ClassRequestPrefix, ClassResponse,
	ClassCallMissing, ClassCallExtra, ClassEnd,
}

// DetailLaterRequests is the Detail of the one divergence that stands for
// every model request after the first changed one.
const DetailLaterRequests = "later requests differ because of the change above; they are not compared further"

// Divergence is one place where the replay differs from the recording
// after normalisation.
type Divergence struct {
	// Turn is the recording's turn (the replay's for extra events).
	Turn int `json:"turn"`
	// ToolUseID is the call concerned, if any.
	ToolUseID string `json:"tool_use_id,omitempty"`
	// Tool is the concerned call's tool, if any.
	Tool  string `json:"tool,omitempty"`
	Class Class  `json:"class"`
	// Field names the differing part, e.g. "text", "messages[3]", "reason".
	Field string `json:"field"`
	// Recorded and Replayed are the normalised values, cut to
	// Options.MaxValueRunes with a trailing "…".
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
	Detail   string `json:"detail,omitempty"`
	// Summary is the short description a report row shows, e.g.
	// `output line 2: "Wed Jan  1…" → "Tue Dec  1…"`.
	Summary string `json:"summary"`
	// Diff is a unified diff of the whole normalised values, for the
	// fields that hold text (tool output, tool input, messages, replies,
	// the system prompt); long diffs are cut with a marker.
	Diff string `json:"diff,omitempty"`

	// order places the divergence in the recording's event order.
	order int
}

// Sessions aligns recorded and replayed by meaning and reports every
// difference that survives normalisation. It never fails: events it cannot
// align become call_missing or call_extra divergences.
func Sessions(recorded, replayed []trajectory.Event, opts Options) Result {
	rn := newNormalizer(opts)
	c := &comparer{rn: rn, pn: rn.other()}
	rec := index(recorded)
	rep := index(replayed)
	rec.n, rep.n = c.rn, c.pn
	withPIDs(c.rn, c.pn, processIDs(recorded), processIDs(replayed))
	c.markPIDTexts(rec, rep)
	c.tools = map[string]string{}
	for _, s := range []*session{rep, rec} {
		for id, cl := range s.calls {
			if cl.tool != "" {
				c.tools[id] = cl.tool
			}
		}
	}
	c.compareCalls(rec, rep)
	c.compareModel(rec, rep)
	c.compareDefenses(rec, rep)
	c.compareEnd(rec, rep)
	sort.SliceStable(c.divs, func(i, j int) bool {
		if c.divs[i].Turn != c.divs[j].Turn {
			return c.divs[i].Turn < c.divs[j].Turn
		}
		return c.divs[i].order < c.divs[j].order
	})
	return newResult(c.divs, c.whatIf, used(c.rn, c.pn), len(recorded), len(replayed))
}

type comparer struct {
	// rn and pn normalise the recorded and the replayed side: the same
	// rules, each side's matches counted apart.
	rn, pn *normalizer
	divs   []Divergence
	whatIf []whatIfLine
	// tools maps a tool_use_id to its tool, so text inside messages can
	// be normalised by the rules and level of the tool it came from.
	tools map[string]string
}

// whatIfLine is kept with its position so the summary follows event order.
type whatIfLine struct {
	turn, order int
	text        string
}

// add records d; a divergence of text also gets the unified diff of its
// whole values before they are cut.
func (c *comparer) add(d Divergence) {
	if d.Tool == "" && d.ToolUseID != "" {
		d.Tool = c.tools[d.ToolUseID]
	}
	if textField(d.Field) {
		d.Diff = unifiedDiff(d.Recorded, d.Replayed)
	}
	if d.Summary == "" {
		d.Summary = summarize(d)
	}
	d.Recorded = c.rn.short(d.Recorded)
	d.Replayed = c.rn.short(d.Replayed)
	c.divs = append(c.divs, d)
}

// call gathers everything a session recorded about one tool_use_id.
type call struct {
	id      string
	turn    int
	order   int
	tool    string
	input   json.RawMessage
	hasCall bool
	hooks   []*trajectory.HookRun
	perms   []trajectory.Event
	outcome string
	hasOut  bool
	result  *trajectory.ToolResult
}

type modelCall struct {
	turn  int
	order int
	req   *trajectory.ModelRequest
	// msgs is req's full message-hash list (trajectory.Conversation):
	// a v2 request records only the change since the one before.
	msgs []string
	resp *trajectory.ModelResponse
}

type defenseKey struct {
	defense   trajectory.DefenseName
	toolUseID string
	turn      int
	nth       int
}

type defenseAct struct {
	action trajectory.DefenseAction
	turn   int
	order  int
}

// session is one side's events arranged for alignment.
type session struct {
	calls    map[string]*call
	callIDs  []string
	requests []modelCall
	resps    []modelCall
	// messages and systems map a hash to the content it was seen with, so
	// message comparisons can normalise paths inside the text.
	messages map[string]trajectory.Message
	systems  map[string]string
	// n normalises this side's text.
	n *normalizer
	// normalized caches messageText by hash.
	normalized map[string]string
	defenses   map[defenseKey]defenseAct
	defOrder   []defenseKey
	end        *trajectory.SessionEnd
	endTurn    int
	endOrder   int
}

func index(events []trajectory.Event) *session {
	s := &session{
		calls:      map[string]*call{},
		messages:   map[string]trajectory.Message{},
		systems:    map[string]string{},
		normalized: map[string]string{},
		defenses:   map[defenseKey]defenseAct{},
	}
	get := func(id string, turn, order int) *call {
		c, ok := s.calls[id]
		if !ok {
			c = &call{id: id, turn: turn, order: order}
			s.calls[id] = c
			s.callIDs = append(s.callIDs, id)
		}
		return c
	}
	seen := map[defenseKey]int{}
	var conv trajectory.Conversation
	for i, ev := range events {
		switch p := ev.Payload.(type) {
		case *trajectory.SessionStart:
			conv = trajectory.Conversation{}
		case *trajectory.ModelRequest:
			// A broken chain still gives the messages as recorded; the
			// comparison then shows where they differ.
			msgs, _ := conv.Next(p)
			s.requests = append(s.requests, modelCall{turn: ev.Turn, order: i, req: p, msgs: msgs})
			if p.System != "" {
				s.systems[p.SystemHash] = p.System
			}
			first := len(p.MessageHashes) - len(p.NewMessages)
			for j, m := range p.NewMessages {
				if first+j >= 0 {
					s.messages[p.MessageHashes[first+j]] = m
				}
			}
		case *trajectory.ModelResponse:
			s.resps = append(s.resps, modelCall{turn: ev.Turn, order: i, resp: p})
		case *trajectory.ToolCall:
			c := get(p.ToolUseID, ev.Turn, i)
			c.turn, c.order, c.tool, c.input, c.hasCall = ev.Turn, i, p.Tool, p.Input, true
		case *trajectory.HookRun:
			c := get(p.ToolUseID, ev.Turn, i)
			c.hooks = append(c.hooks, p)
		case *trajectory.PermissionAllow, *trajectory.PermissionPrompt, *trajectory.PermissionDeny:
			c := get(trajectory.ToolUseIDOf(p), ev.Turn, i)
			c.perms = append(c.perms, ev)
		case *trajectory.ToolSuccess:
			c := get(p.ToolUseID, ev.Turn, i)
			c.outcome, c.hasOut = "success", true
		case *trajectory.ToolFailure:
			c := get(p.ToolUseID, ev.Turn, i)
			c.outcome, c.hasOut = failureText(p), true
		case *trajectory.ToolResult:
			c := get(p.ToolUseID, ev.Turn, i)
			c.result = p
		case *trajectory.DefenseTrigger:
			k := defenseKey{defense: p.Defense, toolUseID: p.ToolUseID}
			if p.ToolUseID == "" {
				// Without a call to anchor on, the turn is the best anchor.
				k.turn = ev.Turn
			}
			k.nth = seen[k]
			seen[k]++
			s.defenses[k] = defenseAct{action: p.Action, turn: ev.Turn, order: i}
			s.defOrder = append(s.defOrder, k)
		case *trajectory.SessionEnd:
			s.end, s.endTurn, s.endOrder = p, ev.Turn, i
		}
	}
	return s
}

func failureText(p *trajectory.ToolFailure) string {
	if p.ErrorCode == "" {
		return "failure " + string(p.FailureKind)
	}
	return "failure " + string(p.FailureKind) + " (" + p.ErrorCode + ")"
}

// canonJSON re-encodes a tool's input with sorted keys so that key order
// and spacing never count, then normalises the text.
func (c *comparer) canonJSON(n *normalizer, raw json.RawMessage, tool string) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return n.text(string(raw), ScopeToolInput, tool)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return n.text(string(raw), ScopeToolInput, tool)
	}
	return n.text(string(b), ScopeToolInput, tool)
}

// processIDs maps each call of a session that started a process to its
// process id, as tool_end recorded it.
func processIDs(events []trajectory.Event) map[string]int {
	out := map[string]int{}
	for _, ev := range events {
		if end, ok := ev.Payload.(*trajectory.ToolEnd); ok && end.PID > 0 {
			out[end.ToolUseID] = end.PID
		}
	}
	return out
}

// markPIDTexts chooses the tool outputs whose process ids are mapped: a
// call's output on both sides when the two differ without the mapping.
func (c *comparer) markPIDTexts(rec, rep *session) {
	if c.rn.pids == nil && c.pn.pids == nil {
		return
	}
	c.rn.pidTexts, c.pn.pidTexts = map[string]bool{}, map[string]bool{}
	for id, r := range rec.calls {
		p, ok := rep.calls[id]
		if !ok || r.result == nil || p.result == nil {
			continue
		}
		a := c.rn.apply(r.result.Text, ScopeToolOutput, r.tool, map[string]int{}, false)
		b := c.pn.apply(p.result.Text, ScopeToolOutput, r.tool, map[string]int{}, false)
		if a != b {
			c.rn.pidTexts[r.result.Text], c.pn.pidTexts[p.result.Text] = true, true
		}
	}
}
