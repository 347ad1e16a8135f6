package detectors

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestSettingsCheckNamesEveryBadSettingAndItsPlace(t *testing.T) {
	where := func(id, name string) string { return "retrace.yaml:" + id + "." + name }
	for _, tc := range []struct {
		name     string
		settings Settings
		want     []string
	}{
		{"Settings within the catalog's thresholds pass.", Settings{"denial_loop": {"min_denials": 5}, "unbounded_label": {"max_length": 40}}, nil},
		{"An unknown detector is named with the known ones.", Settings{"denial_loops": {"min_denials": 5}}, []string{"retrace.yaml:denial_loops.: detectors.denial_loops: no such detector", "lost_call"}},
		{"An unknown threshold is named with the detector's.", Settings{"denial_loop": {"min": 5}}, []string{"detectors.denial_loop.min: no such threshold; denial_loop has min_denials"}},
		{"A threshold of a detector without thresholds is refused.", Settings{"lost_call": {"min": 1}}, []string{"lost_call has no thresholds"}},
		{"A negative value is refused.", Settings{"denial_loop": {"min_denials": -1}}, []string{"-1 is not a threshold"}},
		{"A fraction for a count is refused.", Settings{"denial_loop": {"min_denials": 2.5}}, []string{"2.5 is not a whole number"}},
		{"Every problem is reported, not only the first.", Settings{"denial_loop": {"min_denials": -1}, "nope": {"x": 1}}, []string{"-1 is not a threshold", "detectors.nope: no such detector"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.settings.Check(Catalog(), where)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrSettings) {
				t.Fatalf("err %v, want ErrSettings", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

// A threshold set in Settings changes what a detector finds: the denial
// loop fixture's three denials are a loop at the default and not at four,
// and five identical reads are repeated at the default and not at six.
func TestSettingsChangeWhatTheDetectorsFind(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		settings Settings
		want     int
	}{
		{"Three denials at the default of three are a denial loop.", "denial_loop", nil, 1},
		{"Three denials with min_denials 4 are not.", "denial_loop", Settings{"denial_loop": {"min_denials": 4}}, 0},
		{"Five identical reads at the default of five are repeated.", "repeated_readonly", nil, 1},
		{"Five identical reads with min_repeats 6 are not.", "repeated_readonly", Settings{"repeated_readonly": {"min_repeats": 6}}, 0},
		{"Five empty-input replies with max_in_a_row 5 are within the cap.", "empty_input_retry", Settings{"empty_input_retry": {"max_in_a_row": 5}}, 0},
		{"An error code carrying a path is unbounded at the default length.", "unbounded_label", nil, 1},
		{"Three calls reporting 12.032 ms each are flattened at the default min_duration_ms of 1.", "latency_flattened", nil, 1},
		{"The same three calls are not with min_duration_ms 20.", "latency_flattened", Settings{"latency_flattened": {"min_duration_ms": 20}}, 0},
		{"Three triggers at three denials are counted decisions at min_triggers 3.", "decision_counted_as_trigger", nil, 1},
		{"Three triggers at three denials are not judged with min_triggers 4.", "decision_counted_as_trigger", Settings{"decision_counted_as_trigger": {"min_triggers": 4}}, 0},
		{"A 50-point gap between bash's rates is a denominator shift at max_gap 0.2.", "denominator_shift", nil, 1},
		{"A 50-point gap is within max_gap 0.5.", "denominator_shift", Settings{"denominator_shift": {"max_gap": 0.5}}, 0},
		{"Twenty bash calls are too few for min_calls 21.", "denominator_shift", Settings{"denominator_shift": {"min_calls": 21}}, 0},
		{"read and read_many share 4 characters, neighbours at min_prefix 4.", "prefix_collapse_risk", nil, 1},
		{"Four spin turns are a spin at min_turns 3.", "low_yield_spin", nil, 1},
		{"Four spin turns are not one at min_turns 5.", "low_yield_spin", Settings{"low_yield_spin": {"min_turns": 5}}, 0},
		{"Context growth 2.5 times faster in the second half is a runaway at the default growth_factor of 2.", "context_runaway", nil, 1},
		{"The same growth with growth_factor 3 is not.", "context_runaway", Settings{"context_runaway": {"growth_factor": 3}}, 0},
		{"Thirteen requests with min_turns 14 are too few to judge.", "context_runaway", Settings{"context_runaway": {"min_turns": 14}}, 0},
		{"A context that reaches 107400 tokens with min_tokens 120000 does not matter yet.", "context_runaway", Settings{"context_runaway": {"min_tokens": 120000}}, 0},
		{"A steady rise with min_trend above 1 is never steady enough.", "context_runaway", Settings{"context_runaway": {"min_trend": 1.01}}, 0},
		{"107400 tokens in a 120000-token window, over its 0.8 share with no compaction, add a window finding.", "context_runaway", Settings{"context_runaway": {"window_tokens": 120000}}, 2},
		{"The same window with window_share 0.95 is not approached.", "context_runaway", Settings{"context_runaway": {"window_tokens": 120000, "window_share": 0.95}}, 1},
		{"Two rechecks of a git status that contradicts the snapshot are not enough with min_rechecks 3.", "stale_snapshot", Settings{"stale_snapshot": {"min_rechecks": 3}}, 0},
		{"With max_per_kind 0 the one unlabelled reminder is also over the cap.", "phantom_user_message", Settings{"phantom_user_message": {"max_per_kind": 0}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := Select([]string{tc.id}, nil)
			if err != nil {
				t.Fatal(err)
			}
			db := loaded(t, filepath.Join("testdata", "fire", tc.id+".jsonl"))
			rep, err := Run(context.Background(), db, ds, Options{Settings: tc.settings})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Findings) != tc.want {
				t.Errorf("%d findings, want %d: %+v", len(rep.Findings), tc.want, rep.Findings)
			}
		})
	}
}

func TestRunRefusesSettingsTheCatalogDoesNotDeclare(t *testing.T) {
	db := loaded(t, filepath.Join("testdata", "clean", "lost_call.jsonl"))
	_, err := Run(context.Background(), db, Catalog(), Options{Settings: Settings{"denial_loop": {"minimum": 4}}})
	if !errors.Is(err, ErrSettings) {
		t.Fatalf("err %v, want ErrSettings", err)
	}
}

func TestExpandPutsThresholdsIntoAQueryAndRefusesUnknownOnes(t *testing.T) {
	p := Params{id: "x", values: map[string]float64{"min": 3, "share": 0.25}}
	got, err := p.expand("HAVING count(*) >= ${min} AND r > ${share}")
	if err != nil || got != "HAVING count(*) >= 3 AND r > 0.25" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := p.expand("WHERE n > ${max}"); err == nil {
		t.Error("an undeclared threshold expanded")
	}
	if _, err := p.expand("WHERE n > ${min"); err == nil {
		t.Error("an unclosed ${ expanded")
	}
}

// Every SQL detector's query expands with its declared thresholds: a
// ${name} it reads and does not declare would fail only at run time.
func TestEverySQLDetectorsQueryExpands(t *testing.T) {
	for _, d := range Catalog() {
		sd, ok := d.(*sqlDetector)
		if !ok {
			continue
		}
		q, err := sd.SQL()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Settings(nil).params(d).expand(q); err != nil {
			t.Error(err)
		}
	}
}
