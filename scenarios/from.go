package scenarios

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/retrace-dev/retrace/compare"
	"github.com/retrace-dev/retrace/detectors"
	"github.com/retrace-dev/retrace/harness"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/trajectory"
)

// ErrFrom is wrapped by the errors of From for a recording that cannot
// become a scenario as it is (torn, not a trajectory, no snapshot, an
// imported session) or a --keep property it does not show: input the
// user has to change. Each message says what is missing.
var ErrFrom = errors.New("cannot make a scenario of this recording")

// MaxWorkspaceFile is the largest workspace file From writes into the
// scenario; a larger one is left out with a comment saying so.
const MaxWorkspaceFile = 64 << 10

// FromOptions say which recording becomes a scenario and what it tests.
type FromOptions struct {
	// Recording is the trajectory file, written by retrace run or kept by
	// retrace eval --out, with its .blobs directory next to it.
	Recording string
	// Keep, when set, is the one property the scenario tests (see
	// ParseProperty); the expectations are then that property alone.
	Keep *Property
	// Minimize, when set (with Keep), reduces the scenario's turns, the
	// tool calls within them and its workspace files with ddmin to a
	// smallest set that still shows the kept property, re-running the
	// scenario each time.
	Minimize *MinimizeOptions
	// Runtime says what plays the turns of another client's session
	// (imported, or recorded by mock serve --record): RuntimeClient (the
	// default) runs that client by its agent profile, RuntimeBuiltin
	// retrace's runtime (see fromclient.go).
	Runtime string
}

// FromResult is a scenario made of a recording.
type FromResult struct {
	// Archive is the scenario, a txtar archive that Parse reads.
	Archive []byte
	// Turns, Calls and Files count the model turns, tool calls and
	// workspace files it holds; LeftOut lists what of the recording it
	// could not carry (also said in its comments).
	Turns, Calls, Files int
	LeftOut             []string
	// Minimized says what the minimization did; nil without one.
	Minimized *MinimizeSummary
	// Exhibit says the scenario carries the recording instead of a
	// model script: the runtime cannot play it (see exhibitReason).
	Exhibit bool
}

// corpusDetector reports whether detector id judges a corpus of sessions.
func corpusDetector(id string) bool {
	ds, err := detectors.Select([]string{id}, nil)
	return err == nil && ds[0].Info().Corpus
}

// From turns a native recording (retrace run, retrace eval --out) into a
// regression scenario: the recorded model responses as its script, in
// order, each turn expecting the tool results its recorded request
// carried (so a run whose calls end differently is reported where it
// parts); the workspace from the recording's snapshot; the
// effective configuration from session_start as its config; and
// expectations derived from what happened (outcome, tool calls,
// failures, permission decisions, defenses, detector findings), or only
// opts.Keep, reduced by ddmin with opts.Minimize. Comments say which
// line of the recording each part came from. The recording is already
// redacted, and nothing is un-redacted.
func From(ctx context.Context, opts FromOptions) (FromResult, error) {
	if dir, ok := exhibitDir(opts.Recording); ok {
		return fromExhibitDir(ctx, dir, opts)
	}
	rec, err := readFrom(opts.Recording)
	if err != nil {
		return FromResult{}, err
	}
	if clientSession(rec) || opts.Runtime != "" {
		return fromClient(ctx, opts, rec)
	}
	if why := exhibitReason(rec); why != "" {
		return fromExhibit(ctx, []*recording{rec}, why, opts)
	}
	if k := opts.Keep; k != nil && k.Kind == PropDetector && corpusDetector(k.Value) {
		return FromResult{}, fmt.Errorf("%w: --keep %s: it judges a corpus of sessions, and a scenario's run is one; keep it of an exhibit (a recording retrace marked not replayable)", ErrFrom, k)
	}
	g := &generator{rec: rec, keep: opts.Keep}
	if err := g.inspect(); err != nil {
		return FromResult{}, fmt.Errorf("%s: %w", opts.Recording, err)
	}
	files, err := g.workspace()
	if err != nil {
		return FromResult{}, err
	}
	findings, err := detect(ctx, []string{opts.Recording}, sessionDetectors())
	if err != nil {
		return FromResult{}, fmt.Errorf("%s: %w", opts.Recording, err)
	}
	g.findings = findings
	if opts.Keep != nil {
		if err := g.shows(*opts.Keep); err != nil {
			return FromResult{}, fmt.Errorf("%s: %w", opts.Recording, err)
		}
	}
	if k := opts.Keep; k != nil && k.Kind == PropDivergence {
		if g.reference, err = os.ReadFile(opts.Recording); err != nil {
			return FromResult{}, fmt.Errorf("%w: %w", ErrFrom, err)
		}
		if err := g.runShows(ctx, *k, files); err != nil {
			return FromResult{}, fmt.Errorf("%s: %w", opts.Recording, err)
		}
	}
	var minimized *MinimizeSummary
	if opts.Minimize != nil {
		if opts.Keep == nil {
			return FromResult{}, fmt.Errorf("%w: minimizing needs a property to keep: add --keep", ErrFrom)
		}
		var sum MinimizeSummary
		if files, sum, err = g.minimize(ctx, files, *opts.Minimize); err != nil {
			return FromResult{}, fmt.Errorf("%s: %w", opts.Recording, err)
		}
		minimized = &sum
	}
	archive := g.archive(files)
	// What From writes must read back as a scenario: a problem here is
	// retrace's own, never the user's.
	if _, err := Parse(archive, "generated.txtar"); err != nil {
		return FromResult{}, fmt.Errorf("the scenario made of %s does not parse (a retrace bug): %w", opts.Recording, err)
	}
	calls := g.calls
	if minimized != nil {
		calls = minimized.CallsAfter
	}
	return FromResult{Archive: archive, Turns: len(g.turns), Calls: calls, Files: len(files), LeftOut: g.leftOut, Minimized: minimized}, nil
}

