package detectors

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/trajectory"
)

// Verdict is what the liveness table concludes about one defense over a
// corpus, the triage of a defense that fired zero times.
type Verdict string

// The verdicts.
const (
	// VerdictLive is a defense that acted at least once.
	VerdictLive Verdict = "live"
	// VerdictNeverNeeded is a defense that never acted because its
	// condition never occurred (the path was not reached).
	VerdictNeverNeeded Verdict = "never_needed"
	// VerdictDead is a defense whose condition occurred while it was
	// enabled and that never acted (the wiring is broken).
	VerdictDead Verdict = "dead"
	// VerdictNotObservable is a defense that never acted and whose
	// condition the trajectory contract does not carry, so whether it
	// was needed cannot be told from the events.
	VerdictNotObservable Verdict = "not_observable"
)

// Thresholds of the recomputed defense conditions; they are the runtime's
// defaults, which the trajectory does not carry (a run configured
// otherwise is not told apart).
const (
	// repeatedReadOnlyMin is how many identical read-only calls with
	// identical output make the repeated-readonly condition.
	repeatedReadOnlyMin = 3
	// loopShapeMin is how many calls in a row of one tool with one key
	// set and different values make the loop-by-shape condition.
	loopShapeMin = 5
	// livenessEvidenceMax caps the evidence a liveness row keeps.
	livenessEvidenceMax = 8
)

// DefenseLiveness is one row of the liveness table: a defense over every
// session of a corpus that enabled it.
type DefenseLiveness struct {
	// Defense is the defense's name.
	Defense trajectory.DefenseName `json:"defense"`
	// Sessions counts the sessions whose session_start enabled it.
	Sessions int `json:"sessions"`
	// Triggers counts its defense_trigger events in those sessions.
	Triggers int `json:"triggers"`
	// Observable says whether its condition is recomputed from the events.
	Observable bool `json:"observable"`
	// Checked counts the events at which the defense's check runs (the
	// replies, the calls, the denials it looks at): the "nearby
	// instrumentation", proof that the path around the check ran. Zero
	// when not observable.
	Checked int `json:"checked"`
	// Held counts the times its condition held. Zero when not observable.
	Held int `json:"held"`
	// HeldSessions are the sessions where the condition held.
	HeldSessions []string `json:"held_sessions,omitempty"`
	// Missed are the sessions where the condition held and the defense
	// never acted.
	Missed []string `json:"missed,omitempty"`
	// Evidence points at the first events where the condition held in a
	// missed session, at most livenessEvidenceMax.
	Evidence []Evidence `json:"evidence,omitempty"`
	// Verdict is live, never_needed, dead or not_observable.
	Verdict Verdict `json:"verdict"`
	// Condition says in words what was recomputed, or why nothing was.
	Condition string `json:"condition"`
	// firstTurn is the turn of the first evidence.
	firstTurn int
}

// Liveness is the liveness table of a corpus: one row per defense that
// any session enabled, in the order of trajectory's defense names.
type Liveness struct {
	// Sessions counts the sessions read.
	Sessions int `json:"sessions"`
	// Defenses are the rows.
	Defenses []DefenseLiveness `json:"defenses"`
}

// condition recomputes one defense's condition over a session: it returns
// how many times the check ran and the events where the condition held.
type condition func(s *Session, tools map[string]trajectory.ToolInfo) (checked int, held []Located)

// conditions are the defenses whose condition the contract carries, with
// the sentence that says what is recomputed.
var conditions = map[trajectory.DefenseName]struct {
	what  string
	check condition
}{
	trajectory.DefenseEmptyInputRetry:    {"a tool_use with input {} for a tool whose schema has required fields", emptyInputHeld},
	trajectory.DefenseTruncatedToolUse:   {"a tool_use whose input max_tokens cut off", truncatedHeld},
	trajectory.DefenseEndTurnFallthrough: {"an end_turn or stop_sequence reply that holds a complete tool_use", endTurnHeld},
	trajectory.DefenseRepeatedReadOnly:   {fmt.Sprintf("%d calls of one read-only tool with the same input and the same result text (bash is not counted: whether a command is read-only is not in the contract)", repeatedReadOnlyMin), repeatedReadOnlyHeld},
	trajectory.DefenseLoopDetection:      {fmt.Sprintf("%d calls in a row of one tool with the same input keys and different values", loopShapeMin), loopShapeHeld},
	trajectory.DefenseDenialFuse:         {fmt.Sprintf("the same call (tool and input) denied %d times", denialLoopMin), denialFuseHeld},
	trajectory.DefenseLowYieldSpin:       {"a turn whose calls and single-number results repeat the turn before, with no file written (no snapshot) and no text for the user", lowYieldHeld},
}

