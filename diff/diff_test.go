package diff

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/synth"
)

// plantedSessions is the size of each corpus of the planted test: enough
// for a 5-point failure rise of one tool (about a sixth of the calls) to
// pass Holm's correction over some sixty rows.
const plantedSessions = 2000

// movedBy says, from a row's definition alone, whether the planted shifts
// bash.failure+0.05 and read.p95*1.5 move it: a failure rate whose scope
// includes bash calls (no tool filter, or tool=bash) and whose failure
// kind admits tool_error (the kind synth draws a planted failure from),
// or an upper quantile (p90 and above) of durations whose scope includes
// read calls. direct says the row's scope is the shifted tool alone, so
// the whole plant lands on it.
func movedBy(metric string) (moved, direct bool) {
	a, err := metrics.ParseAggregate(metric)
	if err != nil {
		return false, false // a detector's row
	}
	tool := a.Filter("tool")
	switch {
	case a.Func == metrics.FuncRate && a.Subject == "failure":
		k := a.Filter("failure_kind")
		return (tool == "" || tool == "bash") && (k == "" || k == "tool_error"), tool == "bash" && k == ""
	case a.Func.Quantile() >= 0.9 && a.Subject == metrics.SubjectDuration:
		return tool == "" || tool == "read", tool == "read"
	}
	return false, false
}

// TestDiffFlagsExactlyThePlantedRegressions compares two synth corpora of
// one seed (synth draws a shift from a stream of its own, so the plant is
// the only difference; between two seeds bash's failure rate alone
// differs by 1.5 points (sd) at this size, which would leave a 5-point
// plant undecided about half the time), the candidate generated with bash failing 5 points
// more among its executed calls and read's p95 ×1.5 (median kept): the
// rows whose scope is the shifted tool are regressed, every regressed row
// is one the plant moves (by its definition, movedBy), and no row
// improved.
func TestDiffFlagsExactlyThePlantedRegressions(t *testing.T) {
	if testing.Short() {
		t.Skip("two corpora of 2000 sessions")
	}
	shifts := []synth.Shift{}
	for _, s := range []string{"bash.failure+0.05", "read.p95*1.5"} {
		sh, err := synth.ParseShift(s)
		if err != nil {
			t.Fatal(err)
		}
		shifts = append(shifts, sh)
	}
	base := load(t, "base", writeCorpus(t, "base", synth.Options{Sessions: plantedSessions, Seed: 11}))
	cand := load(t, "cand", writeCorpus(t, "cand", synth.Options{Sessions: plantedSessions, Seed: 11, Shifts: shifts}))
	res, err := Compare(context.Background(), base, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	direct := 0
	for _, r := range res.Rows {
		moved, isDirect := movedBy(r.Metric)
		switch {
		case isDirect:
			direct++
			if r.Verdict != VerdictRegressed {
				t.Errorf("the planted row is %s, want regressed: %s (p_adj %.3g)", r.Verdict, describeRow(r), r.PAdjusted)
			}
		case r.Verdict == VerdictRegressed && !moved:
			t.Errorf("a row the plant does not move regressed: %s (p_adj %.3g)", describeRow(r), r.PAdjusted)
		case r.Verdict == VerdictImproved:
			t.Errorf("a row improved: %s (p_adj %.3g)", describeRow(r), r.PAdjusted)
		}
		if moved {
			t.Logf("moved by the plant: %s: %s (p_adj %.3g)", r.Verdict, describeRow(r), r.PAdjusted)
		}
	}
	if direct != 2 {
		t.Errorf("%d rows are the planted ones, want 2 (rate(failure, tool=bash, among=executed), p95(duration, tool=read)); skipped: %v", direct, res.Skipped)
	}
	if !strings.Contains(res.Correction, "holm") || len(res.Rows) < 50 {
		t.Errorf("correction %q over %d rows", res.Correction, len(res.Rows))
	}
	if !slices.ContainsFunc(res.Rows, func(r Row) bool { return r.Metric == "p50(duration, tool=read)" && r.Verdict != VerdictRegressed }) {
		t.Errorf("read's median, which the plant keeps, is missing or regressed")
	}
}

// TestSessionRowsCountAllSessions checks what the rows over sessions name
// as their denominator: every session, not the ones the numerator counts.
// A detector's row is the share of sessions with a finding, and rate(completed)
// the share that ended with end_turn; calling the denominator "sessions with
// ≥1 lost_call finding" told a reader that 40 sessions had one when none had.
func TestSessionRowsCountAllSessions(t *testing.T) {
	base := load(t, "base", writeCorpus(t, "base", synth.Options{Sessions: 40, Seed: 1}))
	cand := load(t, "cand", writeCorpus(t, "cand", synth.Options{Sessions: 40, Seed: 2}))
	res, err := Compare(context.Background(), base, cand, Options{Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, r := range res.Rows {
		if strings.HasPrefix(r.Metric, "sessions_with(") || r.Metric == "rate(completed)" {
			seen++
			if r.Denominator != "sessions" {
				t.Errorf("%s: denominator %q, want sessions", r.Metric, r.Denominator)
			}
		}
	}
	for _, s := range res.Skipped {
		if strings.HasPrefix(s.Metric, "sessions_with(") || s.Metric == "rate(completed)" {
			seen++
			if strings.Contains(s.Reason, "finding") || strings.Contains(s.Reason, "ended with") {
				t.Errorf("%s: skipped because %q: the reason names the numerator as the denominator", s.Metric, s.Reason)
			}
		}
	}
	if seen < 10 {
		t.Errorf("%d rows over sessions (detectors and completion), want every detector's and rate(completed)", seen)
	}
}
