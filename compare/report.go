package compare

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// Result is the outcome of Sessions: every divergence in event order.
type Result struct {
	// Divergences holds the first divergence and every later one, in order.
	Divergences []Divergence `json:"divergences"`
	// Counts counts the divergences per class; classes with none are absent.
	Counts map[Class]int `json:"counts"`
	// WhatIf has one line per changed permission decision, in the form
	// "turn 5, toolu_07: allowed → denied by rule Bash(rm:*)".
	WhatIf []string `json:"what_if"`
	// Normalized says which normalisation rules replaced text, and how
	// often, in the order they ran.
	Normalized []RuleUse `json:"normalized"`
	// Notes say what the replay did differently from the recorded session
	// on purpose (a configuration or approvals it did not trust) or could
	// not reproduce (files the workspace snapshot did not capture), so a
	// divergence they cause is explained. The caller (replay.Run) fills
	// them; Sessions leaves them empty.
	Notes []string `json:"notes"`
	// RecordedEvents and ReplayedEvents are the sizes of the compared streams.
	RecordedEvents int `json:"recorded_events"`
	ReplayedEvents int `json:"replayed_events"`
}

func newResult(divs []Divergence, whatIf []whatIfLine, used []RuleUse, nrec, nrep int) Result {
	r := Result{Divergences: divs, Counts: map[Class]int{}, WhatIf: []string{}, Normalized: used, Notes: []string{},
		RecordedEvents: nrec, ReplayedEvents: nrep}
	if r.Divergences == nil {
		r.Divergences = []Divergence{}
	}
	for _, d := range divs {
		r.Counts[d.Class]++
	}
	sort.SliceStable(whatIf, func(i, j int) bool {
		if whatIf[i].turn != whatIf[j].turn {
			return whatIf[i].turn < whatIf[j].turn
		}
		return whatIf[i].order < whatIf[j].order
	})
	for _, w := range whatIf {
		r.WhatIf = append(r.WhatIf, w.text)
	}
	return r
}

// Identical reports whether the replay matches the recording once volatile
// values are normalised away.
func (r Result) Identical() bool { return len(r.Divergences) == 0 }

// First returns the first divergence, and false when there is none.
func (r Result) First() (Divergence, bool) {
	if len(r.Divergences) == 0 {
		return Divergence{}, false
	}
	return r.Divergences[0], true
}

// Row is one line of a report: one call, one turn's model side, or the
// session's end, with every divergence found there.
type Row struct {
	Turn      int
	ToolUseID string
	Tool      string
	// Classes are the row's divergence classes, each once, in order.
	Classes []Class
	// What describes the row's first divergence, with a count of the others.
	What string
	// Divergences are the row's divergences in event order.
	Divergences []Divergence
}

// maxWhatRunes bounds a row's description, so a row stays one line.
const maxWhatRunes = 110

// Rows groups the divergences into one row per call, one per turn for its
// model requests and replies, and one for how the session ended, in the
// order of their first divergence.
func (r Result) Rows() []Row {
	type key struct {
		turn int
		id   string
		end  bool
	}
	var rows []Row
	at := map[key]int{}
	for _, d := range r.Divergences {
		// How the session ended is its own row: it belongs to no turn's
		// requests.
		k := key{d.Turn, d.ToolUseID, d.Class == ClassEnd}
		i, ok := at[k]
		if !ok {
			i = len(rows)
			at[k] = i
			rows = append(rows, Row{Turn: d.Turn, ToolUseID: d.ToolUseID, Tool: d.Tool})
		}
		row := &rows[i]
		row.Divergences = append(row.Divergences, d)
		if !slices.Contains(row.Classes, d.Class) {
			row.Classes = append(row.Classes, d.Class)
		}
	}
	for i := range rows {
		row := &rows[i]
		what := row.Divergences[0].Summary
		if n := len(row.Divergences) - 1; n > 0 {
			fields := make([]string, 0, n)
			for _, d := range row.Divergences[1:] {
				fields = append(fields, d.Field)
			}
			what += fmt.Sprintf(" (+%d more: %s)", n, strings.Join(fields, ", "))
		}
		row.What = cut(OneLine(what), maxWhatRunes)
	}
	return rows
}

// classList names a row's first class and how many others it has, e.g.
// "permission_changed +2", so the column stays narrow; the JSON and the
// details carry every class.
func classList(cs []Class) string {
	if len(cs) <= 1 {
		return joinNames(cs)
	}
	return fmt.Sprintf("%s +%d", cs[0], len(cs)-1)
}

// normalizedLine says which rules replaced text and how often in the
// recording and the replay, e.g. "date 2/2, ls_time 4/4"; "" when none did.
func (r Result) normalizedLine() string {
	parts := make([]string, 0, len(r.Normalized))
	for _, u := range r.Normalized {
		parts = append(parts, fmt.Sprintf("%s %d/%d", u.Rule, u.Recorded, u.Replayed))
	}
	return strings.Join(parts, ", ")
}

