package scenarios_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/scenarios"
	"github.com/retrace-dev/retrace/synth"
	"github.com/retrace-dev/retrace/trajectory"
)

// synthFifty writes a synthetic session of 50 turns with one planted
// fault (retrace synth --sessions 2 --turns 50 --faults FAULT: the
// second session carries it), trying seeds until one ends at its
// planned 50th turn, and returns its file and the fault.
func synthFifty(t *testing.T, fault string) (string, synth.Fault) {
	t.Helper()
	for seed := int64(1); seed <= 40; seed++ {
		dir := t.TempDir()
		rep, err := synth.Write(context.Background(), dir, synth.Options{Sessions: 2, Seed: seed, Turns: 50, Faults: []string{fault}, Workers: 1})
		if err != nil || len(rep.Faults) != 1 {
			continue
		}
		f := rep.Faults[0]
		path := filepath.Join(dir, f.File)
		events, err := trajectory.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if end, ok := events[len(events)-1].Payload.(*trajectory.SessionEnd); ok && end.Turns == 50 {
			return path, f
		}
	}
	t.Fatalf("no seed in 1..40 gives a 50-turn synthetic session with %s planted", fault)
	return "", synth.Fault{}
}

// Issue 34's acceptance: a 50-turn synthetic session with one planted
// fault minimizes to at most 5 turns that keep the fault, in at most 200
// runs, and two minimizations (-j 1 and -j 2) give the same bytes. A
// synthetic session has no workspace and blobs, so the scenario is an
// exhibit that carries the recording's kept lines.
func TestFromMinimizeSynthFifty(t *testing.T) {
	for _, fault := range []string{"lost_call", "empty_input_retry"} {
		t.Run(fault, func(t *testing.T) {
			rec, planted := synthFifty(t, fault)
			p, err := scenarios.ParseProperty("detector:" + fault)
			if err != nil {
				t.Fatal(err)
			}
			var archives [][]byte
			for _, jobs := range []int{1, 2} {
				start := time.Now()
				out, err := scenarios.From(context.Background(), scenarios.FromOptions{Recording: rec, Keep: &p, Minimize: &scenarios.MinimizeOptions{Jobs: jobs}})
				if err != nil {
					t.Fatal(err)
				}
				m := out.Minimized
				t.Logf("-j %d: %s in %s", jobs, m, time.Since(start).Round(time.Millisecond))
				if !out.Exhibit || m.TurnsBefore != 50 || m.TurnsAfter > 5 || m.Runs > 200 || m.Exhausted {
					t.Fatalf("-j %d: %s; want an exhibit of 50 turns down to at most 5, in at most 200 runs", jobs, m)
				}
				if r := evalArchive(t, out.Archive); !passes(r) {
					t.Fatalf("the minimized scenario does not keep the fault: %+v\n%s", r, out.Archive)
				}
				// The event the planted fault's finding names is kept, as
				// the recording wrote it.
				if !bytes.Contains(out.Archive, []byte(fmt.Sprintf(`"seq":%d,`, planted.Seq))) {
					t.Errorf("the planted fault's event (seq %d) is not kept:\n%s", planted.Seq, out.Archive)
				}
				archives = append(archives, out.Archive)
			}
			if !bytes.Equal(archives[0], archives[1]) {
				t.Fatalf("two minimizations differ:\n%s\n----\n%s", archives[0], archives[1])
			}
			// Without the planted fault's event the scenario fails.
			var kept []string
			for _, l := range strings.SplitAfter(string(archives[0]), "\n") {
				if !strings.Contains(l, fmt.Sprintf(`"seq":%d,`, planted.Seq)) {
					kept = append(kept, l)
				}
			}
			if r := evalArchive(t, []byte(strings.Join(kept, ""))); passes(r) || r.Error != "" {
				t.Fatalf("without the fault's event the scenario does not fail: %+v", r)
			}
		})
	}
}