// unobservable says why a defense's condition is not recomputed.
var unobservable = map[trajectory.DefenseName]string{
	trajectory.DefenseReminderCap: "precondition not observable: reminders the cap suppressed are not recorded",
}

// sessionLiveness is what one session adds to the table.
type sessionLiveness struct {
	enabled  []trajectory.DefenseName
	triggers map[trajectory.DefenseName]int
	checked  map[trajectory.DefenseName]int
	// heldN counts the times the condition held; held points at the
	// first livenessEvidenceMax of those events, and heldTurns are their
	// turns: evidence, not events, so that a large corpus does not keep
	// its events alive.
	heldN     map[trajectory.DefenseName]int
	held      map[trajectory.DefenseName][]Evidence
	heldTurns map[trajectory.DefenseName][]int
}

func livenessOf(s *Session) sessionLiveness {
	out := sessionLiveness{triggers: map[trajectory.DefenseName]int{}, checked: map[trajectory.DefenseName]int{},
		heldN: map[trajectory.DefenseName]int{}, held: map[trajectory.DefenseName][]Evidence{},
		heldTurns: map[trajectory.DefenseName][]int{}}
	for _, e := range s.Events {
		switch p := e.Payload.(type) {
		case *trajectory.SessionStart:
			out.enabled = p.Defenses
		case *trajectory.DefenseTrigger:
			out.triggers[p.Defense]++
		}
	}
	for _, d := range out.enabled {
		if _, ok := conditions[d]; !ok {
			continue
		}
		var held []Located
		out.checked[d], held = holds(s, d)
		out.heldN[d] = len(held)
		for _, e := range held[:min(len(held), livenessEvidenceMax)] {
			out.held[d] = append(out.held[d], s.Evidence(e))
			out.heldTurns[d] = append(out.heldTurns[d], e.Turn)
		}
	}
	return out
}

// livenessReads are the event types the liveness conditions look at.
var livenessReads = []trajectory.EventType{trajectory.TypeSessionStart, trajectory.TypeModelResponse,
	trajectory.TypeToolCall, trajectory.TypeToolSuccess, trajectory.TypeToolResult, trajectory.TypePermissionDeny,
	trajectory.TypeDefenseTrigger, trajectory.TypeToolEnd}

// ComputeLiveness builds the liveness table of what is loaded into db,
// reading each trajectory file again as Run does for the Go detectors,
// on every core (files that are not regular files are not read).
func ComputeLiveness(ctx context.Context, db *metrics.DB) (Liveness, error) {
	files, err := db.Query(ctx, "SELECT DISTINCT file FROM raw_events WHERE file IS NOT NULL ORDER BY file")
	if err != nil {
		return Liveness{}, fmt.Errorf("liveness: %w", err)
	}
	skip := skipTypes([]Detector{&goDetector{reads: livenessReads}})
	workers := min(runtime.GOMAXPROCS(0), max(len(files.Rows), 1))
	accs := make([]fileLiveness, workers)
	errs := make([]error, len(files.Rows))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				file := text(files.Rows[i][0])
				if info, err := os.Stat(file); file == trajectory.StdinName || err != nil || !info.Mode().IsRegular() {
					continue
				}
				errs[i] = readSessions(file, skip, accs[w].add)
			}
		}()
	}
	for i := range files.Rows {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Liveness{}, err
	}
	for _, err := range errs {
		if err != nil {
			return Liveness{}, err
		}
	}
	return tabulate(accs), nil
}

// fileLiveness is what the sessions of one file (or, for
// ComputeLiveness, of the files one worker read) add to the table: the
// rows over those sessions alone, so that a pass keeps a few rows per
// file and nothing per session. Each row keeps its first
// livenessEvidenceMax pieces of evidence by file and line (see cap), and
// tabulate keeps the first of all: the table is the same however the
// sessions were shared out, and a file's rows can be kept in a store and
// merged again later (see cache.go).
type fileLiveness struct {
	sessions int
	rows     map[trajectory.DefenseName]*DefenseLiveness
	// turns are the turns of each row's evidence, in step with it.
	turns map[trajectory.DefenseName][]int
}

