package diff

import (
	"context"
	"fmt"
	"testing"

	"github.com/retrace-dev/retrace/synth"
)

func TestExplore(t *testing.T) {
	a := load(t, "a", writeCorpus(t, "a", synth.Options{Sessions: 300, Seed: 1}))
	b := load(t, "b", writeCorpus(t, "b", synth.Options{Sessions: 300, Seed: 2}))
	res, err := Compare(context.Background(), a, b, Options{AA: 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		fmt.Printf("%-55s %-12s n=%d/%d p=%.3g padj=%.3g %s\n", r.Metric, r.Verdict, r.BaseN, r.CandN, r.Test.P, r.PAdjusted, describeRow(r))
	}
	for _, s := range res.Skipped {
		fmt.Println("skip", s)
	}
	fmt.Printf("%+v\n", res.Calibration.FamilyRate)
	for _, r := range res.Calibration.Rows {
		if r.Alarms > 0 {
			fmt.Println(r)
		}
	}
	fmt.Println(len(res.Findings.New), len(res.Findings.Resolved))
}
