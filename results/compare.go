package results

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/retrace-dev/retrace/stats"
)

// Change is what became of one scenario since a baseline run.
type Change string

// The changes, in the order they are listed.
const (
	// ChangeRegressed: every run passed in the baseline and not every run
	// passes now (it fails, is flaky, inconclusive or errors). A scripted
	// scenario is deterministic, so one such flip is a regression; a live
	// one (its runs talked to a real model) regresses only when the runs'
	// pass counts differ beyond chance (Fisher's exact test at alpha).
	ChangeRegressed Change = "regressed"
	// ChangeInconclusive: a live scenario went from every run passing to
	// some failing, but its runs are too few to tell the change from a
	// real model's chance: run it more times (--repeat) to decide.
	ChangeInconclusive Change = "inconclusive"
	// ChangeFixed: it did not pass in the baseline and passes now.
	ChangeFixed Change = "fixed"
	// ChangeChanged: it did not pass either time, with another verdict.
	ChangeChanged Change = "changed"
	// ChangeNew: the baseline does not have it.
	ChangeNew Change = "new"
	// ChangeRemoved: the baseline has it and this run does not.
	ChangeRemoved Change = "removed"
)

var changeOrder = []Change{ChangeRegressed, ChangeInconclusive, ChangeFixed, ChangeChanged, ChangeNew, ChangeRemoved}

// ScenarioChange is one scenario whose verdict is not what it was.
type ScenarioChange struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Change Change `json:"change"`
	// Before and After are the verdicts; "" where the scenario is absent.
	Before Verdict `json:"before,omitempty"`
	After  Verdict `json:"after,omitempty"`
	// Detail says what decided a live scenario's change: the runs that
	// passed on each side and the test's p.
	Detail string `json:"detail,omitempty"`
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
	// Alpha is the significance level of a live scenario's test.
	Alpha float64 `json:"alpha,omitempty"`
}

// DefaultAlpha is the significance level eval --baseline decides a live
// scenario's change at.
const DefaultAlpha = 0.05

// Compare compares cur with the baseline results base, read from name:
// the one verdict on two sets of eval results, which retrace eval
// --baseline and retrace diff both report. alpha is the significance
// level of a live scenario's test (0: DefaultAlpha).
func Compare(base, cur *Results, name string, alpha float64) *Comparison {
	if alpha <= 0 {
		alpha = DefaultAlpha
	}
	c := &Comparison{Baseline: name, Changes: []ScenarioChange{}, Alpha: alpha}
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
			ch.Change, ch.Detail = regression(b, s, alpha)
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

// regression decides a scenario that passed in the baseline (b) and does
// not now (s). A scripted scenario plays the same script every run, so
// any run that fails now is a regression, with no statistics. A live one
// talked to a real model: its runs' pass counts are compared with
// Fisher's exact test, and a difference within chance is inconclusive.
func regression(b, s ScenarioResult, alpha float64) (Change, string) {
	if !b.Live && !s.Live {
		return ChangeRegressed, ""
	}
	nb, nc := len(b.Runs), len(s.Runs)
	t := stats.Fisher(b.Passed, nb, s.Passed, nc)
	detail := fmt.Sprintf("live: %d/%d runs passed, now %d/%d; %s p=%.3g", b.Passed, nb, s.Passed, nc, t.Name, t.P)
	if !math.IsNaN(t.P) && t.P < alpha && s.Passed*nb < b.Passed*nc {
		return ChangeRegressed, detail
	}
	return ChangeInconclusive, detail + fmt.Sprintf(" is not below %g: more runs (--repeat) would decide", alpha)
}

// Regressed returns the names of the regressed scenarios, in order.
func (c *Comparison) Regressed() []string {
	var out []string
	for _, s := range c.Changes {
		if s.Change == ChangeRegressed {
			out = append(out, s.Name)
		}
	}
	return out
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