// add folds a session into the rows.
func (fl *fileLiveness) add(s *Session) {
	if fl.rows == nil {
		fl.rows = map[trajectory.DefenseName]*DefenseLiveness{}
		fl.turns = map[trajectory.DefenseName][]int{}
	}
	fl.sessions++
	sl := livenessOf(s)
	for _, d := range sl.enabled {
		row := fl.rows[d]
		if row == nil {
			row = &DefenseLiveness{Defense: d}
			fl.rows[d] = row
		}
		row.Sessions++
		row.Triggers += sl.triggers[d]
		row.Checked += sl.checked[d]
		row.Held += sl.heldN[d]
		held := sl.held[d]
		if len(held) == 0 {
			continue
		}
		row.HeldSessions = append(row.HeldSessions, s.ID)
		if sl.triggers[d] > 0 {
			continue
		}
		row.Missed = append(row.Missed, s.ID)
		row.Evidence = append(row.Evidence, held...)
		fl.turns[d] = append(fl.turns[d], sl.heldTurns[d]...)
		fl.cap(d)
	}
}

// cap keeps row d's first livenessEvidenceMax pieces of evidence by file
// and line, and their turns: the same, whatever the order the sessions
// came in, as the table keeps the first of all.
func (fl *fileLiveness) cap(d trajectory.DefenseName) {
	row, turns := fl.rows[d], fl.turns[d]
	if len(row.Evidence) <= livenessEvidenceMax {
		return
	}
	idx := byFileLine(row.Evidence)
	ev, ts := make([]Evidence, 0, livenessEvidenceMax), make([]int, 0, livenessEvidenceMax)
	for _, i := range idx[:livenessEvidenceMax] {
		ev, ts = append(ev, row.Evidence[i]), append(ts, turns[i])
	}
	row.Evidence, fl.turns[d] = ev, ts
}

// byFileLine returns the indexes of evidence in the order of its files
// and lines, evidence of the same place in the order given.
func byFileLine(evidence []Evidence) []int {
	idx := make([]int, len(evidence))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		ea, eb := evidence[a], evidence[b]
		return cmp.Or(cmp.Compare(ea.File, eb.File), cmp.Compare(ea.Line, eb.Line))
	})
	return idx
}

// merge folds o's rows into fl's.
func (fl *fileLiveness) merge(o fileLiveness) {
	if fl.rows == nil {
		fl.rows = map[trajectory.DefenseName]*DefenseLiveness{}
		fl.turns = map[trajectory.DefenseName][]int{}
	}
	fl.sessions += o.sessions
	for d, r := range o.rows {
		row := fl.rows[d]
		if row == nil {
			row = &DefenseLiveness{Defense: d}
			fl.rows[d] = row
		}
		row.Sessions += r.Sessions
		row.Triggers += r.Triggers
		row.Checked += r.Checked
		row.Held += r.Held
		row.HeldSessions = append(row.HeldSessions, r.HeldSessions...)
		row.Missed = append(row.Missed, r.Missed...)
		row.Evidence = append(row.Evidence, r.Evidence...)
		fl.turns[d] = append(fl.turns[d], o.turns[d]...)
		fl.cap(d)
	}
}

// keptLiveness is fileLiveness as a store keeps it (see cache.go).
type keptLiveness struct {
	Sessions int               `json:"sessions"`
	Rows     []keptLivenessRow `json:"rows,omitempty"`
}

// keptLivenessRow is one row of keptLiveness, with its evidence's turns.
type keptLivenessRow struct {
	Row   DefenseLiveness `json:"row"`
	Turns []int           `json:"turns,omitempty"`
}

// kept returns fl as a store keeps it, its rows in the order of their
// names.
func (fl *fileLiveness) kept() keptLiveness {
	k := keptLiveness{Sessions: fl.sessions}
	for _, d := range slices.Sorted(maps.Keys(fl.rows)) {
		k.Rows = append(k.Rows, keptLivenessRow{Row: *fl.rows[d], Turns: fl.turns[d]})
	}
	return k
}

