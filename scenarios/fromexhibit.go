package scenarios

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// A recording the runtime cannot play again (an exhibit of the failure
// museum, written by hand; a synthetic session of package synth; a
// native recording whose workspace snapshot is gone) becomes an exhibit
// scenario: it carries the recording itself, and the detectors judge it
// as they judge the museum's exhibits. Its minimization drops recordings,
// turns and the events within turns instead of script turns, and keeps
// every line it keeps byte for byte, so each is the recording's own.

// exhibitReason says why the recording at path is played as an exhibit
// rather than through the runtime, or "" when the runtime can play it.
// Imported sessions and mock serve recordings are not exhibits: they
// have an agent to run.
func exhibitReason(rec *recording) string {
	start, ok := rec.events[0].Payload.(*trajectory.SessionStart)
	if !ok {
		return ""
	}
	switch start.Tags["source"] {
	case "import", "mock_serve":
		return ""
	case "synth":
		return "it is a synthetic session (retrace synth), which no runtime recorded and whose blobs do not exist"
	}
	if why, ok := recorder.NotReplayable(rec.file); ok {
		return "retrace marked it not replayable: " + why
	}
	ref := ""
	for _, ev := range rec.events {
		switch p := ev.Payload.(type) {
		case *trajectory.SessionStart:
			ref = cmp.Or(ref, p.WorkspaceSnapshot)
		case *trajectory.WorkspaceSnapshot:
			ref = cmp.Or(ref, p.Manifest)
		}
	}
	if ref == "" {
		return ""
	}
	if _, err := recorder.OpenBlobs(recorder.BlobsDir(rec.file)).Get(ref); err != nil {
		return fmt.Sprintf("its workspace snapshot %s is not in %s, so the workspace cannot be restored", ref, recorder.BlobsDir(rec.file))
	}
	return ""
}

// exhibitDir reports whether path is a directory of recordings retrace
// marked not replayable: the recordings/ of a corpus exhibit that eval
// --out wrote.
func exhibitDir(path string) (string, bool) {
	info, err := os.Stat(path)
	if err != nil || !info.IsDir() {
		return "", false
	}
	_, ok := recorder.NotReplayable(filepath.Join(path, "x.jsonl"))
	return path, ok
}

// fromExhibitDir makes one exhibit scenario of every recording in dir.
func fromExhibitDir(ctx context.Context, dir string, opts FromOptions) (FromResult, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(paths) == 0 {
		return FromResult{}, fmt.Errorf("%w: %s holds no recordings (*.jsonl)", ErrFrom, dir)
	}
	slices.Sort(paths)
	var recs []*recording
	for _, p := range paths {
		rec, err := readFrom(p)
		if err != nil {
			return FromResult{}, err
		}
		recs = append(recs, rec)
	}
	why, _ := recorder.NotReplayable(paths[0])
	return fromExhibit(ctx, recs, "retrace marked them not replayable: "+why, opts)
}

// exhibitFile is one recording an exhibit scenario carries.
type exhibitFile struct {
	// section is the archive's section: recording.jsonl, or
	// recordings/NAME.jsonl for several.
	section string
	rec     *recording
	// lines are the file's lines, without their newlines; line n is
	// lines[n-1].
	lines []string
	// fixed are the lines always kept: those before the first
	// model_request (session_start, the snapshot, the prompt) and
	// session_end.
	fixed []int
	// turns are each turn's lines, from its model_request up to the next.
	turns [][]int
}

// exhibitUnit is a turn or an event of one recording, as ddmin drops it.
type exhibitUnit struct {
	file  int
	lines []int
}

// exhibitGen makes an exhibit scenario of recordings.
type exhibitGen struct {
	files    []*exhibitFile
	keep     *Property
	why      string
	findings []detectors.Finding
	// minimized says what the minimization reduced, for the header.
	minimized string
}

