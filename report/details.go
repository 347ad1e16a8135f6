package report

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// details reads the events of the sessions in rows and builds their
// timelines and conversations, in the order of rows.
func (g *gatherer) details(rows []SessionRow, textMax int) []SessionDetail {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = "'" + strings.ReplaceAll(r.ID, "'", "''") + "'"
	}
	out := make([]SessionDetail, len(rows))
	index := map[string]*sessionBuild{}
	for i, r := range rows {
		out[i].SessionRow = r
		index[r.ID] = &sessionBuild{d: &out[i], textMax: textMax, turns: map[int]int{}, calls: map[string][2]int{}}
	}
	evs := g.query(`SELECT session, seq, epoch_us(ts) - min(epoch_us(ts)) OVER (PARTITION BY session), turn, type,
       tool_use_id, tool, batch, CAST(content AS VARCHAR), stop_reason, CAST(usage AS VARCHAR), CAST(input AS VARCHAR),
       text, failure_kind, error_code, source, coalesce(needed_prompt, false), defense, action, kind,
       CAST(new_messages AS VARCHAR), duration_ms, coalesce(duration_unknown, false), coalesce(truncated, false)
FROM raw_events WHERE session IN (` + strings.Join(ids, ", ") + `)
ORDER BY session, seq`)
	for _, r := range evs {
		if b := index[toString(r[0])]; b != nil {
			b.add(eventRow{seq: toInt(r[1]), atUs: toInt(r[2]), turn: int(toInt(r[3])), typ: toString(r[4]),
				toolUseID: toString(r[5]), tool: toString(r[6]), batch: int(toInt(r[7])), content: toString(r[8]),
				stopReason: toString(r[9]), usage: toString(r[10]), input: toString(r[11]), text: toString(r[12]),
				failureKind: toString(r[13]), errorCode: toString(r[14]), source: toString(r[15]), neededPrompt: toBool(r[16]),
				defense: toString(r[17]), action: toString(r[18]), kind: toString(r[19]), newMessages: toString(r[20]),
				durationMs: toFloat(r[21]), durationUnknown: toBool(r[22]), truncated: toBool(r[23])})
		}
	}
	// Whether a call ran is the glossary's one definition (tool_calls.ran),
	// never re-derived from the events: a call that did not run has no
	// duration to draw or to call measured.
	for _, r := range g.query(`SELECT session, tool_use_id, coalesce(ran, false) FROM tool_calls WHERE session IN (` + strings.Join(ids, ", ") + `)`) {
		if b := index[toString(r[0])]; b != nil {
			if c := b.call(toString(r[1])); c != nil {
				c.Ran = toBool(r[2])
				c.Measured = c.Measured && c.Ran
			}
		}
	}
	return out
}

// eventRow is one event of a detailed session, as queried.
type eventRow struct {
	seq, atUs                                  int64
	turn, batch                                int
	typ, toolUseID, tool, content, stopReason  string
	usage, input, text, failureKind, errorCode string
	source, defense, action, kind, newMessages string
	neededPrompt, durationUnknown, truncated   bool
	durationMs                                 float64
}

// sessionBuild gathers one session's events into its SessionDetail.
type sessionBuild struct {
	d       *SessionDetail
	textMax int
	// turns maps a turn number to its index in d.TurnList; calls maps a
	// tool_use_id to its turn and call index.
	turns map[int]int
	calls map[string][2]int
}

func (b *sessionBuild) turn(n int) *Turn {
	i, ok := b.turns[n]
	if !ok {
		i = len(b.d.TurnList)
		b.d.TurnList = append(b.d.TurnList, Turn{N: n})
		b.turns[n] = i
	}
	return &b.d.TurnList[i]
}

func (b *sessionBuild) call(id string) *Call {
	at, ok := b.calls[id]
	if !ok || id == "" {
		return nil
	}
	return &b.d.TurnList[at[0]].Calls[at[1]]
}

