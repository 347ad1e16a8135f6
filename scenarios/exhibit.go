package scenarios

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/trajectory"
)

// An exhibit is a scenario of the failure museum whose fault the real
// runtime cannot produce (a call that vanished, a batch whose durations
// were flattened, a label that carries data) or that only a corpus of
// sessions shows: instead of a model script and a workspace, its archive
// carries the recorded trajectory itself,
//
//	-- scenario.yaml --
//	name: detector_lost_call
//	expect:
//	  events: [{event: tool_call, count: 4}]
//	  detectors: {fire: {lost_call: 1}}
//	-- recording.jsonl --
//	{"v":1,"session":"...","seq":1,...}
//
// or several, for the detectors that judge a corpus, each in a section
// recordings/NAME.jsonl. The runner does not run the runtime for an
// exhibit: it checks the event expectations over the recording, and the
// detector expectations over the findings about the exhibit's own
// sessions; when they name a detector that judges a corpus, or say no
// other may fire, the whole catalog runs over the exhibit's recordings
// alone (see ownPass). An exhibit has no prompt, model, config,
// limits, repeat, workspace files, outcome or file expectations (nothing
// ran, so nothing can be said of them); the event expectations of an
// exhibit of several recordings would mix sessions, so it takes detector
// expectations only. An exhibit runs once whatever --repeat says: a
// recording does not change between runs.

// Recording is one recorded trajectory an exhibit carries.
type Recording struct {
	// Name is the section's name: recording.jsonl or recordings/NAME.jsonl.
	Name string
	// Line is the line of the recording's first event in the archive.
	Line int
	// Data is the JSONL text.
	Data []byte
	// sessions are the session ids the recording holds.
	sessions []string
}

// The sections that hold an exhibit's recordings.
const (
	sectionRecording  = "recording.jsonl"
	recordingsPrefix  = "recordings/"
	recordingsSuffix  = ".jsonl"
	exhibitOnlyFields = "prompt, model, person, config, limits and repeat"
)

// Exhibit reports whether s carries recordings instead of a model script.
func (s *Scenario) Exhibit() bool { return len(s.Recordings) > 0 }

// recordingSection takes a section that holds a recording, reporting
// whether name is one.
func (p *parser) recordingSection(s *Scenario, name string, line int, data []byte) bool {
	switch {
	case name == sectionRecording:
	case strings.HasPrefix(name, recordingsPrefix) && strings.HasSuffix(name, recordingsSuffix):
		base := strings.TrimPrefix(name, recordingsPrefix)
		if base != path.Base(base) || base == recordingsSuffix || strings.HasPrefix(base, ".") {
			p.addf(line-1, "section %q: name a recording recordings/NAME.jsonl, without directories", name)
			return true
		}
	default:
		return false
	}
	s.Recordings = append(s.Recordings, Recording{Name: name, Line: line, Data: data, sessions: p.checkRecording(name, line, data)})
	return true
}

// checkRecording decodes a recording so that a broken one is refused
// before anything runs, at its line in the archive, and returns the
// sessions it holds.
func (p *parser) checkRecording(name string, line int, data []byte) []string {
	dec := trajectory.NewDecoder(bytes.NewReader(data), name)
	events := 0
	var sessions []string
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var le *trajectory.LineError
			if errors.As(err, &le) {
				p.addf(line+le.Line-1, "%s: %v", name, le.Err)
			} else {
				p.addf(line-1, "%s: %v", name, err)
			}
			return nil
		}
		events++
		if !slices.Contains(sessions, ev.Session) {
			sessions = append(sessions, ev.Session)
		}
	}
	if events == 0 {
		p.addf(line-1, "%s holds no events: paste a recorded trajectory (retrace run writes one per session)", name)
	}
	return sessions
}