// sessionDetectors are the detectors that judge one session, as eval
// runs them.
func sessionDetectors() []detectors.Detector {
	var ds []detectors.Detector
	for _, d := range detectors.Catalog() {
		if !d.Info().Corpus {
			ds = append(ds, d)
		}
	}
	return ds
}

// readFrom reads the recording with each event's line, refusing what
// is not a whole retrace trajectory.
func readFrom(path string) (*recording, error) {
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w; give a trajectory file (.jsonl) written by retrace run or kept by retrace eval --out", ErrFrom, err)
	case info.IsDir():
		return nil, fmt.Errorf("%w: %s is a directory; give one trajectory file, e.g. %s", ErrFrom, path, filepath.Join(path, "<session>.jsonl"))
	}
	rd, err := trajectory.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFrom, err)
	}
	defer rd.Close()
	rec := &recording{file: path}
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not a retrace trajectory, or it is damaged: %w; check it with retrace validate", ErrFrom, path, err)
		}
		rec.events = append(rec.events, located{Event: ev, line: rd.Line()})
		if ev.Type() == trajectory.TypeSessionEnd {
			rec.end = &rec.events[len(rec.events)-1]
		}
	}
	if w := rd.Warnings(); len(w) > 0 {
		return nil, fmt.Errorf("%w: %s is torn: %s; a scenario needs the whole session", ErrFrom, path, w[0])
	}
	if len(rec.events) == 0 {
		return nil, fmt.Errorf("%w: %s holds no events; give a trajectory written by retrace run", ErrFrom, path)
	}
	return rec, nil
}

// generator holds what the scenario is made of.
type generator struct {
	rec  *recording
	keep *Property

	start     located
	snapshot  located
	prompt    string
	stream    bool
	followUps []located
	turns     []located
	calls     int
	// answers are the person's recorded answers: allow or deny; person
	// is the scripted person they make (personOf).
	answers []string
	person  string
	// minimized says what the minimization reduced, for the header.
	minimized string
	// keptConfig are the indexes of the config leaves (configLeaves)
	// the scenario keeps; nil keeps the whole recorded config.
	keptConfig []int
	// reduced says turns were dropped (minimize): a script whose last
	// turn calls tools gets a closing turn, so the session ends.
	reduced  bool
	findings []detectors.Finding
	leftOut  []string
	// reference is the recording itself, carried whole as
	// reference.jsonl when the kept property is a divergence; nil else.
	reference []byte
}

func (g *generator) note(format string, args ...any) {
	// archive is written more than once (a minimization's sizes), and
	// says each note once.
	if n := fmt.Sprintf(format, args...); !slices.Contains(g.leftOut, n) {
		g.leftOut = append(g.leftOut, n)
	}
}