func (b *sessionBuild) add(e eventRow) {
	anchor := eventAnchor(b.d.ID, e.seq)
	switch e.typ {
	case "model_request":
		t := b.turn(e.turn)
		t.ModelStartUs = e.atUs
		t.Anchors = append(t.Anchors, anchor)
		for _, text := range userTexts(e.newMessages) {
			if b.d.Prompt == "" {
				b.d.Prompt = abbreviate(text, b.textMax)
				continue
			}
			t.Marks = append(t.Marks, Mark{Kind: "user", Label: "user message", Text: abbreviate(text, b.textMax), AtUs: e.atUs})
		}
		return
	case "model_response":
		t := b.turn(e.turn)
		t.Anchor, t.StopReason, t.ModelEndUs, t.ModelMs = anchor, e.stopReason, e.atUs, e.durationMs
		if t.ModelStartUs == 0 && e.turn > 0 {
			t.ModelStartUs = e.atUs - int64(e.durationMs*1000)
		}
		var u struct {
			In  int64 `json:"input_tokens"`
			Out int64 `json:"output_tokens"`
			CR  int64 `json:"cache_read_tokens"`
			CC  int64 `json:"cache_creation_tokens"`
		}
		_ = json.Unmarshal([]byte(e.usage), &u)
		t.InputTokens, t.OutputTokens = u.In+u.CR+u.CC, u.Out
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		_ = json.Unmarshal([]byte(e.content), &blocks)
		var texts []string
		for _, bl := range blocks {
			if bl.Type == "text" && bl.Text != "" {
				texts = append(texts, bl.Text)
			}
		}
		t.Text = abbreviate(strings.Join(texts, "\n\n"), b.textMax)
		return
	case "tool_call":
		t := b.turn(e.turn)
		ti := b.turns[e.turn]
		b.calls[e.toolUseID] = [2]int{ti, len(t.Calls)}
		t.Calls = append(t.Calls, Call{ID: e.toolUseID, Tool: e.tool, Anchor: anchor, Batch: e.batch,
			Input: abbreviate(e.input, b.textMax/2), Outcome: "lost"})
		return
	case "defense_trigger":
		t := b.turn(e.turn)
		t.Marks = append(t.Marks, Mark{Kind: "defense", Label: e.defense, Text: e.action, Anchor: anchor, AtUs: e.atUs})
		return
	case "reminder":
		t := b.turn(e.turn)
		t.Marks = append(t.Marks, Mark{Kind: "reminder", Label: e.kind, Text: abbreviate(e.text, b.textMax), Anchor: anchor, AtUs: e.atUs})
		return
	}
	c := b.call(e.toolUseID)
	if c == nil {
		// An event of no call shown (session_start, session_end, an
		// unpaired result): an anchor in its turn, or the session's.
		if i, ok := b.turns[e.turn]; ok {
			b.d.TurnList[i].Anchors = append(b.d.TurnList[i].Anchors, anchor)
		} else {
			b.d.Anchors = append(b.d.Anchors, anchor)
		}
		return
	}
	c.Anchors = append(c.Anchors, anchor)
	switch e.typ {
	case "permission_allow", "permission_deny":
		c.Permission, c.PermissionSource = strings.TrimPrefix(e.typ, "permission_"), e.source
		c.Prompted = c.Prompted || e.neededPrompt
	case "permission_prompt":
		c.Prompted = true
	case "tool_success":
		c.Outcome = "success"
	case "tool_failure":
		c.Outcome, c.FailureKind, c.ErrorCode = "failure", e.failureKind, e.errorCode
	case "tool_end":
		c.DurationMs, c.Measured, c.EndUs, c.Truncated = e.durationMs, !e.durationUnknown, e.atUs, e.truncated
	case "tool_result":
		c.Output = abbreviate(e.text, b.textMax)
	}
}

// userTexts returns the text blocks of the user messages in a
// model_request's new_messages.
func userTexts(newMessages string) []string {
	var msgs []struct {
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal([]byte(newMessages), &msgs) != nil {
		return nil
	}
	var out []string
	for _, m := range msgs {
		if m.Role != "user" {
			continue
		}
		for _, c := range m.Content {
			if c.Type == "text" && c.Text != "" {
				out = append(out, c.Text)
			}
		}
	}
	return out
}

// abbreviate cuts s to about max bytes on a character boundary and says
// how much was left out.
func abbreviate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes more)", s[:cut], len(s)-cut)
}

// lanes assigns each call of a turn a lane so that calls that overlap in
// time are drawn on different lanes: parallel batches show as parallel
// bars. It returns the lane of each call and the number of lanes.
func lanes(calls []Call) ([]int, int) {
	type iv struct {
		i          int
		start, end int64
	}
	ivs := make([]iv, 0, len(calls))
	for i, c := range calls {
		start := c.EndUs - int64(c.DurationMs*1000)
		ivs = append(ivs, iv{i, start, c.EndUs})
	}
	slices.SortStableFunc(ivs, func(a, b iv) int {
		if a.start != b.start {
			if a.start < b.start {
				return -1
			}
			return 1
		}
		return 0
	})
	lane := make([]int, len(calls))
	var busyUntil []int64
	for _, v := range ivs {
		placed := false
		for l, until := range busyUntil {
			if until <= v.start {
				lane[v.i], busyUntil[l], placed = l, v.end, true
				break
			}
		}
		if !placed {
			lane[v.i] = len(busyUntil)
			busyUntil = append(busyUntil, v.end)
		}
	}
	return lane, max(len(busyUntil), 1)
}