// checkExhibit refuses what an exhibit cannot have: the fields that drive
// a run, workspace files, expectations of a run's outcome and files, a
// recording.jsonl beside recordings/, a session in two recordings, and
// event expectations over several recordings. has says which scenario.yaml keys were given, at their
// nodes' lines.
func (p *parser) checkExhibit(s *Scenario, has map[string]int) {
	if !s.Exhibit() {
		return
	}
	for _, k := range []string{"prompt", "model", "person", "config", "limits", "repeat", "plant", "follow_ups"} {
		if line, ok := has[k]; ok {
			p.addf(line, "%s: an exhibit plays a recording, not a model; drop %s (an exhibit takes no %s)", k, k, exhibitOnlyFields)
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(s.Files)) {
		p.addf(s.Line-1, "workspace/%s: an exhibit has no workspace; drop its files or the recordings", rel)
	}
	if o := s.Expect.Outcome; o != nil {
		p.addf(o.Line, "expect.outcome: an exhibit runs nothing, so it has no outcome; check the recording's session_end with {event: session_end}")
	}
	for _, f := range s.Expect.Files {
		p.addf(f.Line, "%s: an exhibit has no workspace files to check", f.Path)
	}
	for _, d := range s.Expect.Divergences {
		p.addf(d.Line, "%s: an exhibit runs nothing to compare with %s; drop it", d.Path, sectionReference)
	}
	single := slices.ContainsFunc(s.Recordings, func(r Recording) bool { return r.Name == sectionRecording })
	if single && len(s.Recordings) > 1 {
		p.addf(s.Recordings[0].Line-1, "give one recording.jsonl or several recordings/NAME.jsonl, not both")
	}
	holder := map[string]string{}
	for _, rec := range s.Recordings {
		for _, id := range rec.sessions {
			if prev, dup := holder[id]; dup {
				p.addf(rec.Line-1, "%s holds session %s, as %s does; a corpus holds each session once", rec.Name, id, prev)
			}
			holder[id] = rec.Name
		}
	}
	if len(s.Recordings) > 1 {
		for _, e := range s.Expect.Events {
			p.addf(e.Line, "%s: the event expectations of an exhibit need one recording; give recording.jsonl alone, or expect detectors only", e.Path)
		}
		for _, r := range s.Expect.Replies {
			p.addf(r.Line, "%s: the reply expectations of an exhibit need one recording; give recording.jsonl alone, or expect detectors only", r.Path)
		}
		if q := s.Expect.Sequence; q != nil {
			p.addf(q.Line, "%s: the sequence expectation of an exhibit needs one recording; give recording.jsonl alone, or expect detectors only", q.Path)
		}
	}
	if s.Expect.Detectors == nil && len(s.Expect.Events) == 0 {
		p.addf(s.Line, "an exhibit expects nothing: give expect.detectors or expect.events")
	}
}

// exhibit checks one exhibit: it writes the recordings where a run's
// recording would go, checks the event expectations over the one
// recording, and, when ownPass says so, runs every detector over the
// exhibit's recordings; detectExhibits judges the others.
func (r *runner) exhibit(ctx context.Context, s *Scenario, index int) (res results.RunResult) {
	res.Repeat = 1
	clock := r.opts.clock()
	start := clock()
	defer func() { res.DurationMs = trajectory.Millis(clock().Sub(start)) }()
	dir := filepath.Join(r.runs, fmt.Sprintf("exhibit-%d-%s", index, s.Name))
	if err := os.MkdirAll(filepath.Join(dir, "recordings"), 0o755); err != nil {
		res.Error = err.Error()
		return res
	}
	// The recordings were written by hand, not by the runtime: replay
	// lists them as an exhibit rather than failing on them.
	why := fmt.Sprintf("exhibit: %s (%s) carries recordings of the failure museum, not a session retrace ran", s.Name, s.File)
	for _, d := range []string{dir, filepath.Join(dir, "recordings")} {
		if err := recorder.MarkNotReplayable(d, why); err != nil {
			res.Error = err.Error()
			return res
		}
	}
	var files []string
	for _, rec := range s.Recordings {
		p := filepath.Join(dir, filepath.FromSlash(rec.Name))
		if err := os.WriteFile(p, rec.Data, 0o644); err != nil {
			res.Error = err.Error()
			return res
		}
		files = append(files, p)
	}
	first, err := readRecording(files[0])
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Trajectory = files[0]
	if len(first.events) > 0 {
		res.Session = first.events[0].Session
	}
	if first.end != nil {
		if end, ok := first.end.Payload.(*trajectory.SessionEnd); ok {
			res.Reason, res.Turns, res.ExitCode = end.Reason, end.Turns, ExitCodeOf(end.Reason)
		}
	}
	for _, e := range s.Expect.Events {
		res.Failures = append(res.Failures, checkEvent(e, first)...)
	}
	for _, r := range s.Expect.Replies {
		res.Failures = append(res.Failures, checkReply(r, first)...)
	}
	res.Failures = append(res.Failures, checkSequence(s.Expect.Sequence, first)...)
	if s.Expect.Detectors == nil || !ownPass(s) {
		// detectExhibits judges it, with the others.
		return res
	}
	// Only the detectors the expectations name, unless no other may fire:
	// each costs queries over the whole corpus.
	ds := detectors.Catalog()
	if d := s.Expect.Detectors; !d.NoOthers {
		ds, err = detectors.Select(append(slices.Sorted(maps.Keys(d.Fire)), d.NotFire...), nil)
		if err != nil {
			res.Error = err.Error()
			return res
		}
	}
	fs, err := detect(ctx, files, ds)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	for _, f := range fs {
		if res.Findings == nil {
			res.Findings = map[string]int{}
		}
		res.Findings[f.Detector]++
	}
	res.Failures = append(res.Failures, checkDetectors(s.Expect.Detectors, fs)...)
	return res
}

// ownPass reports whether an exhibit's detector expectations need a pass
// of the whole catalog over its recordings alone: when they name a
// detector that judges a corpus, or say no other detector may fire.
// The others share one pass of the detectors that judge one session
// (detectExhibits): a DuckDB per exhibit costs more than the detectors.
func ownPass(s *Scenario) bool {
	d := s.Expect.Detectors
	if d == nil {
		return false
	}
	if d.NoOthers {
		return true
	}
	ids := slices.Collect(maps.Keys(d.Fire))
	for _, id := range append(ids, d.NotFire...) {
		if ds, err := detectors.Select([]string{id}, nil); err == nil && ds[0].Info().Corpus {
			return true
		}
	}
	return false
}

// detectExhibits runs the detectors that judge one session, once, over
// the recordings of every exhibit that ownPass leaves to it, and checks
// each exhibit's detector expectations over the findings about its own
// sessions. An exhibit whose session another exhibit also holds (one
// load refuses that) gets a pass of its own.
func (r *runner) detectExhibits(ctx context.Context, suite []*Scenario, results *results.Results) error {
	owner := map[string]int{}
	var files []string
	var shared, alone []int
	for i, s := range suite {
		runs := results.Scenarios[i].Runs
		if !s.Exhibit() || s.Expect.Detectors == nil || ownPass(s) || len(runs) == 0 || runs[0].Error != "" {
			continue
		}
		clash := false
		for _, rec := range s.Recordings {
			for _, id := range rec.sessions {
				_, taken := owner[id]
				clash = clash || taken
			}
		}
		if clash {
			alone = append(alone, i)
			continue
		}
		for _, rec := range s.Recordings {
			for _, id := range rec.sessions {
				owner[id] = i
			}
		}
		shared = append(shared, i)
		files = append(files, exhibitFiles(runs[0].Trajectory, s)...)
	}
	var ds []detectors.Detector
	for _, d := range detectors.Catalog() {
		if !d.Info().Corpus {
			ds = append(ds, d)
		}
	}
	found := map[int][]detectors.Finding{}
	if len(files) > 0 {
		fs, err := detect(ctx, files, ds)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// One exhibit's recording the load refuses must not take
			// the others with it: judge each alone, and the bad one
			// gets its error.
			alone, shared = append(shared, alone...), nil
		}
		for _, f := range fs {
			if i, ok := owner[f.Session]; ok && err == nil {
				found[i] = append(found[i], f)
			}
		}
	}
	for _, i := range alone {
		run := &results.Scenarios[i].Runs[0]
		fs, err := detect(ctx, exhibitFiles(run.Trajectory, suite[i]), ds)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			run.Error = err.Error()
			continue
		}
		found[i] = fs
	}
	for _, i := range append(shared, alone...) {
		run := &results.Scenarios[i].Runs[0]
		if run.Error != "" {
			continue
		}
		for _, f := range found[i] {
			if run.Findings == nil {
				run.Findings = map[string]int{}
			}
			run.Findings[f.Detector]++
		}
		run.Failures = append(run.Failures, checkDetectors(suite[i].Expect.Detectors, found[i])...)
	}
	return nil
}

// exhibitFiles returns the files an exhibit's recordings were written
// to, from the first (the run's Trajectory).
func exhibitFiles(first string, s *Scenario) []string {
	dir := filepath.Dir(first)
	if s.Recordings[0].Name != sectionRecording {
		dir = filepath.Dir(dir)
	}
	var out []string
	for _, rec := range s.Recordings {
		out = append(out, filepath.Join(dir, filepath.FromSlash(rec.Name)))
	}
	return out
}

// detect runs ds over files alone.
func detect(ctx context.Context, files []string, ds []detectors.Detector) ([]detectors.Finding, error) {
	db, err := metrics.Open(ctx, metrics.Options{})
	if err != nil {
		return nil, fmt.Errorf("exhibit: %w", err)
	}
	defer db.Close()
	if _, err := db.Load(ctx, files...); err != nil {
		return nil, fmt.Errorf("exhibit: load the recordings: %w", err)
	}
	rep, err := detectors.Run(ctx, db, ds, detectors.Options{})
	if err != nil {
		return nil, fmt.Errorf("exhibit: detectors: %w", err)
	}
	return rep.Findings, nil
}
