package detectors

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/synth"
)

func TestDetectLivenessFindsWhatDetectAndComputeLivenessFind(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "runs")
	if _, err := synth.Write(ctx, dir, synth.Options{Sessions: 16, Seed: 5, Faults: []string{"lost_call", "denial_loop", "hallucinated_tool"}}); err != nil {
		t.Fatal(err)
	}
	open := func() *metrics.DB {
		db, err := metrics.Open(ctx, metrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db := open()
	rep, lv, _, err := DetectLiveness(ctx, db, []string{dir}, Catalog(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	db2 := open()
	want, _, err := Detect(ctx, db2, []string{dir}, Catalog(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantLv, err := ComputeLiveness(ctx, db2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) == 0 || !reflect.DeepEqual(rep.Findings, want.Findings) {
		t.Errorf("DetectLiveness found %d findings, Detect %d (or none at all, with planted faults)", len(rep.Findings), len(want.Findings))
	}
	if lv.Sessions != 16 || !reflect.DeepEqual(lv, wantLv) {
		t.Errorf("the liveness table of the one pass differs from ComputeLiveness's:\n%+v\n%+v", lv, wantLv)
	}
}
