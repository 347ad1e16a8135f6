package scenarios_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/scenarios"
)

// museumProperty is what the acceptance test keeps of a built-in
// scenario's recorded run: the detector its expectations make fire (the
// first by id), else the defense it expects to act, else the failure it
// expects. "" with why when it expects none of them.
func museumProperty(s *scenarios.Scenario) (keep, why string) {
	if d := s.Expect.Detectors; d != nil && len(d.Fire) > 0 {
		return "detector:" + slices.Sorted(maps.Keys(d.Fire))[0], ""
	}
	if d := s.Expect.Detectors; s.Exhibit() && d != nil && len(d.NotFire) > 0 {
		// A quiet exhibit: the detector finds nothing.
		return "no detector:" + d.NotFire[0], ""
	}
	for _, kind := range []scenarios.EventKind{scenarios.KindDefense, scenarios.KindFailure, scenarios.KindPermission, scenarios.KindEvent} {
		for _, e := range s.Expect.Events {
			if e.Kind != kind || (e.Count.Max != nil && *e.Count.Max == 0) || slices.Contains(everySession, e.Value) {
				continue
			}
			p := scenarios.Property{Kind: map[scenarios.EventKind]scenarios.PropertyKind{
				scenarios.KindDefense: scenarios.PropDefense, scenarios.KindFailure: scenarios.PropFailure,
				scenarios.KindPermission: scenarios.PropPermission, scenarios.KindEvent: scenarios.PropEvent,
			}[kind], Value: e.Value, Tool: e.Tool}
			if kind == scenarios.KindPermission {
				p.Step, p.Source = e.Step, e.Source
			}
			return p.String(), ""
		}
	}
	// A scenario about when calls start: a tool that must be called
	// while the reply streams.
	for _, e := range s.Expect.Events {
		if e.Kind == scenarios.KindToolCalled && e.Streamed != nil && *e.Streamed {
			return scenarios.Property{Kind: scenarios.PropEvent, Value: "tool_call", Tool: e.Value, Streamed: "true"}.String(), ""
		}
	}
	return "", "its expectations name no detector, defense, failure, permission decision or event to keep"
}

// everySession are the event types every session has: keeping one
// keeps nothing.
var everySession = []string{"session_start", "session_end", "model_request", "model_response", "tool_call"}