// inspect finds the parts of the recording a scenario is made of, and
// refuses one that cannot make a scenario.
func (g *generator) inspect() error {
	first, ok := g.rec.events[0].Payload.(*trajectory.SessionStart)
	if !ok {
		return fmt.Errorf("%w: line %d is a %s, not the session_start a recording begins with", ErrFrom, g.rec.events[0].line, g.rec.events[0].Type())
	}
	if first.Continues != "" {
		return fmt.Errorf("%w: it continues session %s (retrace run --continue); a continued session is not supported yet: make the scenario of the session it continues", ErrFrom, first.Continues)
	}
	g.start = g.rec.events[0]
	if first.SystemPrompt != "" && first.SystemPrompt != SystemPrompt {
		g.note("the recorded system prompt (session_start, line %d) is not eval's; the scenario runs with eval's", g.start.line)
	}
	var snapshot string
	for _, ev := range g.rec.events {
		switch p := ev.Payload.(type) {
		case *trajectory.SessionStart:
			if p.WorkspaceSnapshot != "" {
				g.snapshot, snapshot = ev, p.WorkspaceSnapshot
			}
		case *trajectory.WorkspaceSnapshot:
			g.snapshot, snapshot = ev, p.Manifest
		case *trajectory.UserPrompt:
			g.followUps = append(g.followUps, ev)
		case *trajectory.ModelRequest:
			if g.prompt == "" {
				g.stream = p.Stream
				for _, m := range p.NewMessages {
					for _, b := range m.Content {
						if m.Role == trajectory.RoleUser && b.Type == trajectory.BlockText && g.prompt == "" {
							g.prompt = b.Text
						}
					}
				}
			}
		case *trajectory.ModelResponse:
			g.turns = append(g.turns, ev)
		case *trajectory.ToolCall:
			g.calls++
		case *trajectory.PermissionAllow:
			if p.Source == trajectory.SourceUser {
				g.answers = append(g.answers, "allow")
			}
		case *trajectory.PermissionDeny:
			if p.Source == trajectory.SourceUser {
				g.answers = append(g.answers, "deny")
			}
		}
	}
	g.person = g.personOf()
	switch {
	case g.rec.end == nil:
		last := g.rec.events[len(g.rec.events)-1]
		return fmt.Errorf("%w: it is torn: no session_end (the last event is a %s at line %d), so how the session ended is unknown; a scenario needs the whole session", ErrFrom, last.Type(), last.line)
	case snapshot == "":
		return fmt.Errorf("%w: it has no workspace snapshot (no session_start.workspace_snapshot and no workspace_snapshot event), so the files the session started from are unknown; record with retrace run, which snapshots the workspace, or keep the runs with retrace eval --out", ErrFrom)
	case g.prompt == "":
		return fmt.Errorf("%w: it has no model request with the user's task", ErrFrom)
	case len(g.turns) == 0:
		return fmt.Errorf("%w: it has no model_response, so there is no script to play", ErrFrom)
	}
	return nil
}

// workspaceFile is one file of the scenario's workspace.
type workspaceFile struct {
	path string
	data []byte
	// cut says which lines minimization kept of a large file; "" for
	// the whole file.
	cut string
}

// workspace restores the snapshot into a temporary directory, with the
// recorder's own checks, and reads back the files a txtar can hold.
func (g *generator) workspace() ([]workspaceFile, error) {
	path := g.rec.file
	blobs := recorder.OpenBlobs(recorder.BlobsDir(path))
	ref := g.snapshotRef()
	tmp, err := os.MkdirTemp("", "retrace-scenario-from-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	dst := filepath.Join(tmp, "ws")
	if err := recorder.RestoreWorkspace(blobs, ref, dst); err != nil {
		return nil, fmt.Errorf("%w: %s: restore the workspace snapshot of line %d: %w; check that the recording's .blobs directory sits next to it, as retrace run wrote it", ErrFrom, path, g.snapshot.line, err)
	}
	data, err := blobs.Get(ref)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrFrom, path, err)
	}
	var m recorder.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: the snapshot manifest %s: %w", ErrFrom, path, ref, err)
	}
	var out []workspaceFile
	for _, e := range m.Entries {
		switch {
		case strings.ContainsAny(e.Path, "\r\n") || strings.Contains(e.Path, " --"):
			g.note("workspace/%q: a name a txtar section cannot hold", e.Path)
			continue
		case e.Skipped != "":
			g.note("workspace/%s: not captured by the snapshot (%s)", e.Path, cmp.Or(e.Reason, e.Skipped))
			continue
		case e.Type == recorder.EntrySymlink:
			g.note("workspace/%s: a symlink (to %s), which a scenario cannot hold", e.Path, e.Link)
			continue
		case e.Type != recorder.EntryFile:
			continue
		}
		b, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(e.Path)))
		if err != nil {
			return nil, fmt.Errorf("%s: read the restored workspace/%s: %w", path, e.Path, err)
		}
		switch {
		case len(b) > MaxWorkspaceFile:
			g.note("workspace/%s: %d bytes, over the %d a scenario holds", e.Path, len(b), MaxWorkspaceFile)
			continue
		case bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b):
			g.note("workspace/%s: binary (%d bytes)", e.Path, len(b))
			continue
		case hasMarker(b):
			g.note("workspace/%s: has a line like a txtar section marker (-- name --)", e.Path)
			continue
		case len(b) > 0 && b[len(b)-1] != '\n':
			g.note("workspace/%s: written with a final newline it did not have", e.Path)
		}
		if red, n := redactor().Redact(b); n > 0 {
			g.note("workspace/%s: %d secrets redacted, as the recorder redacts a recording", e.Path, n)
			b = red
		}
		out = append(out, workspaceFile{path: e.Path, data: b})
	}
	return out, nil
}

