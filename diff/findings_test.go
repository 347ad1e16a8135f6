package diff

import (
	"context"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/synth"
)

// TestPlantedFaultsAreNewFindingsWithEvidence compares a clean corpus with
// the same corpus where synth planted lost calls: every lost_call finding
// is new, none is resolved, each keeps its evidence (file, line, seq),
// the findings both sides share are matched although they are not the
// same files, and the gate "no new detector error" fails.
func TestPlantedFaultsAreNewFindingsWithEvidence(t *testing.T) {
	base := load(t, "base", writeCorpus(t, "base", synth.Options{Sessions: 40, Seed: 3}))
	cand := load(t, "cand", writeCorpus(t, "cand", synth.Options{Sessions: 40, Seed: 3, Faults: []string{"lost_call"}}))
	res, err := Compare(context.Background(), base, cand, Options{Resamples: 200, Gates: []*Gate{mustGate(t, "no new detector error")}})
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, f := range res.Findings.New {
		if f.Detector != "lost_call" {
			continue
		}
		lost++
		if len(f.Evidence) == 0 || f.Evidence[0].Line < 1 || f.Evidence[0].Seq < 1 || !strings.Contains(f.Evidence[0].File, "cand") {
			t.Errorf("a new finding without its evidence in the candidate: %+v", f)
		}
	}
	if lost == 0 {
		t.Fatalf("no new lost_call finding: new %d, resolved %d", len(res.Findings.New), len(res.Findings.Resolved))
	}
	for _, f := range res.Findings.Resolved {
		if f.Detector == "lost_call" {
			t.Errorf("a lost_call finding resolved: %+v", f)
		}
	}
	matched := len(base.Report.Findings) - len(res.Findings.Resolved)
	if len(base.Report.Findings) > 0 && matched == 0 {
		t.Errorf("none of the base's %d findings was matched in the candidate", len(base.Report.Findings))
	}
	if len(res.Gates) != 1 || res.Gates[0].Status != GateFail {
		t.Errorf("gates %+v, want no new detector error to fail", res.Gates)
	}
}