// TestFromMuseum is issue 34's acceptance: every built-in *_fires
// scenario and every exhibit of the failure museum (a quiet one kept to
// no detector:ID, put back with its must-fire twin's recording) is run as retrace
// eval --out runs it; scenario from --keep PROPERTY --minimize makes a
// scenario of its recording that retrace eval passes, and that fails
// once the kept property is removed from it: for a scenario of the
// runtime, the config ddmin kept (the defense is on again) or the
// planted fault is taken out, else the follow-up prompts, else the
// recorded model turns; for an exhibit, the events the detector's finding
// cites are taken out of the recording, else it is swapped for its quiet
// twin's. streaming_tools_start_early_fires keeps its reads started
// while the reply streamed (event:tool_call,tool=read,streamed=true).
func TestFromMuseum(t *testing.T) {
	if testing.Short() {
		t.Skip("minimizes every *_fires scenario of the built-in suite")
	}
	suite, err := scenarios.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var fires []*scenarios.Scenario
	for _, s := range suite {
		if strings.HasSuffix(s.Name, "_fires") || s.Exhibit() {
			fires = append(fires, s)
		}
	}
	if len(fires) < 90 {
		t.Fatalf("only %d *_fires scenarios in the built-in suite", len(fires))
	}
	res, err := scenarios.Run(context.Background(), fires, scenarios.Options{Out: t.TempDir(), Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	// recorded maps each scenario to its run's recording: a quiet
	// exhibit's fault is put back with its twin's.
	recorded := map[string]string{}
	for i, s := range fires {
		recorded[s.Name] = res.Scenarios[i].Runs[0].Trajectory
	}
	for i, s := range fires {
		run := res.Scenarios[i].Runs[0]
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			if run.Error != "" || len(run.Failures) > 0 || run.Trajectory == "" {
				t.Fatalf("the built-in scenario does not pass as recorded: %+v", run)
			}
			keep, why := museumProperty(s)
			if keep == "" {
				t.Fatalf("no property to keep: %s", why)
			}
			rec := run.Trajectory
			if len(s.Recordings) > 1 {
				// A corpus exhibit: every recording, as eval wrote them.
				rec = filepath.Dir(rec)
			}
			p, err := scenarios.ParseProperty(keep)
			if err != nil {
				t.Fatal(err)
			}
			out, err := scenarios.From(context.Background(), scenarios.FromOptions{Recording: rec, Keep: &p, Minimize: &scenarios.MinimizeOptions{Jobs: 2}})
			if err != nil {
				t.Fatalf("scenario from --keep %s --minimize: %v", keep, err)
			}
			t.Logf("--keep %s: %s", keep, out.Minimized)
			if out.Minimized.Exhausted {
				t.Errorf("the minimization stopped at --max-runs")
			}
			if r := evalArchive(t, out.Archive); !passes(r) {
				t.Fatalf("the minimized scenario fails: %+v\n%s", r, out.Archive)
			}
			var tried []string
			for _, rm := range removals(t, string(out.Archive), p, s.Name, out.Exhibit, recorded) {
				r := evalArchive(t, []byte(rm.archive))
				switch {
				case passes(r):
					tried = append(tried, rm.how+": still passes")
					continue
				case r.Error != "":
					tried = append(tried, rm.how+": errors: "+r.Error)
					continue
				}
				t.Logf("removed: %s", rm.how)
				return
			}
			t.Fatalf("no removal of %s makes the scenario fail:\n%s\n%s", keep, strings.Join(tried, "\n"), out.Archive)
		})
	}
}

type removal struct{ archive, how string }

var (
	configBlock = regexp.MustCompile(`(?m)^config:\n(?:  .*\n)+`)
	plantLine   = regexp.MustCompile(`(?m)^plant: .*\n`)
	followUps   = regexp.MustCompile(`(?m)^follow_ups:\n(?:  - .*\n)+`)
	section     = regexp.MustCompile(`(?m)^-- (recording\.jsonl|recordings/[^ ]+) --\n`)
	// recordedTurn is a script turn of the recording and the comment
	// that names its line.
	recordedTurn = regexp.MustCompile(`(?m)^    # line \d+: turn \d+'s model_response\n    - (?:.*\n)(?:      .*\n)*`)
)

// removals are the edits that take the kept property out of a
// generated scenario, best first, each with what it does.
func removals(t *testing.T, archive string, p scenarios.Property, name string, exhibit bool, recorded map[string]string) []removal {
	t.Helper()
	if exhibit {
		return exhibitRemovals(t, archive, p, name, recorded)
	}
	var out []removal
	if plantLine.MatchString(archive) {
		out = append(out, removal{plantLine.ReplaceAllString(archive, ""), "the planted fault taken out"})
	}
	if configBlock.MatchString(archive) {
		out = append(out, removal{configBlock.ReplaceAllString(archive, ""), "the config ddmin kept taken out, so the defaults (every defense on) apply"})
	}
	if followUps.MatchString(archive) {
		out = append(out, removal{followUps.ReplaceAllString(archive, ""), "the person's follow-up prompts taken out"})
	}
	// The fault is the model's: the recorded turns that make the calls
	// taken out, the closing turn left.
	if turns := recordedTurn.FindAllString(archive, -1); len(turns) > 0 {
		rm := recordedTurn.ReplaceAllString(archive, "")
		if !strings.Contains(rm, "# not recorded: a closing turn") {
			rm = strings.Replace(rm, "model:\n  turns:\n", "model:\n  turns:\n    - content: [{text: \"Done.\"}]\n", 1)
		}
		out = append(out, removal{rm, fmt.Sprintf("the %d recorded model turns taken out", len(turns))})
	}
	return out
}