func (g *generator) snapshotRef() string {
	switch p := g.snapshot.Payload.(type) {
	case *trajectory.SessionStart:
		return p.WorkspaceSnapshot
	case *trajectory.WorkspaceSnapshot:
		return p.Manifest
	}
	return ""
}

// hasMarker reports a line that txtar would read as a section marker.
func hasMarker(b []byte) bool {
	for l := range strings.SplitSeq(string(b), "\n") {
		if markerRe.MatchString(l) {
			return true
		}
	}
	return false
}

// shows refuses a kept property the recording does not show: a test
// of it would fail from the start. A divergence is not in the recording
// but between it and a run: runShows checks it.
func (g *generator) shows(p Property) error {
	if p.Kind == PropOutcome || p.Kind == PropDivergence {
		return nil
	}
	n := 0
	if p.Kind == PropDetector {
		n = g.detectorCounts()[p.Value]
	} else {
		e := keptEvent(p)
		for _, ev := range g.rec.events {
			if e.matches(ev.Event) {
				n++
			}
		}
	}
	return checkShown(p, n, g.shown)
}

// runShows runs the scenario once and refuses a kept divergence its run
// does not show (or, negated, shows), naming the classes the run did
// show: a test of it would fail from the start.
func (g *generator) runShows(ctx context.Context, p Property, files []workspaceFile) error {
	s, err := Parse(g.archive(files), "generated.txtar")
	if err != nil {
		return fmt.Errorf("the scenario made of it does not parse (a retrace bug): %w", err)
	}
	var counts map[compare.Class]int
	var readErr error
	after := func(s *Scenario, _ int, _ string, res results.RunResult) {
		rec, err := readRecording(res.Trajectory)
		if err != nil {
			readErr = err
			return
		}
		run := make([]trajectory.Event, len(rec.events))
		for i, ev := range rec.events {
			run[i] = ev.Event
		}
		r, err := s.Divergences(run)
		readErr, counts = err, classCounts(r)
	}
	res, err := Run(ctx, []*Scenario{s}, Options{Parallel: 1, AfterRun: after})
	if err != nil {
		return err
	}
	if run := res.Scenarios[0].Runs[0]; run.Error != "" {
		return fmt.Errorf("%w: --keep %s: the scenario's run fails: %s", ErrFrom, p, run.Error)
	}
	if readErr != nil {
		return fmt.Errorf("%w: --keep %s: %w", ErrFrom, p, readErr)
	}
	if n := counts[compare.Class(p.Value)]; p.Not && n > 0 {
		return fmt.Errorf("%w: --keep %s: a run of the scenario shows %s against the recording; keep what it does not show", ErrFrom, p, shownClasses(counts))
	}
	return checkShown(p, counts[compare.Class(p.Value)], func() string {
		return fmt.Sprintf(" (a run of the scenario shows %s against the recording)", shownClasses(counts))
	})
}

// checkShown refuses a kept property that a recording showing it n
// times contradicts: a test of it would fail from the start. shown lists
// what the recording does show, for the message.
func checkShown(p Property, n int, shown func() string) error {
	switch {
	case p.Not && n > 0:
		return fmt.Errorf("%w: --keep %s: the recording shows %s %d times; keep what it does not show", ErrFrom, p, p.positive(), n)
	case !p.Not && n == 0:
		return fmt.Errorf("%w: --keep %s: the recording does not show it%s; keep something it shows", ErrFrom, p, shown())
	}
	return nil
}