// liveness returns the fileLiveness k keeps.
func (k keptLiveness) liveness() fileLiveness {
	fl := fileLiveness{sessions: k.Sessions, rows: map[trajectory.DefenseName]*DefenseLiveness{},
		turns: map[trajectory.DefenseName][]int{}}
	for _, r := range k.Rows {
		row := r.Row
		fl.rows[row.Defense] = &row
		fl.turns[row.Defense] = r.Turns
	}
	return fl
}

// tabulate builds the table from the workers' rows.
func tabulate(perWorker []fileLiveness) Liveness {
	var lv Liveness
	var all fileLiveness
	for _, fl := range perWorker {
		all.merge(fl)
	}
	lv.Sessions = all.sessions
	rows, turns := all.rows, all.turns
	for d, row := range rows {
		slices.Sort(row.HeldSessions)
		slices.Sort(row.Missed)
		idx := byFileLine(row.Evidence)
		ev := make([]Evidence, 0, min(len(idx), livenessEvidenceMax))
		for k, i := range idx[:min(len(idx), livenessEvidenceMax)] {
			if k == 0 {
				row.firstTurn = turns[d][i]
			}
			ev = append(ev, row.Evidence[i])
		}
		row.Evidence = ev
	}
	names := make([]trajectory.DefenseName, 0, len(rows))
	for d := range rows {
		names = append(names, d)
	}
	slices.Sort(names)
	for _, d := range names {
		row := rows[d]
		if c, ok := conditions[d]; ok {
			row.Observable, row.Condition = true, c.what
		} else if why, ok := unobservable[d]; ok {
			row.Condition = why
		} else {
			row.Condition = "precondition not observable"
		}
		switch {
		case row.Triggers > 0:
			row.Verdict = VerdictLive
		case !row.Observable:
			row.Verdict = VerdictNotObservable
		case row.Held == 0:
			row.Verdict = VerdictNeverNeeded
		default:
			row.Verdict = VerdictDead
		}
		lv.Defenses = append(lv.Defenses, *row)
	}
	return lv
}

// requiresInput reports whether a tool's recorded definition has required
// input fields. A tool without a recorded definition does not count: the
// runtime retries only calls whose schema requires something.
func requiresInput(t trajectory.ToolInfo) bool {
	var def struct {
		InputSchema struct {
			Required []string `json:"required"`
		} `json:"input_schema"`
	}
	return len(t.Definition) > 0 && json.Unmarshal(t.Definition, &def) == nil && len(def.InputSchema.Required) > 0
}

// cutOff reports whether a tool_use block's input was cut off by
// max_tokens: it has no complete input.
func cutOff(b trajectory.ContentBlock) bool { return len(b.Input) == 0 || b.PartialInput != "" }

func emptyInputHeld(s *Session, tools map[string]trajectory.ToolInfo) (int, []Located) {
	checked, held := 0, []Located(nil)
	for _, e := range s.Events {
		r, ok := e.Payload.(*trajectory.ModelResponse)
		if !ok {
			continue
		}
		for b := range toolUses(r) {
			checked++
			if t, ok := tools[b.Name]; ok && emptyInput(b) && requiresInput(t) {
				held = append(held, e)
				break
			}
		}
	}
	return checked, held
}

func truncatedHeld(s *Session, _ map[string]trajectory.ToolInfo) (int, []Located) {
	checked, held := 0, []Located(nil)
	for _, e := range s.Events {
		r, ok := e.Payload.(*trajectory.ModelResponse)
		if !ok {
			continue
		}
		checked++
		if r.StopReason == trajectory.StopMaxTokens && anyToolUse(r, cutOff) {
			held = append(held, e)
		}
	}
	return checked, held
}

func endTurnHeld(s *Session, tools map[string]trajectory.ToolInfo) (int, []Located) {
	checked, held := 0, []Located(nil)
	for _, e := range s.Events {
		r, ok := e.Payload.(*trajectory.ModelResponse)
		if !ok {
			continue
		}
		checked++
		if !endLike(r.StopReason) {
			continue
		}
		// A block the empty-input retry takes is not run, so it is not
		// one the fallthrough would run either.
		if anyToolUse(r, func(b trajectory.ContentBlock) bool {
			return !cutOff(b) && !(emptyInput(b) && requiresInput(tools[b.Name]))
		}) {
			held = append(held, e)
		}
	}
	return checked, held
}

// callResult is a tool_call with the text of the tool_result that
// answered it, and whether it succeeded.
type callResult struct {
	at        Located
	call      *trajectory.ToolCall
	text      string
	found, ok bool
}