// exhibitRemovals take the fault out of an exhibit's recordings: the
// events the kept detector's findings cite (but session_start, without
// which nothing is a recording), else the recording of the exhibit's
// quiet twin, the same session without the fault.
func exhibitRemovals(t *testing.T, archive string, p scenarios.Property, name string, recorded map[string]string) []removal {
	t.Helper()
	var out []removal
	locs := section.FindAllStringIndex(archive, -1)
	if p.Not {
		// The fault put back: the recordings of the must-fire twin.
		twin, err := scenarios.BuiltinScenario(strings.TrimSuffix(name, "_quiet") + "_fires")
		if err != nil {
			t.Fatalf("a quiet exhibit without its must-fire twin: %v", err)
		}
		var b strings.Builder
		b.WriteString(archive[:locs[0][0]])
		for _, r := range twin.Recordings {
			fmt.Fprintf(&b, "-- %s --\n%s", r.Name, r.Data)
		}
		if len(twin.Recordings) == 0 {
			// A twin the runtime plays: its run's recording.
			data, err := os.ReadFile(recorded[twin.Name])
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "-- recording.jsonl --\n%s", data)
		}
		return append(out, removal{b.String(), "the recording swapped for the must-fire twin's (" + twin.Name + "), the session with the fault"})
	}
	if rm, how := removeEvidence(t, archive, p); rm != archive {
		out = append(out, removal{rm, how})
	}
	twin, err := scenarios.BuiltinScenario(strings.TrimSuffix(name, "_fires") + "_quiet")
	if err == nil && len(twin.Recordings) > 0 {
		clean := archive[:locs[0][0]] + "-- recording.jsonl --\n" + string(twin.Recordings[0].Data)
		out = append(out, removal{clean, "the recording swapped for the quiet twin's (" + twin.Name + "), the session without the fault"})
	}
	return out
}

// removeEvidence drops from an exhibit's recordings the events the kept
// detector's findings cite.
func removeEvidence(t *testing.T, archive string, p scenarios.Property) (string, string) {
	t.Helper()
	if p.Kind != scenarios.PropDetector {
		t.Fatalf("an exhibit kept to %s", p)
	}
	dir := t.TempDir()
	locs := section.FindAllStringSubmatchIndex(archive, -1)
	type part struct {
		name       string
		start, end int
		file       string
	}
	var parts []part
	for i, l := range locs {
		end := len(archive)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		name := archive[l[2]:l[3]]
		file := filepath.Join(dir, filepath.Base(name))
		if err := os.WriteFile(file, []byte(archive[l[1]:end]), 0o644); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, part{name, l[1], end, file})
	}
	ctx := context.Background()
	db, err := metrics.Open(ctx, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var files []string
	for _, pt := range parts {
		files = append(files, pt.file)
	}
	if _, err := db.Load(ctx, files...); err != nil {
		t.Fatal(err)
	}
	ds, err := detectors.Select([]string{p.Value}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := detectors.Run(ctx, db, ds, detectors.Options{})
	if err != nil {
		t.Fatal(err)
	}
	drop := map[string]map[int]bool{}
	var cited []string
	for _, f := range rep.Findings {
		for _, e := range f.Evidence {
			if e.Type == "session_start" {
				continue
			}
			if drop[e.File] == nil {
				drop[e.File] = map[int]bool{}
			}
			drop[e.File][e.Line] = true
			cited = append(cited, fmt.Sprintf("%s:%d %s", filepath.Base(e.File), e.Line, e.Type))
		}
	}
	if len(rep.Findings) == 0 {
		t.Fatalf("%s finds nothing in the generated recordings", p.Value)
	}
	if len(cited) == 0 {
		return archive, ""
	}
	var b strings.Builder
	last := 0
	for _, pt := range parts {
		b.WriteString(archive[last:pt.start])
		for i, l := range strings.SplitAfter(archive[pt.start:pt.end], "\n") {
			if !drop[pt.file][i+1] {
				b.WriteString(l)
			}
		}
		last = pt.end
	}
	return b.String(), "the events its finding cites taken out: " + strings.Join(slices.Compact(cited), ", ")
}
