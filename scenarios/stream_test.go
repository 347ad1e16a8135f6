package scenarios

import (
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/results"
)

// TestTheStreamingScenarioCatchesARuntimeThatDoesNotStreamItsCalls runs
// streaming_tools_start_early_fires as a runtime without streaming tool
// execution would (the calls start after the reply): the scenario must
// fail on its streamed expectations, so the suite would catch the loss.
func TestTheStreamingScenarioCatchesARuntimeThatDoesNotStreamItsCalls(t *testing.T) {
	for _, batch := range []bool{false, true} {
		s, err := Parse([]byte(builtinSource(t, "streaming_tools_start_early_fires.txtar")), "streaming_tools_start_early_fires.txtar")
		if err != nil {
			t.Fatal(err)
		}
		s.BatchTools = batch
		res := runSuite(t, []*Scenario{s}, Options{})
		passed := res.Worst() == results.VerdictPass
		if passed == batch {
			t.Fatalf("batch_tools %v: passed %v, want %v:\n%s", batch, passed, !batch, table(res))
		}
		if batch && !strings.Contains(table(res), "started while the reply streamed") {
			t.Fatalf("the failure does not name the streamed expectation:\n%s", table(res))
		}
	}
}
