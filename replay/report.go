package replay

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Report is the outcome of Compare: every divergence in event order.
type Report struct {
	// Divergences holds the first divergence and every later one, in order.
	Divergences []Divergence `json:"divergences"`
	// Counts counts the divergences per class; classes with none are absent.
	Counts map[Class]int `json:"counts"`
	// WhatIf has one line per changed permission decision, in the form
	// "turn 5, toolu_07: allowed → denied by rule Bash(rm:*)".
	WhatIf []string `json:"what_if"`
	// Notes say what the replay did differently from the recorded session
	// on purpose (a configuration or approvals it did not trust) or could
	// not reproduce (files the workspace snapshot did not capture), so a
	// divergence they cause is explained. Run fills them; Compare leaves
	// them empty.
	Notes []string `json:"notes"`
	// RecordedEvents and ReplayedEvents are the sizes of the compared streams.
	RecordedEvents int `json:"recorded_events"`
	ReplayedEvents int `json:"replayed_events"`
}

func newReport(divs []Divergence, whatIf []whatIfLine, nrec, nrep int) Report {
	r := Report{Divergences: divs, Counts: map[Class]int{}, WhatIf: []string{}, Notes: []string{},
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
func (r Report) Identical() bool { return len(r.Divergences) == 0 }

// First returns the first divergence, and false when there is none.
func (r Report) First() (Divergence, bool) {
	if len(r.Divergences) == 0 {
		return Divergence{}, false
	}
	return r.Divergences[0], true
}

// Markdown writes the report as Markdown: a verdict, the counts per
// class, the what-if lines and a table of every divergence.
func (r Report) Markdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Replay comparison\n\n")
	if r.Identical() {
		fmt.Fprintf(&b, "The replay is identical to the recording (%d recorded events, %d replayed) once volatile values are normalised.\n", r.RecordedEvents, r.ReplayedEvents)
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
	r.markdownNotes(&b)
	if len(r.WhatIf) > 0 {
		b.WriteString("\n## What-if\n\n")
		for _, l := range r.WhatIf {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	b.WriteString("\n## Divergences\n\n| turn | tool_use_id | class | field | recorded | replayed | detail |\n|---|---|---|---|---|---|---|\n")
	for _, d := range r.Divergences {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s |\n", d.Turn, mdCell(d.ToolUseID), d.Class,
			mdCell(d.Field), mdCell(d.Recorded), mdCell(d.Replayed), mdCell(d.Detail))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r Report) markdownNotes(b *strings.Builder) {
	if len(r.Notes) == 0 {
		return
	}
	b.WriteString("\n## Notes\n\n")
	for _, n := range r.Notes {
		fmt.Fprintf(b, "- %s\n", strings.ReplaceAll(n, "\n", " "))
	}
}

// WriteNotes writes the notes one a line, each starting with "note: ".
func (r Report) WriteNotes(w io.Writer) error {
	for _, n := range r.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", oneLine(n)); err != nil {
			return err
		}
	}
	return nil
}

// mdCell keeps a value inside its table cell: pipes and newlines would
// otherwise split the row.
func mdCell(s string) string {
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
// the divergences in aligned columns, one a line, then the what-if lines.
func (r Report) Table(w io.Writer) error {
	if err := r.WriteNotes(w); err != nil {
		return err
	}
	if r.Identical() {
		_, err := fmt.Fprintf(w, "identical: %d recorded events, %d replayed, no divergence after normalisation\n", r.RecordedEvents, r.ReplayedEvents)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TURN\tTOOL_USE_ID\tCLASS\tFIELD\tRECORDED\tREPLAYED\tDETAIL")
	for _, d := range r.Divergences {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Turn, dash(d.ToolUseID), d.Class,
			dash(d.Field), dash(oneLine(d.Recorded)), dash(oneLine(d.Replayed)), dash(d.Detail))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range r.WhatIf {
		if _, err := fmt.Fprintf(w, "what-if: %s\n", l); err != nil {
			return err
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps tabs and newlines from breaking the table's alignment.
func oneLine(s string) string {
	return strings.NewReplacer("\n", "⏎", "\t", " ", "\r", "").Replace(s)
}