// appendWorkspace appends the workspace files to a scenario archive.
func appendWorkspace(b *strings.Builder, files []workspaceFile) {
	for _, f := range files {
		fmt.Fprintf(b, "-- workspace/%s --\n", f.path)
		b.Write(f.data)
		if len(f.data) > 0 && f.data[len(f.data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
}

// shown lists what the recording shows, for a message.
func (g *generator) shown() string {
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(g.detectorCounts())) {
		parts = append(parts, "detector:"+id)
	}
	for _, e := range g.events() {
		switch e.Kind {
		case KindFailure:
			parts = append(parts, fmt.Sprintf("failure:%s,tool=%s", e.Value, e.Tool))
		case KindDefense:
			parts = append(parts, "defense:"+e.Value)
		}
	}
	parts = slices.Compact(parts)
	if len(parts) == 0 {
		return " (it shows no detector finding, failure or defense; outcome can always be kept)"
	}
	return " (it shows " + strings.Join(parts, ", ") + ")"
}

func (g *generator) detectorCounts() map[string]int {
	out := map[string]int{}
	for _, f := range g.findings {
		out[f.Detector]++
	}
	return out
}

// derived is one event expectation and the lines that show it.
type derived struct {
	EventExpect
	lines []int
}

// events derives the event expectations: each tool's calls, each
// failure kind per tool, each permission decision per source and tool,
// each defense per action, with exact counts, in the order first seen.
func (g *generator) events() []derived {
	var out []derived
	index := map[string]int{}
	add := func(key string, e EventExpect, line int) {
		if i, ok := index[key]; ok {
			out[i].lines = append(out[i].lines, line)
			return
		}
		index[key] = len(out)
		out = append(out, derived{EventExpect: e, lines: []int{line}})
	}
	for _, ev := range g.rec.events {
		switch p := ev.Payload.(type) {
		case *trajectory.ToolCall:
			add("call "+p.Tool, EventExpect{Kind: KindToolCalled, Value: p.Tool}, ev.line)
		case *trajectory.ToolFailure:
			add("failure "+string(p.FailureKind)+" "+p.Tool, EventExpect{Kind: KindFailure, Value: string(p.FailureKind), Tool: p.Tool}, ev.line)
		case *trajectory.PermissionAllow:
			add(permKey("allow", p.PermissionDecision), permExpect("allow", p.PermissionDecision), ev.line)
		case *trajectory.PermissionPrompt:
			add(permKey("prompt", p.PermissionDecision), permExpect("prompt", p.PermissionDecision), ev.line)
		case *trajectory.PermissionDeny:
			add(permKey("deny", p.PermissionDecision), permExpect("deny", p.PermissionDecision), ev.line)
		case *trajectory.DefenseTrigger:
			add("defense "+string(p.Defense)+" "+string(p.Action), EventExpect{Kind: KindDefense, Value: string(p.Defense), Action: string(p.Action)}, ev.line)
		}
	}
	for i := range out {
		n := len(out[i].lines)
		out[i].Count = Bounds{Min: &n, Max: &n}
	}
	return out
}

// callLog says each tool call, in order: its line, tool and id, and how
// it ended (ok, or the failure kind).
func (g *generator) callLog() []string {
	ended := map[string]string{}
	for _, ev := range g.rec.events {
		switch p := ev.Payload.(type) {
		case *trajectory.ToolSuccess:
			ended[p.ToolUseID] = "ok"
		case *trajectory.ToolFailure:
			ended[p.ToolUseID] = string(p.FailureKind)
		}
	}
	var out []string
	for _, ev := range g.rec.events {
		if p, ok := ev.Payload.(*trajectory.ToolCall); ok {
			out = append(out, fmt.Sprintf("line %d: %s %s -> %s", ev.line, p.Tool, p.ToolUseID, cmp.Or(ended[p.ToolUseID], "no end recorded")))
		}
	}
	return out
}

func permKey(d string, p trajectory.PermissionDecision) string {
	return "permission " + d + " " + string(p.Source) + " " + p.Tool
}

func permExpect(d string, p trajectory.PermissionDecision) EventExpect {
	return EventExpect{Kind: KindPermission, Value: d, Source: string(p.Source), Tool: p.Tool}
}

// archive writes the scenario.
func (g *generator) archive(files []workspaceFile) []byte {
	start := g.start.Payload.(*trajectory.SessionStart)
	file := g.rec.file
	var b strings.Builder
	b.WriteString("-- scenario.yaml --\n")
	fmt.Fprintf(&b, "# From %s; each comment names the recording's line.\n", file)
	fmt.Fprintf(&b, "description: %s\n", quote(fmt.Sprintf("From recording %s, session %s.", filepath.Base(file), g.start.Session)))
	fmt.Fprintf(&b, "# line %d: the first model_request's task\n", g.firstRequestLine())
	fmt.Fprintf(&b, "prompt: %s\n", quote(g.prompt))
	if len(start.Config) > 0 {
		if g.keptConfig == nil {
			fmt.Fprintf(&b, "# line %d: session_start.config, the effective configuration\n", g.start.line)
			b.WriteString(configYAML(start.Config))
		} else if c := g.configOf(g.keptConfig); c != "" {
			fmt.Fprintf(&b, "# line %d: session_start.config, the effective configuration, cut by ddmin to the\n# keys the kept property needs (the others are at their defaults)\n", g.start.line)
			b.WriteString(c)
		} else {
			fmt.Fprintf(&b, "# line %d: session_start.config: the kept property needs none of it\n", g.start.line)
		}
	}
	if g.stream {
		b.WriteString("stream: true\n")
	}
	if person := g.person; person != "" {
		fmt.Fprintf(&b, "# the person's recorded answers were all %s\n", person)
		fmt.Fprintf(&b, "person: %s\n", map[string]string{"allow": PersonApprove, "deny": PersonDeny}[person])
	}
	if len(g.followUps) > 0 {
		b.WriteString("follow_ups:\n")
		for _, f := range g.followUps {
			fmt.Fprintf(&b, "  - %s # line %d\n", quote(f.Payload.(*trajectory.UserPrompt).Text), f.line)
		}
	}
	if v, ok := start.Tags[harness.PlantTag]; ok {
		if pl, err := harness.ParsePlant(v); err == nil {
			fmt.Fprintf(&b, "# line %d: session_start.tags.%s\n", g.start.line, harness.PlantTag)
			fmt.Fprintf(&b, "plant: {cache_breaker: %s, from_turn: %d}\n", pl.CacheBreaker, pl.FromTurn)
		}
	}
	g.script(&b)
	g.expect(&b)
	appendWorkspace(&b, files)
	if g.reference != nil {
		fmt.Fprintf(&b, "-- %s --\n", sectionReference)
		b.Write(g.reference)
		if len(g.reference) > 0 && g.reference[len(g.reference)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	// The header is written last, once every part has said what it
	// left out.
	body := b.String()
	b.Reset()
	fmt.Fprintf(&b, "Made by retrace scenario from %s (session %s).\n", filepath.Base(file), g.start.Session)
	if g.keep != nil {
		fmt.Fprintf(&b, "It tests one property, kept with --keep %s: it passes while the\nsession shows it, and fails once it does not.\n", g.keep)
	} else {
		b.WriteString("Its expectations are what the recorded session did; narrow them with\n--keep PROPERTY to the one thing the test is about.\n")
	}
	if g.reference != nil {
		fmt.Fprintf(&b, "%s is %s whole; each run is compared with it.\n", sectionReference, filepath.Base(file))
	}
	if g.minimized != "" {
		b.WriteString(g.minimized + "\n")
	}
	for _, f := range files {
		if f.cut != "" {
			fmt.Fprintf(&b, "workspace/%s holds %s.\n", f.path, f.cut)
		}
	}
	if len(g.leftOut) > 0 {
		b.WriteString("Left out of it:\n")
		for _, l := range g.leftOut {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	b.WriteString(body)
	return []byte(b.String())
}

func (g *generator) firstRequestLine() int {
	for _, ev := range g.rec.events {
		if ev.Type() == trajectory.TypeModelRequest {
			return ev.line
		}
	}
	return 0
}

// personOf is the scripted person of the recorded answers: allow or
// deny when every answer was so, deny for mixed answers, "" for none.
func (g *generator) personOf() string {
	if len(g.answers) == 0 {
		return ""
	}
	for _, a := range g.answers[1:] {
		if a != g.answers[0] {
			g.note("the person answered some questions yes and some no; the scenario's person answers all of them no")
			return "deny"
		}
	}
	return g.answers[0]
}

// script writes the model's turns: each recorded response, in order.
// Without --keep, each turn after one that called tools expects the
// request to carry those calls' results, with their is_error as
// recorded, so that a run whose calls end differently stops there with
// the turn named.
func (g *generator) script(b *strings.Builder) {
	b.WriteString("model:\n  turns:\n")
	for i, ev := range g.turns {
		r := ev.Payload.(*trajectory.ModelResponse)
		fmt.Fprintf(b, "    # line %d%s: turn %d's model_response\n", ev.line, originOf(g, ev), i+1)
		lead := "    - "
		if g.keep == nil {
			var exp []string
			for _, c := range g.sentResults(ev) {
				exp = append(exp, fmt.Sprintf("{tool_use_id: %s, is_error: %t}", quote(c.ToolUseID), c.IsError))
			}
			if len(exp) > 0 {
				fmt.Fprintf(b, "%sexpect: {tool_results: [%s]}\n", lead, strings.Join(exp, ", "))
				lead = "      "
			}
		}
		fmt.Fprintf(b, "%scontent:", lead)
		if len(r.Content) == 0 {
			b.WriteString(" []\n")
		} else {
			b.WriteByte('\n')
		}
		cut := false
		for _, c := range r.Content {
			switch c.Type {
			case trajectory.BlockText:
				fmt.Fprintf(b, "        - text: %s\n", quote(c.Text))
			case trajectory.BlockThinking:
				fmt.Fprintf(b, "        - thinking: %s\n", quote(c.Text))
			case trajectory.BlockToolUse:
				if len(c.Input) == 0 {
					cut = true
					fmt.Fprintf(b, "        - tool_use: {id: %s, name: %s, input: {}} # its input was cut off (max_tokens) in the recording\n", quote(c.ID), quote(c.Name))
					continue
				}
				var in bytes.Buffer
				if json.Compact(&in, c.Input) != nil {
					in.Reset()
					in.WriteString("{}")
				}
				input, _ := redactor().Redact(in.Bytes())
				fmt.Fprintf(b, "        - tool_use: {id: %s, name: %s, input: %s}\n", quote(c.ID), quote(c.Name), input)
			}
		}
		switch {
		case cut:
			b.WriteString("      fault: {max_tokens_in_tool_use: true}\n")
			g.note("turn %d (line %d): a tool_use cut off by max_tokens is replayed as a cut of the input {}, not of the recorded bytes", i+1, ev.line)
		case r.StopReasonRaw == "":
			b.WriteString("      fault: {missing_stop_reason: true}\n")
		case slices.Contains(stopReasons, r.StopReasonRaw):
			fmt.Fprintf(b, "      stop_reason: %s\n", r.StopReasonRaw)
		}
		u := r.Usage
		fmt.Fprintf(b, "      usage: {input_tokens: %d, output_tokens: %d, cache_read_tokens: %d, cache_creation_tokens: %d}\n",
			u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheCreationTokens)
	}
	if last := g.turns[len(g.turns)-1].Payload.(*trajectory.ModelResponse); g.reduced && last.StopReason == trajectory.StopToolUse {
		b.WriteString("    # not recorded: a closing turn, so the reduced session ends\n")
		b.WriteString("    - content: [{text: \"Done.\"}]\n")
	}
}

// sentResults are the tool results the recorded request answered by
// resp carried in its last user message: what the scripted turn expects
// the replayed request to carry, with is_error as it was.
func (g *generator) sentResults(resp located) []trajectory.ContentBlock {
	var req *trajectory.ModelRequest
	for _, ev := range g.rec.events {
		if ev.line >= resp.line {
			break
		}
		if p, ok := ev.Payload.(*trajectory.ModelRequest); ok {
			req = p
		}
	}
	if req == nil {
		return nil
	}
	for i := len(req.NewMessages) - 1; i >= 0; i-- {
		m := req.NewMessages[i]
		if m.Role != trajectory.RoleUser {
			continue
		}
		var out []trajectory.ContentBlock
		for _, c := range m.Content {
			if c.Type == trajectory.BlockToolResult {
				out = append(out, c)
			}
		}
		return out
	}
	return nil
}

// stopReasons are the stop reasons a script may give.
var stopReasons = []string{"end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal", "model_context_window_exceeded"}

// expect writes the expectations: the kept property alone, or all that
// the session did.
func (g *generator) expect(b *strings.Builder) {
	end := g.rec.end.Payload.(*trajectory.SessionEnd)
	b.WriteString("expect:\n")
	outcome := func() {
		fmt.Fprintf(b, "  # line %d: session_end\n", g.rec.end.line)
		fmt.Fprintf(b, "  outcome: {reason: %s, exit_code: %d", end.Reason, ExitCodeOf(end.Reason))
		if g.keep == nil {
			fmt.Fprintf(b, ", turns: %d", end.Turns)
		}
		b.WriteString("}\n")
	}
	if g.keep != nil {
		if g.keep.Kind == PropOutcome {
			outcome()
			return
		}
		if g.keep.Kind == PropDivergence {
			fmt.Fprintf(b, "  # each run is compared with %s, the recording, as retrace replay compares\n", sectionReference)
		}
		if g.keep.Kind != PropDetector && g.keep.Kind != PropDivergence && !g.keep.Not {
			e := keptEvent(*g.keep)
			var lines []int
			for _, ev := range g.rec.events {
				if e.matches(ev.Event) {
					lines = append(lines, ev.line)
				}
			}
			fmt.Fprintf(b, "  # %s\n", lineList(lines))
		}
		b.WriteString(g.keep.expectYAML())
		return
	}
	outcome()
	evs := g.events()
	b.WriteString("  # The tool calls in order, with how each ended:\n")
	for _, c := range g.callLog() {
		fmt.Fprintf(b, "  #   %s\n", c)
	}
	fmt.Fprintf(b, "  events:\n    - {event: tool_call, count: %d}\n", g.calls)
	for _, e := range evs {
		b.WriteString("    - {")
		fmt.Fprintf(b, "%s: %s", e.Kind, quote(e.Value))
		if e.Source != "" {
			fmt.Fprintf(b, ", source: %s", e.Source)
		}
		if e.Tool != "" {
			fmt.Fprintf(b, ", tool: %s", quote(e.Tool))
		}
		if e.Action != "" {
			fmt.Fprintf(b, ", action: %s", e.Action)
		}
		fmt.Fprintf(b, ", count: %d} # %s\n", *e.Count.Min, lineList(e.lines))
	}
	fired := map[trajectory.DefenseName]bool{}
	for _, e := range evs {
		if e.Kind == KindDefense {
			fired[trajectory.DefenseName(e.Value)] = true
		}
	}
	start := g.start.Payload.(*trajectory.SessionStart)
	for _, d := range start.Defenses {
		if !fired[d] {
			fmt.Fprintf(b, "    - {defense_not_triggered: %s}\n", d)
		}
	}
	counts := g.detectorCounts()
	b.WriteString("  detectors:\n")
	if len(counts) > 0 {
		b.WriteString("    fire:\n")
		for _, id := range slices.Sorted(maps.Keys(counts)) {
			fmt.Fprintf(b, "      %s: %d # %s\n", id, counts[id], g.findingLines(id))
		}
	}
	b.WriteString("    no_others: true\n")
}

func (g *generator) findingLines(id string) string {
	var lines []int
	for _, f := range g.findings {
		if f.Detector == id && len(f.Evidence) > 0 {
			lines = append(lines, f.Evidence[0].Line)
		}
	}
	if len(lines) == 0 {
		return "found in the recording"
	}
	return lineList(lines)
}

// lineList says lines 3, 9 or line 3.
func lineList(lines []int) string {
	s := make([]string, len(lines))
	for i, l := range lines {
		s[i] = fmt.Sprint(l)
	}
	if len(s) == 1 {
		return "line " + s[0]
	}
	if len(s) > 8 {
		s = append(s[:8], "...")
	}
	return "lines " + strings.Join(s, ", ")
}

// quote writes s as a YAML double-quoted scalar (JSON's string syntax,
// which YAML reads), with any secret in it redacted.
func quote(s string) string {
	s, _ = redactor().RedactString(s)
	b, _ := json.Marshal(s)
	return string(b)
}

// redactor is the recorder's redactor with its built-in patterns: a
// recording is redacted already, and what a scenario adds of it (the
// snapshot's files, text and tool inputs) is redacted again, so no secret
// reaches a file meant for review and a repository.
var redactor = sync.OnceValue(func() *recorder.Redactor {
	r, err := recorder.NewRedactor(nil)
	if err != nil {
		// The built-in patterns compile; a failure here is a bug.
		panic(err)
	}
	return r
})

// configYAML writes the recorded configuration (a JSON object) as the
// scenario's config: block, keys in their recorded order.
func configYAML(raw json.RawMessage) string {
	var n yaml.Node
	if err := yaml.Unmarshal(raw, &n); err != nil {
		return fmt.Sprintf("config: %s\n", raw)
	}
	out, err := nodeYAML(&n)
	if err != nil {
		return fmt.Sprintf("config: %s\n", raw)
	}
	return out
}

// nodeYAML writes n, a config read from JSON, as the scenario's config:
// block in block style.
func nodeYAML(n *yaml.Node) (string, error) {
	blockStyle(n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return "", err
	}
	enc.Close()
	var b strings.Builder
	b.WriteString("config:\n")
	for l := range strings.SplitSeq(strings.TrimRight(buf.String(), "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String(), nil
}

// configLeaves are the paths of the recorded config's leaves, in their
// recorded order: each key whose value is not a mapping (a list is one
// leaf), such as defenses.disable. Minimization drops leaves, and a
// dropped leaf is at its default.
func (g *generator) configLeaves() []string {
	root := g.configNode()
	if root == nil {
		return nil
	}
	var out []string
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.MappingNode && len(v.Content) > 0 {
				walk(v, prefix+k.Value+".")
				continue
			}
			out = append(out, prefix+k.Value)
		}
	}
	walk(root, "")
	return out
}

// configNode is the recorded config's mapping, or nil.
func (g *generator) configNode() *yaml.Node {
	raw := g.start.Payload.(*trajectory.SessionStart).Config
	var n yaml.Node
	if len(raw) == 0 || yaml.Unmarshal(raw, &n) != nil || len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	return n.Content[0]
}

// configOf writes the config: block of the kept leaves, "" for none.
func (g *generator) configOf(kept []int) string {
	root := g.configNode()
	if root == nil {
		return ""
	}
	leaves := g.configLeaves()
	keep := map[string]bool{}
	for _, i := range kept {
		keep[leaves[i]] = true
	}
	var prune func(n *yaml.Node, prefix string) bool
	prune = func(n *yaml.Node, prefix string) bool {
		var content []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Kind == yaml.MappingNode && len(v.Content) > 0 {
				if prune(v, prefix+k.Value+".") {
					content = append(content, k, v)
				}
				continue
			}
			if keep[prefix+k.Value] {
				content = append(content, k, v)
			}
		}
		n.Content = content
		return len(content) > 0
	}
	if !prune(root, "") {
		return ""
	}
	out, err := nodeYAML(root)
	if err != nil {
		return ""
	}
	return out
}

// blockStyle clears the flow style and quotes JSON gave the nodes, so
// the config reads as a retrace.yaml does; the encoder quotes a string
// that would read as something else.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}