// Markdown writes the report as Markdown: a verdict, the counts per
// class, the normalisation rules that applied, the what-if lines and one
// table row per call or turn.
func (r Result) Markdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Replay comparison\n\n")
	if r.Identical() {
		fmt.Fprintf(&b, "The replay is identical to the recording (%d recorded events, %d replayed) once volatile values are normalised.\n", r.RecordedEvents, r.ReplayedEvents)
		r.markdownNormalized(&b)
		r.markdownNotes(&b)
		_, err := io.WriteString(w, b.String())
		return err
	}
	first := r.Divergences[0]
	fmt.Fprintf(&b, "%d divergence(s). The first is at turn %d: %s (%s).\n\n", len(r.Divergences), first.Turn, first.Class, first.Field)
	b.WriteString("| class | count |\n|---|---|\n")
	for _, c := range Classes {
		if n := r.Counts[c]; n > 0 {
			fmt.Fprintf(&b, "| %s | %d |\n", c, n)
		}
	}
	r.markdownNormalized(&b)
	r.markdownNotes(&b)
	if len(r.WhatIf) > 0 {
		b.WriteString("\n## What-if\n\n")
		for _, l := range r.WhatIf {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	b.WriteString("\n## Divergences\n\n| turn | call | tool | class | what changed |\n|---|---|---|---|---|\n")
	for _, row := range r.Rows() {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", row.Turn, MarkdownCell(row.ToolUseID), MarkdownCell(row.Tool),
			classList(row.Classes), MarkdownCell(row.What))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// MarkdownDetails writes a unified diff of every divergence of text, each
// in a fenced diff block under a heading that names it.
func (r Result) MarkdownDetails(w io.Writer) error {
	var b strings.Builder
	for _, d := range r.Divergences {
		if d.Diff == "" {
			continue
		}
		fmt.Fprintf(&b, "\n### Turn %d%s: %s (%s)\n\n```diff\n%s```\n", d.Turn, callLabel(d), d.Class, d.Field, d.Diff)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func callLabel(d Divergence) string {
	switch {
	case d.ToolUseID != "" && d.Tool != "":
		return ", " + d.ToolUseID + " " + d.Tool
	case d.ToolUseID != "":
		return ", " + d.ToolUseID
	}
	return ""
}

func (r Result) markdownNormalized(b *strings.Builder) {
	if l := r.normalizedLine(); l != "" {
		fmt.Fprintf(b, "\nNormalised (rule, replacements recorded/replayed): %s.\n", l)
	}
}

func (r Result) markdownNotes(b *strings.Builder) {
	if len(r.Notes) == 0 {
		return
	}
	b.WriteString("\n## Notes\n\n")
	for _, n := range r.Notes {
		fmt.Fprintf(b, "- %s\n", strings.ReplaceAll(n, "\n", " "))
	}
}

// WriteNotes writes the notes one a line, each starting with "note: ".
func (r Result) WriteNotes(w io.Writer) error {
	for _, n := range r.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", OneLine(n)); err != nil {
			return err
		}
	}
	return nil
}

// MarkdownCell quotes a value for a Markdown table cell: pipes and newlines
// would otherwise split the row. Batch summaries use it too.
func MarkdownCell(s string) string {
	if s == "" {
		return ""
	}
	s = strings.ReplaceAll(s, "\\", "\\\\")
	s = strings.ReplaceAll(s, "|", "\\|")
	s = strings.ReplaceAll(s, "\r", "")
	s = strings.ReplaceAll(s, "\n", "⏎")
	return "`" + strings.ReplaceAll(s, "`", "'") + "`"
}

// Table writes the report as plain text for a terminal: the notes, then
// one aligned line per call or turn, then the normalisation rules that
// applied and the what-if lines.
func (r Result) Table(w io.Writer) error {
	if err := r.WriteNotes(w); err != nil {
		return err
	}
	if r.Identical() {
		_, err := fmt.Fprintf(w, "identical: %d recorded events, %d replayed, no divergence after normalisation\n", r.RecordedEvents, r.ReplayedEvents)
		if err == nil {
			err = r.WriteNormalized(w)
		}
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TURN\tCALL\tTOOL\tCLASS\tWHAT CHANGED")
	for _, row := range r.Rows() {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", row.Turn, OrDash(row.ToolUseID), OrDash(row.Tool), classList(row.Classes), row.What)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := r.WriteNormalized(w); err != nil {
		return err
	}
	for _, l := range r.WhatIf {
		if _, err := fmt.Fprintf(w, "what-if: %s\n", l); err != nil {
			return err
		}
	}
	return nil
}

// WriteNormalized writes the line "normalised (recorded/replayed): RULE
// N/M, ..." naming the rules that replaced text and how often on each
// side; nothing when none did.
func (r Result) WriteNormalized(w io.Writer) error {
	if l := r.normalizedLine(); l != "" {
		_, err := fmt.Fprintf(w, "normalised (recorded/replayed): %s\n", l)
		return err
	}
	return nil
}

// Details writes a unified diff of every divergence of text, each under a
// line that names it, for a terminal.
func (r Result) Details(w io.Writer) error {
	for _, d := range r.Divergences {
		if d.Diff == "" {
			continue
		}
		if _, err := fmt.Fprintf(w, "\n── turn %d%s: %s (%s)\n%s", d.Turn, callLabel(d), d.Class, d.Field, d.Diff); err != nil {
			return err
		}
	}
	return nil
}

// OrDash returns s, or "-" for an empty value, so a table column never
// reads as missing.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// OneLine keeps tabs and newlines from breaking a table's alignment.
func OneLine(s string) string {
	return strings.NewReplacer("\n", "⏎", "\t", " ", "\r", "").Replace(s)
}
