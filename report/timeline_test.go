package report

import (
	"regexp"
	"strconv"
	"testing"
)

// TestATimelineHasOneTimeAxisPerSession draws a session whose first turn
// has one 31 µs call and whose second turn has one 526 ms call: on one
// axis for the session, the long call's bar is wide and the short one a
// sliver, not two bars as wide as their turns.
func TestATimelineHasOneTimeAxisPerSession(t *testing.T) {
	d := SessionDetail{SessionRow: SessionRow{ID: "s1", Anchor: "s-s1"}, TurnList: []Turn{
		{N: 1, Anchor: "t1", Calls: []Call{{ID: "a", Tool: "read", Anchor: "c-a", Outcome: "success", Ran: true, Measured: true, DurationMs: 0.031, EndUs: 1_000_031}}},
		{N: 2, Anchor: "t2", Calls: []Call{{ID: "b", Tool: "bash", Anchor: "c-b", Outcome: "success", Ran: true, Measured: true, DurationMs: 526, EndUs: 2_526_000}}},
	}}
	svg := string(timelineSVG(d))
	widths := map[string]float64{}
	for _, m := range regexp.MustCompile(`<rect x="[0-9.]+" y="[0-9.]+" width="([0-9.]+)" height="[0-9.]+" rx="2" class="c-success"><title>(\w+) `).FindAllStringSubmatch(svg, -1) {
		w, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		widths[m[2]] = w
	}
	if len(widths) != 2 {
		t.Fatalf("bars %v in:\n%s", widths, svg)
	}
	if widths["read"] > 2 || widths["bash"] < 100*widths["read"] {
		t.Errorf("bar widths %v: a 31 µs call must be a sliver beside a 526 ms one on the session's axis", widths)
	}
}

// TestFindingsAreGroupedByDetectorWorstFirst checks the grouping the page
// shows collapsed: one group per detector, the worst first, every finding
// counted and at most FindingsShown of each shown.
func TestFindingsAreGroupedByDetectorWorstFirst(t *testing.T) {
	db, rep, live := load(t, corpus(t, 200, true))
	m, err := Gather(t.Context(), db, rep, live, Options{})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for i, g := range m.FindingGroups {
		total += g.Count
		if len(g.Shown) > FindingsShown || g.More != g.Count-len(g.Shown) || g.Sessions == 0 || g.Sessions > g.Count {
			t.Errorf("group %s: %d counted, %d shown, %d more, %d sessions", g.Detector, g.Count, len(g.Shown), g.More, g.Sessions)
		}
		for _, f := range g.Shown {
			if f.Detector != g.Detector {
				t.Errorf("group %s holds a finding of %s", g.Detector, f.Detector)
			}
		}
		if i > 0 && g.Severity.Rank() > m.FindingGroups[i-1].Severity.Rank() {
			t.Errorf("group %s (%s) after %s (%s): not worst first", g.Detector, g.Severity, m.FindingGroups[i-1].Detector, m.FindingGroups[i-1].Severity)
		}
	}
	if total != len(m.Findings) || len(m.FindingGroups) < 2 {
		t.Errorf("%d findings in %d groups count %d", len(m.Findings), len(m.FindingGroups), total)
	}
}
