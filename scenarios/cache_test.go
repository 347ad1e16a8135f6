package scenarios

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/trajectory"
)

// cacheByTurn runs the built-in scenario name once and returns, per turn,
// the cache reads of the mock's usage as recorded in the model_response,
// and the cache_read_share the cache_by_turn metric computes from the
// recording with DuckDB.
func cacheByTurn(t *testing.T, name string) (reads map[int]int64, share map[int]float64) {
	t.Helper()
	s, err := BuiltinScenario(name)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	res, err := Run(context.Background(), []*Scenario{s}, Options{Out: out, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	sr := res.Scenarios[0]
	if sr.Verdict != results.VerdictPass || len(sr.Runs) != 1 {
		t.Fatalf("%s: verdict %s, want it to pass: %+v", name, sr.Verdict, sr.Runs)
	}
	rec, err := readRecording(sr.Runs[0].Trajectory)
	if err != nil {
		t.Fatal(err)
	}
	reads = map[int]int64{}
	for _, e := range rec.events {
		if r, ok := e.Payload.(*trajectory.ModelResponse); ok {
			reads[e.Turn] = r.Usage.CacheReadTokens
		}
	}
	ctx := context.Background()
	db, err := metrics.Open(ctx, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Load(ctx, sr.Runs[0].Trajectory); err != nil {
		t.Fatal(err)
	}
	tab, err := db.Metric(ctx, "cache_by_turn")
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, c := range tab.Columns {
		col[c] = i
	}
	share = map[int]float64{}
	for _, row := range tab.Rows {
		var turn int
		var v float64
		fmt.Sscan(fmt.Sprint(row[col["turn"]]), &turn)
		fmt.Sscan(fmt.Sprint(row[col["cache_read_share"]]), &v)
		share[turn] = v
	}
	return reads, share
}

// TestAPlantedCacheBreakerDropsTheCacheReads is the acceptance of prompt
// caching (issue 18): a cache breaker planted in a scenario shows as a
// drop of cache reads in the mock's usage and in the cache_by_turn
// metric, and its quiet twin keeps reading the cache. The three
// scenarios play the same five turns; the breakers are planted from turn 3.
func TestAPlantedCacheBreakerDropsTheCacheReads(t *testing.T) {
	stableReads, stable := cacheByTurn(t, "cache_stable_quiet")
	for turn := 3; turn <= 5; turn++ {
		if stable[turn] < 0.9 || stableReads[turn] <= stableReads[turn-1] {
			t.Errorf("stable session, turn %d: cache_read_share %.3f and %d tokens read (turn %d read %d); want at least 0.9, and more read each turn as the history grows",
				turn, stable[turn], stableReads[turn], turn-1, stableReads[turn-1])
		}
	}
	t.Run("a reordered tool list reads nothing at the turn it changes, then warms again", func(t *testing.T) {
		reads, share := cacheByTurn(t, "cache_breaker_tools_reordered_fires")
		if reads[2] != stableReads[2] || reads[3] != 0 || share[3] != 0 {
			t.Errorf("turn 2 read %d (stable %d), turn 3 read %d with share %.3f; want turn 2 as the stable session's and nothing read at turn 3", reads[2], stableReads[2], reads[3], share[3])
		}
		if share[4] < 0.9 {
			t.Errorf("turn 4 cache_read_share %.3f, want the cache warm again (the order stays changed)", share[4])
		}
	})
	t.Run("a timestamp in the system prompt keeps only the tools cached, every turn", func(t *testing.T) {
		reads, share := cacheByTurn(t, "cache_breaker_system_timestamp_fires")
		for turn := 3; turn <= 5; turn++ {
			if reads[turn] <= 0 || reads[turn] != reads[3] || share[turn] > stable[turn]-0.3 {
				t.Errorf("turn %d read %d (turn 3 read %d), cache_read_share %.3f against the stable %.3f; want the same tools-only prefix read every turn and a share at least 0.3 lower",
					turn, reads[turn], reads[3], share[turn], stable[turn])
			}
		}
	})
}

func TestAPlantIsCheckedWithItsLine(t *testing.T) {
	base := "-- scenario.yaml --\nprompt: Say done.\nmodel: {turns: [{content: [{text: Done.}]}]}\n"
	cases := []struct {
		name, plant, want string
	}{
		{"an unknown breaker is refused with the known ones", "plant: {cache_breaker: clock_skew}\n", `t.txtar:4: plant.cache_breaker "clock_skew": want one of tools_reordered, system_timestamp`},
		{"a turn before the first is refused", "plant: {cache_breaker: tools_reordered, from_turn: 0}\n", "t.txtar:4: plant.from_turn must be at least 1"},
		{"a plant without a breaker is refused", "plant: {from_turn: 2}\n", "t.txtar:4: plant needs cache_breaker"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(base+c.plant), "t.txtar")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse() = %v, want a problem saying %q", err, c.want)
			}
		})
	}
	t.Run("a valid plant is kept", func(t *testing.T) {
		s, err := Parse([]byte(base+"plant: {cache_breaker: system_timestamp, from_turn: 2}\n"), "t.txtar")
		if err != nil {
			t.Fatal(err)
		}
		if s.Plant == nil || s.Plant.CacheBreaker != PlantSystemTimestamp || s.Plant.FromTurn != 2 {
			t.Errorf("Plant = %+v, want system_timestamp from turn 2", s.Plant)
		}
	})
}