// readExhibitFiles reads the recordings' raw lines and cuts them into
// turns.
func readExhibitFiles(recs []*recording) ([]*exhibitFile, error) {
	var out []*exhibitFile
	for _, rec := range recs {
		data, err := os.ReadFile(rec.file)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFrom, err)
		}
		data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
		f := &exhibitFile{rec: rec, lines: strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")}
		f.section = sectionRecording
		if len(recs) > 1 {
			f.section = recordingsPrefix + filepath.Base(rec.file)
		}
		for _, ev := range rec.events {
			switch {
			case ev.Type() == trajectory.TypeModelRequest:
				f.turns = append(f.turns, []int{ev.line})
			case ev.Type() == trajectory.TypeSessionEnd || len(f.turns) == 0:
				f.fixed = append(f.fixed, ev.line)
			default:
				f.turns[len(f.turns)-1] = append(f.turns[len(f.turns)-1], ev.line)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// fromExhibit makes an exhibit scenario of a recording the runtime cannot
// play: the recording itself, and the kept property (or the detectors'
// findings) as expectations, minimized with opts.Minimize.
func fromExhibit(ctx context.Context, recs []*recording, why string, opts FromOptions) (FromResult, error) {
	files, err := readExhibitFiles(recs)
	if err != nil {
		return FromResult{}, err
	}
	rec := recs[0]
	g := &exhibitGen{files: files, keep: opts.Keep, why: why}
	var paths []string
	for _, r := range recs {
		if r.end == nil {
			last := r.events[len(r.events)-1]
			return FromResult{}, fmt.Errorf("%s: %w: it is torn: no session_end (the last event is a %s at line %d); a scenario needs the whole session", r.file, ErrFrom, last.Type(), last.line)
		}
		paths = append(paths, r.file)
	}
	if g.findings, err = detect(ctx, paths, detectors.Catalog()); err != nil {
		return FromResult{}, fmt.Errorf("%s: %w", rec.file, err)
	}
	if k := opts.Keep; k != nil {
		if k.Kind != PropDetector && len(recs) > 1 {
			return FromResult{}, fmt.Errorf("%s: %w: --keep %s: an exhibit of several recordings takes detector expectations only; keep a detector", rec.file, ErrFrom, k)
		}
		if k.Kind == PropDivergence {
			return FromResult{}, fmt.Errorf("%s: %w: --keep %s: %s, so the scenario plays no session to compare with the recording; keep a detector, failure or defense", rec.file, ErrFrom, k, why)
		}
		if k.Kind == PropOutcome {
			return FromResult{}, fmt.Errorf("%s: %w: --keep outcome: %s, so the scenario plays no session and has no outcome of its own; keep a detector, failure or defense", rec.file, ErrFrom, why)
		}
		if err := g.shows(*k); err != nil {
			return FromResult{}, fmt.Errorf("%s: %w", rec.file, err)
		}
	}
	keep := g.all()
	var minimized *MinimizeSummary
	if opts.Minimize != nil {
		if opts.Keep == nil {
			return FromResult{}, fmt.Errorf("%w: minimizing needs a property to keep: add --keep", ErrFrom)
		}
		var sum MinimizeSummary
		if keep, sum, err = g.minimize(ctx, *opts.Minimize); err != nil {
			return FromResult{}, fmt.Errorf("%s: %w", rec.file, err)
		}
		minimized = &sum
	}
	archive := g.archive(keep)
	s, err := Parse(archive, "generated.txtar")
	if err != nil {
		return FromResult{}, fmt.Errorf("the scenario made of %s does not parse (a retrace bug): %w", rec.file, err)
	}
	if minimized != nil {
		// The reductions were judged by the kept property alone; the
		// scenario is judged as eval judges it, once.
		res, err := Run(ctx, []*Scenario{s}, Options{Parallel: 1})
		if err != nil {
			return FromResult{}, err
		}
		if run := res.Scenarios[0].Runs[0]; run.Error != "" || len(run.Failures) > 0 {
			return FromResult{}, fmt.Errorf("the minimized exhibit of %s does not pass under eval (a retrace bug): %s%v", rec.file, run.Error, run.Failures)
		}
	}
	turns, calls := g.count(keep)
	return FromResult{Archive: archive, Turns: turns, Calls: calls, Files: 0, Minimized: minimized, Exhibit: true}, nil
}

// shows refuses a kept property the recording does not show.
func (g *exhibitGen) shows(p Property) error {
	n := 0
	if p.Kind == PropDetector {
		n = findingCounts(g.findings)[p.Value]
	} else {
		e := keptEvent(p)
		for _, f := range g.files {
			for _, ev := range f.rec.events {
				if e.matches(ev.Event) {
					n++
				}
			}
		}
	}
	return checkShown(p, n, func() string {
		var shown []string
		for _, id := range slices.Sorted(maps.Keys(findingCounts(g.findings))) {
			shown = append(shown, "detector:"+id)
		}
		return " (it shows " + cmp.Or(strings.Join(shown, ", "), "no detector finding") + ")"
	})
}

func findingCounts(fs []detectors.Finding) map[string]int {
	out := map[string]int{}
	for _, f := range fs {
		out[f.Detector]++
	}
	return out
}

// all is every line of every recording.
func (g *exhibitGen) all() [][]int {
	out := make([][]int, len(g.files))
	for i, f := range g.files {
		for _, ev := range f.rec.events {
			out[i] = append(out[i], ev.line)
		}
	}
	return out
}

// count counts the model turns and tool calls of the kept lines.
func (g *exhibitGen) count(keep [][]int) (turns, calls int) {
	for i, f := range g.files {
		types := map[int]trajectory.EventType{}
		for _, ev := range f.rec.events {
			types[ev.line] = ev.Type()
		}
		for _, l := range keep[i] {
			switch types[l] {
			case trajectory.TypeModelResponse:
				turns++
			case trajectory.TypeToolCall:
				calls++
			}
		}
	}
	return turns, calls
}

// archive writes the exhibit scenario of the kept lines of each
// recording (a recording with none is left out).
func (g *exhibitGen) archive(keep [][]int) []byte {
	var b strings.Builder
	first := g.files[0].rec
	session := first.events[0].Session
	fmt.Fprintf(&b, "Made by retrace scenario from %s (session %s).\n", filepath.Base(first.file), session)
	fmt.Fprintf(&b, "It is an exhibit: it carries the recording instead of a model script,\nbecause %s; the detectors judge the recording as they judge the\nfailure museum's exhibits.\n", g.why)
	if g.keep != nil {
		fmt.Fprintf(&b, "It tests one property, kept with --keep %s: it passes while the\nrecording shows it, and fails once it does not.\n", g.keep)
	}
	if g.minimized != "" {
		b.WriteString(g.minimized + "\n")
	}
	for i, f := range g.files {
		if len(keep[i]) > 0 {
			fmt.Fprintf(&b, "%s is lines %s of %s.\n", f.section, spans(keep[i]), f.rec.file)
		}
	}
	b.WriteString("-- scenario.yaml --\n")
	fmt.Fprintf(&b, "description: %s\n", quote(fmt.Sprintf("From recording %s, session %s.", filepath.Base(first.file), session)))
	b.WriteString("tags: [exhibit]\nexpect:\n")
	switch {
	case g.keep != nil:
		if g.keep.Kind == PropDetector && !g.keep.Not {
			fmt.Fprintf(&b, "  # the recording's finding: %s\n", g.evidence(g.keep.Value))
		}
		b.WriteString(g.keep.expectYAML())
	default:
		counts := findingCounts(g.findings)
		if len(counts) == 0 {
			b.WriteString("  # the recording shows no detector finding: the scenario checks it holds its tool calls\n")
			_, calls := g.count(keep)
			fmt.Fprintf(&b, "  events:\n    - {event: tool_call, count: %d}\n", calls)
			break
		}
		b.WriteString("  detectors:\n    fire:\n")
		for _, id := range slices.Sorted(maps.Keys(counts)) {
			fmt.Fprintf(&b, "      %s: %d # %s\n", id, counts[id], g.evidence(id))
		}
	}
	for i, f := range g.files {
		if len(keep[i]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "-- %s --\n", f.section)
		for _, l := range keep[i] {
			b.WriteString(f.lines[l-1])
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// evidence names the recording lines a detector's findings cite first.
func (g *exhibitGen) evidence(id string) string {
	var lines []int
	for _, f := range g.findings {
		if f.Detector == id && len(f.Evidence) > 0 && f.Evidence[0].Line > 0 {
			lines = append(lines, f.Evidence[0].Line)
		}
	}
	if len(lines) == 0 {
		return id + " (its evidence names no line)"
	}
	slices.Sort(lines)
	return id + " at " + lineList(slices.Compact(lines)) + " of the recording"
}

// spans says sorted lines as ranges: 1-3, 7, 9-12.
func spans(lines []int) string {
	var parts []string
	for i := 0; i < len(lines); {
		j := i
		for j+1 < len(lines) && lines[j+1] == lines[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(lines[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", lines[i], lines[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// minimize reduces the recordings by ddmin: whole recordings (of
// several), then turns, then the events within the turns left but their
// model_request and model_response, keeping lines that still show the
// kept property. It returns the kept lines of each recording.
func (g *exhibitGen) minimize(ctx context.Context, opts MinimizeOptions) ([][]int, MinimizeSummary, error) {
	if opts.MaxRuns <= 0 {
		opts.MaxRuns = DefaultMaxRuns
	}
	opts.Jobs = max(opts.Jobs, 1)
	m := &minimizer{ctx: ctx, opts: opts, memo: map[string]bool{}}
	all := g.all()
	turnsBefore, callsBefore := g.count(all)
	sum := MinimizeSummary{TurnsBefore: turnsBefore, CallsBefore: callsBefore, BytesBefore: len(g.archive(all))}
	var units []exhibitUnit
	for i, f := range g.files {
		for _, t := range f.turns {
			units = append(units, exhibitUnit{file: i, lines: t})
		}
	}
	// lines is what a choice of turn units keeps, with every recording's
	// fixed lines, less the dropped events.
	kept := indexes(len(g.files))
	lines := func(kept, turns []int, dropped map[int]bool) [][]int {
		out := make([][]int, len(g.files))
		for _, i := range kept {
			out[i] = append(out[i], g.files[i].fixed...)
		}
		for _, u := range turns {
			if !slices.Contains(kept, units[u].file) {
				continue
			}
			for _, l := range units[u].lines {
				if !dropped[u<<32|l] {
					out[units[u].file] = append(out[units[u].file], l)
				}
			}
		}
		for i := range out {
			slices.Sort(out[i])
		}
		return out
	}
	test := func(keep [][]int) (bool, error) {
		return m.check(fmt.Sprint(keep), func() (bool, error) { return g.holds(ctx, keep) })
	}
	turns := indexes(len(units))
	none := map[int]bool{}
	ok, err := test(lines(kept, turns, none))
	if err != nil {
		return nil, sum, err
	}
	if !ok {
		return nil, sum, fmt.Errorf("%w: the exhibit kept to %s does not pass as it is, so there is nothing to minimize: run it with retrace eval to see why", ErrFrom, g.keep)
	}
	if len(g.files) > 1 {
		// First whole recordings, of a corpus.
		all := kept
		kept, err = m.ddmin(all, func(c []int) (bool, error) {
			if len(c) == 0 {
				return false, nil
			}
			return test(lines(c, turns, none))
		}, func(n int) { m.progress(len(turns), n) })
		if err != nil {
			return nil, sum, err
		}
		var left []int
		for _, u := range turns {
			if slices.Contains(kept, units[u].file) {
				left = append(left, u)
			}
		}
		turns = left
	}
	turns, err = m.ddmin(turns, func(c []int) (bool, error) { return test(lines(kept, c, none)) }, func(n int) { m.progress(n, len(kept)) })
	if err != nil {
		return nil, sum, err
	}
	// Then the events of the turns left, but the request and response
	// that make a turn of it: a tool call's events (its permission
	// decisions, outcome, end and result) go together, the others one
	// by one.
	var groups [][]int
	for _, u := range turns {
		f := g.files[units[u].file]
		byCall := map[string]int{}
		for _, l := range units[u].lines {
			ev := f.eventAt(l)
			switch ev.Type() {
			case trajectory.TypeModelRequest, trajectory.TypeModelResponse:
				continue
			}
			id := ""
			if r := trajectory.ToolRefOf(ev.Payload); r != nil {
				id = r.ToolUseID
			}
			if i, ok := byCall[id]; ok && id != "" {
				groups[i] = append(groups[i], u<<32|l)
				continue
			}
			byCall[id] = len(groups)
			groups = append(groups, []int{u<<32 | l})
		}
	}
	dropping := func(kept []int) map[int]bool {
		d := map[int]bool{}
		for _, grp := range groups {
			for _, e := range grp {
				d[e] = true
			}
		}
		for _, k := range kept {
			for _, e := range groups[k] {
				delete(d, e)
			}
		}
		return d
	}
	keptEvents, err := m.ddmin(indexes(len(groups)), func(c []int) (bool, error) { return test(lines(kept, turns, dropping(c))) }, func(int) { m.progress(len(turns), 0) })
	if err != nil {
		return nil, sum, err
	}
	keep := lines(kept, turns, dropping(keptEvents))
	sum.TurnsAfter, sum.CallsAfter = g.count(keep)
	sum.Runs, sum.Exhausted = m.runs, m.runs >= opts.MaxRuns
	nBefore, nAfter := 0, 0
	for i := range all {
		nBefore += len(all[i])
		nAfter += len(keep[i])
	}
	sum.EventsBefore, sum.EventsAfter = nBefore, nAfter
	g.minimized = fmt.Sprintf("Minimized with ddmin to what still shows it: turns %d -> %d, tool calls %d -> %d, recorded events %d -> %d.", sum.TurnsBefore, sum.TurnsAfter, sum.CallsBefore, sum.CallsAfter, nBefore, nAfter)
	sum.BytesAfter = len(g.archive(keep))
	return keep, sum, nil
}

// holds reports whether the kept lines still show the kept property: the
// kept detector finds something in them, or an event the property names
// is among them. It judges the property alone, as the scenario's
// expectations do, without the runner's pass of every detector.
func (g *exhibitGen) holds(ctx context.Context, keep [][]int) (bool, error) {
	if g.keep.Kind != PropDetector {
		e := keptEvent(*g.keep)
		for i, f := range g.files {
			for _, ev := range f.rec.events {
				if _, ok := slices.BinarySearch(keep[i], ev.line); ok && e.matches(ev.Event) {
					return !g.keep.Not, nil
				}
			}
		}
		return g.keep.Not, nil
	}
	dir, err := os.MkdirTemp("", "retrace-minimize-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	var paths []string
	for i, f := range g.files {
		if len(keep[i]) == 0 {
			continue
		}
		var b strings.Builder
		for _, l := range keep[i] {
			b.WriteString(f.lines[l-1])
			b.WriteByte('\n')
		}
		p := filepath.Join(dir, filepath.Base(f.section))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			return false, err
		}
		paths = append(paths, p)
	}
	ds, err := detectors.Select([]string{g.keep.Value}, nil)
	if err != nil {
		return false, err
	}
	fs, err := detect(ctx, paths, ds)
	if err != nil {
		// A reduction the load refuses does not show the property.
		return false, nil
	}
	return (len(fs) > 0) != g.keep.Not, nil
}

// eventAt is the event at line l.
func (f *exhibitFile) eventAt(l int) trajectory.Event {
	i, _ := slices.BinarySearchFunc(f.rec.events, l, func(ev located, l int) int { return ev.line - l })
	return f.rec.events[i].Event
}
