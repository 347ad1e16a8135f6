package scenarios

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Change is what became of one scenario since a baseline run.
type Change string

// The changes, in the order they are listed.
const (
	// ChangeRegressed: it passed in the baseline and does not now (it
	// fails, is flaky, inconclusive or errors).
	ChangeRegressed Change = "regressed"
	// ChangeFixed: it did not pass in the baseline and passes now.
	ChangeFixed Change = "fixed"
	// ChangeChanged: it did not pass either time, with another verdict.
	ChangeChanged Change = "changed"
	// ChangeNew: the baseline does not have it.
	ChangeNew Change = "new"
	// ChangeRemoved: the baseline has it and this run does not.
	ChangeRemoved Change = "removed"
)

var changeOrder = []Change{ChangeRegressed, ChangeFixed, ChangeChanged, ChangeNew, ChangeRemoved}

// ScenarioChange is one scenario whose verdict is not what it was.
type ScenarioChange struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Change Change `json:"change"`
	// Before and After are the verdicts; "" where the scenario is absent.
	Before Verdict `json:"before,omitempty"`
	After  Verdict `json:"after,omitempty"`
}

// Comparison is what changed between a baseline run's results and this
// run's. Scenarios are matched by name, which is unique in a suite and
// stays when a suite moves to another directory (or machine).
type Comparison struct {
	// Baseline names the results compared with.
	Baseline string `json:"baseline"`
	// Changes lists the scenarios whose verdict changed, regressions
	// first, then fixed, changed, new and removed, by name within each.
	Changes []ScenarioChange `json:"changes"`
	// Unchanged counts the scenarios with the same verdict both times.
	Unchanged int `json:"unchanged"`
}

// Compare compares cur with the baseline results base, read from name.
func Compare(base, cur *Results, name string) *Comparison {
	c := &Comparison{Baseline: name, Changes: []ScenarioChange{}}
	before := map[string]ScenarioResult{}
	for _, s := range base.Scenarios {
		before[s.Name] = s
	}
	now := map[string]bool{}
	for _, s := range cur.Scenarios {
		now[s.Name] = true
		b, ok := before[s.Name]
		ch := ScenarioChange{Name: s.Name, File: s.File, Before: b.Verdict, After: s.Verdict}
		switch {
		case !ok:
			ch.Change = ChangeNew
		case b.Verdict == s.Verdict:
			c.Unchanged++
			continue
		case b.Verdict == VerdictPass:
			ch.Change = ChangeRegressed
		case s.Verdict == VerdictPass:
			ch.Change = ChangeFixed
		default:
			ch.Change = ChangeChanged
		}
		c.Changes = append(c.Changes, ch)
	}
	for _, s := range base.Scenarios {
		if !now[s.Name] {
			c.Changes = append(c.Changes, ScenarioChange{Name: s.Name, File: s.File, Change: ChangeRemoved, Before: s.Verdict})
		}
	}
	slices.SortStableFunc(c.Changes, func(a, b ScenarioChange) int {
		return cmp.Or(slices.Index(changeOrder, a.Change)-slices.Index(changeOrder, b.Change), cmp.Compare(a.Name, b.Name))
	})
	return c
}

// Count returns the number of scenarios with change ch.
func (c *Comparison) Count(ch Change) int {
	n := 0
	for _, s := range c.Changes {
		if s.Change == ch {
			n++
		}
	}
	return n
}

// Summary is the one-line count of the changes.
func (c *Comparison) Summary() string {
	return fmt.Sprintf("since the baseline %s: %d regressed, %d fixed, %d changed, %d new, %d removed, %d unchanged",
		c.Baseline, c.Count(ChangeRegressed), c.Count(ChangeFixed), c.Count(ChangeChanged), c.Count(ChangeNew), c.Count(ChangeRemoved), c.Unchanged)
}

// verdicts says a change's verdicts: "pass -> fail", "new: pass".
func (s ScenarioChange) verdicts() string {
	switch s.Change {
	case ChangeNew:
		return "now " + string(s.After)
	case ChangeRemoved:
		return "was " + string(s.Before)
	}
	return string(s.Before) + " -> " + string(s.After)
}

// WriteTable writes the changes, regressions first, one a line, then the
// counts, after a blank line that sets them apart from the summary.
func (c *Comparison) WriteTable(w io.Writer) error {
	var b strings.Builder
	b.WriteString("\n")
	for _, s := range c.Changes {
		fmt.Fprintf(&b, "%-9s %s  %s  (%s)\n", strings.ToUpper(string(s.Change)), s.Name, s.verdicts(), s.File)
	}
	b.WriteString(strings.ToUpper(c.Summary()[:1]) + c.Summary()[1:] + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the changes as a Markdown table.
func (c *Comparison) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	if len(c.Changes) > 0 {
		b.WriteString("\n| change | scenario | verdicts | file |\n|---|---|---|---|\n")
		for _, s := range c.Changes {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", s.Change, md(s.Name), s.verdicts(), md(s.File))
		}
	}
	b.WriteString("\n" + md(strings.ToUpper(c.Summary()[:1])+c.Summary()[1:]) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}
