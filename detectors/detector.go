package detectors

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/metrics"
	"github.com/retrace-dev/retrace/trajectory"
)

// ErrUnknownDetector is wrapped by Select's error for an id no detector has.
var ErrUnknownDetector = errors.New("unknown detector")

// Info documents a detector; retrace detect --list prints it.
type Info struct {
	// ID is the stable snake_case id findings carry and --only takes.
	ID string `json:"id"`
	// Severity is the findings' default severity.
	Severity Severity `json:"severity"`
	// Title is a one-line name of the failure mode.
	Title string `json:"title"`
	// About says what a finding means: what was seen, and why it is wrong.
	About string `json:"about"`
	// NextStep says what to change when it fires.
	NextStep string `json:"next_step"`
	// Corpus is set for detectors that judge a corpus, not one session.
	Corpus bool `json:"corpus,omitempty"`
	// Thresholds are the numbers the detector compares against, with
	// their defaults; retrace.yaml's detectors: section may set them.
	Thresholds []Threshold `json:"thresholds,omitempty"`
}

// Session is one session's events as a Go detector sees them: every event
// of one session id in one file, in seq order, each with its line.
type Session struct {
	// ID is the session id; File the trajectory file it was read from.
	ID, File string
	// Events are the session's events in seq order, of the types the
	// running Go detectors read (the others are not decoded).
	Events []Located
	// memo keeps what the detectors derive from the events more than once.
	memo memo
}

// Located is an event and the line of the file it was read from.
type Located struct {
	trajectory.Event
	Line int
}

// Evidence returns the evidence pointing at e.
func (s *Session) Evidence(e Located) Evidence {
	return Evidence{File: s.File, Line: e.Line, Seq: e.Seq, Type: string(e.Type())}
}

// Detector finds one failure mode. It is either Go over each session's
// event stream (Session returns findings, Corpus nothing) or SQL over the
// metrics views (Corpus returns findings, Session nothing); the runner
// calls both, so one registry and one findings type serve either kind.
type Detector interface {
	// Info documents the detector.
	Info() Info
	// Session looks at one session's events, with the detector's
	// thresholds for this run.
	Session(s *Session, p Params) []Finding
	// Corpus looks at everything loaded into db.
	Corpus(ctx context.Context, db *metrics.DB, p Params) ([]Finding, error)
}

// goDetector is a Detector written in Go over one session's events.
type goDetector struct {
	info  Info
	check func(d *goDetector, s *Session, p Params) []Finding
	// reads lists the event types check looks at; the runner decodes only
	// the types some detector reads (nil means every type).
	reads []trajectory.EventType
}

func (d *goDetector) Info() Info                             { return d.info }
func (d *goDetector) Session(s *Session, p Params) []Finding { return d.check(d, s, p) }
func (d *goDetector) Corpus(context.Context, *metrics.DB, Params) ([]Finding, error) {
	return nil, nil
}

// finding starts a finding of d about session s, pointing at ev.
func (d *goDetector) finding(s *Session, msg string, ev ...Located) Finding {
	f := Finding{Detector: d.info.ID, Severity: d.info.Severity, Title: d.info.Title,
		Session: s.ID, Message: msg, NextStep: d.info.NextStep}
	for i, e := range ev {
		if i == 0 {
			f.Turn = e.Turn
		}
		f.Evidence = append(f.Evidence, s.Evidence(e))
	}
	return f
}

//go:embed sql/*.sql
var sqlFiles embed.FS

// sqlDetector is a Detector written as an embedded SQL query over the
// metrics views. The query returns one row per finding with the columns
// session, turn, tool_use_id, message and evidence (a JSON list of
// {file, line, seq, type}), and optionally severity and sessions (a JSON
// list) to override the default. ${name} in the query is the detector's
// threshold name.
type sqlDetector struct {
	info Info
	file string
}

func (d *sqlDetector) Info() Info                         { return d.info }
func (d *sqlDetector) Session(*Session, Params) []Finding { return nil }

// SQL returns the detector's query.
func (d *sqlDetector) SQL() (string, error) {
	b, err := sqlFiles.ReadFile("sql/" + d.file)
	if err != nil {
		return "", fmt.Errorf("detector %s: %w", d.info.ID, err)
	}
	return string(b), nil
}

func (d *sqlDetector) Corpus(ctx context.Context, db *metrics.DB, p Params) ([]Finding, error) {
	q, err := d.SQL()
	if err != nil {
		return nil, err
	}
	if q, err = p.expand(q); err != nil {
		return nil, err
	}
	t, err := db.Query(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("detector %s: %w", d.info.ID, err)
	}
	col := map[string]int{}
	for i, c := range t.Columns {
		col[c] = i
	}
	for _, need := range []string{"session", "turn", "tool_use_id", "message", "evidence"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("detector %s: the query returns no %s column", d.info.ID, need)
		}
	}
	var out []Finding
	for _, r := range t.Rows {
		f := Finding{Detector: d.info.ID, Severity: d.info.Severity, Title: d.info.Title,
			Session: text(r[col["session"]]), ToolUseID: text(r[col["tool_use_id"]]),
			Message: text(r[col["message"]]), NextStep: d.info.NextStep}
		if n, ok := r[col["turn"]].(int32); ok {
			f.Turn = int(n)
		} else if n, ok := r[col["turn"]].(int64); ok {
			f.Turn = int(n)
		}
		if i, ok := col["severity"]; ok && r[i] != nil {
			if f.Severity, err = ParseSeverity(text(r[i])); err != nil {
				return nil, fmt.Errorf("detector %s: %w", d.info.ID, err)
			}
		}
		if f.Evidence, err = parseEvidence(r[col["evidence"]]); err != nil {
			return nil, fmt.Errorf("detector %s: %w", d.info.ID, err)
		}
		if i, ok := col["sessions"]; ok && r[i] != nil {
			ss, err := parseStrings(r[i])
			if err != nil {
				return nil, fmt.Errorf("detector %s: %w", d.info.ID, err)
			}
			f.Sessions = ss
		}
		out = append(out, f)
	}
	return out, nil
}

// text renders a scanned SQL value as a string; NULL is "".
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	}
	return fmt.Sprint(v)
}

// Catalog returns every detector, in the order --list shows them.
func Catalog() []Detector { return slices.Clone(catalog) }

// Select returns the detectors of the catalog named by only (all when
// empty) minus those named by skip. An id no detector has is an error
// wrapping ErrUnknownDetector.
func Select(only, skip []string) ([]Detector, error) {
	known := map[string]bool{}
	var ids []string
	for _, d := range catalog {
		known[d.Info().ID] = true
		ids = append(ids, d.Info().ID)
	}
	for _, id := range append(slices.Clone(only), skip...) {
		if !known[id] {
			return nil, fmt.Errorf("%w %q; the detectors are: %s", ErrUnknownDetector, id, strings.Join(ids, ", "))
		}
	}
	var out []Detector
	for _, d := range catalog {
		id := d.Info().ID
		if (len(only) == 0 || slices.Contains(only, id)) && !slices.Contains(skip, id) {
			out = append(out, d)
		}
	}
	return out, nil
}
