package detectors

import (
	"encoding/json"
	"fmt"
)

// Severity says how bad a finding is. The set is closed; the order of the
// constants is the order of badness.
type Severity string

// The severities.
const (
	// SeverityInfo is worth knowing; nothing is wrong for certain.
	SeverityInfo Severity = "info"
	// SeverityWarning is likely wrong, or wrong in a way that costs time.
	SeverityWarning Severity = "warning"
	// SeverityError is wrong: a broken invariant or a run that only looks green.
	SeverityError Severity = "error"
)

// Rank orders severities: info 1, warning 2, error 3, anything else 0.
func (s Severity) Rank() int {
	switch s {
	case SeverityInfo:
		return 1
	case SeverityWarning:
		return 2
	case SeverityError:
		return 3
	}
	return 0
}

// Valid reports whether s is one of the severities.
func (s Severity) Valid() bool { return s.Rank() > 0 }

// ParseSeverity reads a severity by name.
func ParseSeverity(s string) (Severity, error) {
	if v := Severity(s); v.Valid() {
		return v, nil
	}
	return "", fmt.Errorf("unknown severity %q: use error, warning or info", s)
}

// Evidence points at one event that proves a finding: the trajectory file,
// its line (from 1) and the event's seq and type, and, for an event
// imported from a client's transcript, the client's own file:line it came
// from (Origin), so the user can open the transcript they know.
type Evidence struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
	// Origin is "file:line" of the client's transcript (session_start's
	// origin_file and the event's origin_line); absent for an event
	// retrace recorded itself.
	Origin string `json:"origin,omitempty"`
}

// Finding is one thing a detector found wrong, with the events that prove it.
type Finding struct {
	// Detector is the stable snake_case id of the detector.
	Detector string `json:"detector"`
	// Severity is the detector's, or a stronger or weaker one the
	// detector chose for this case (a lost call in a crashed session).
	Severity Severity `json:"severity"`
	// Title is the detector's one-line title.
	Title string `json:"title"`
	// Session is the session the finding is about; for a corpus-level
	// finding, the first of Sessions.
	Session string `json:"session"`
	// Turn is the model turn of the first evidence.
	Turn int `json:"turn"`
	// ToolUseID names the call the finding is about, when there is one.
	ToolUseID string `json:"tool_use_id,omitempty"`
	// Evidence are the events that prove it, first the one that shows it best.
	Evidence []Evidence `json:"evidence"`
	// Message says what was seen, with the numbers and the threshold.
	Message string `json:"message"`
	// NextStep says what to change, and which seed section explains it.
	NextStep string `json:"next_step"`
	// Sessions are, for a corpus-level finding, the sessions that count.
	Sessions []string `json:"sessions,omitempty"`
}

// File returns the file of the first evidence, or "".
func (f Finding) File() string {
	if len(f.Evidence) == 0 {
		return ""
	}
	return f.Evidence[0].File
}

// Line returns the line of the first evidence, or 0.
func (f Finding) Line() int {
	if len(f.Evidence) == 0 {
		return 0
	}
	return f.Evidence[0].Line
}

// parseEvidence reads the evidence list an SQL detector builds with
// to_json: [{"file":..,"line":..,"seq":..,"type":..}, ...].
func parseEvidence(v any) ([]Evidence, error) {
	var raw []byte
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		raw = []byte(v)
	case []byte:
		raw = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	var ev []Evidence
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("evidence %s: %w", raw, err)
	}
	return ev, nil
}