// pairResults returns the session's tool_calls in order, each with its
// tool_result text.
func pairResults(s *Session) []callResult {
	var out []callResult
	index := map[string]int{}
	for _, e := range s.Events {
		switch p := e.Payload.(type) {
		case *trajectory.ToolCall:
			index[p.ToolUseID] = len(out)
			out = append(out, callResult{at: e, call: p})
		case *trajectory.ToolSuccess:
			if i, ok := index[p.ToolUseID]; ok {
				out[i].ok = true
			}
		case *trajectory.ToolResult:
			if i, ok := index[p.ToolUseID]; ok {
				out[i].text, out[i].found = p.Text, true
			}
		}
	}
	return out
}

func repeatedReadOnlyHeld(s *Session, tools map[string]trajectory.ToolInfo) (int, []Located) {
	type state struct {
		text string
		n    int
	}
	checked, held := 0, []Located(nil)
	seen := map[string]state{}
	for _, c := range callsWithResults(s) {
		if !tools[c.call.Tool].ReadOnly || !c.found {
			continue
		}
		checked++
		sig := s.signature(c.call.Tool, c.call.Input)
		st := seen[sig]
		if st.n > 0 && st.text == c.text {
			st.n++
		} else {
			st = state{text: c.text, n: 1}
		}
		if st.n >= repeatedReadOnlyMin {
			held = append(held, c.at)
			st.n = 0
		}
		seen[sig] = st
	}
	return checked, held
}

func loopShapeHeld(s *Session, _ map[string]trajectory.ToolInfo) (int, []Located) {
	checked, held := 0, []Located(nil)
	var tool, keys, last string
	streak := 0
	for _, c := range callsWithResults(s) {
		checked++
		k, sig := s.keySet(c.call.Input), s.signature(c.call.Tool, c.call.Input)
		switch {
		case c.call.Tool == tool && k == keys && sig != last:
			streak++
		case c.call.Tool == tool && k == keys:
		default:
			tool, keys, streak = c.call.Tool, k, 1
		}
		last = sig
		if streak >= loopShapeMin {
			held = append(held, c.at)
			streak = 0
		}
	}
	return checked, held
}

func denialFuseHeld(s *Session, _ map[string]trajectory.ToolInfo) (int, []Located) {
	checked, held := 0, []Located(nil)
	input := map[string]string{}
	denials := map[string]int{}
	for _, e := range s.Events {
		switch p := e.Payload.(type) {
		case *trajectory.ToolCall:
			input[p.ToolUseID] = s.signature(p.Tool, p.Input)
		case *trajectory.PermissionDeny:
			checked++
			sig, ok := input[p.ToolUseID]
			if !ok {
				sig = p.Tool + "\x00?" + p.ToolUseID
			}
			denials[sig]++
			if denials[sig] >= denialLoopMin {
				held = append(held, e)
				denials[sig] = 0
			}
		}
	}
	return checked, held
}

// deadDefense is the corpus-level detector over the liveness table.
type deadDefense struct{ info Info }

func (d *deadDefense) Info() Info                         { return d.info }
func (d *deadDefense) Session(*Session, Params) []Finding { return nil }

// Corpus computes the liveness table itself. Run does not call it: it
// feeds the table from its own pass over the sessions, so that the files
// are read once.
func (d *deadDefense) Corpus(ctx context.Context, db *metrics.DB, _ Params) ([]Finding, error) {
	lv, err := ComputeLiveness(ctx, db)
	if err != nil {
		return nil, err
	}
	return d.findings(lv), nil
}

// findings turns the table's dead rows into findings.
func (d *deadDefense) findings(lv Liveness) []Finding {
	var out []Finding
	for _, row := range lv.Defenses {
		if row.Verdict != VerdictDead {
			continue
		}
		f := Finding{Detector: d.info.ID, Severity: d.info.Severity, Title: d.info.Title,
			Session: row.Missed[0], Sessions: row.Missed, Evidence: row.Evidence, NextStep: d.info.NextStep,
			Message: fmt.Sprintf("defense %s was enabled in %d sessions and never acted, but its condition (%s) held %d times in %d sessions, while its check ran %d times",
				row.Defense, row.Sessions, row.Condition, row.Held, len(row.HeldSessions), row.Checked)}
		f.Turn = row.firstTurn
		out = append(out, f)
	}
	return out
}
