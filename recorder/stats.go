package recorder

import (
	"fmt"
	"strings"
)

// Stats counts what a Recorder did and what went wrong, so that problems
// Emit could not report reach the CLI and session_end.
type Stats struct {
	// Events is the number of events written (or buffered to be written).
	Events int64
	// Bytes is the size of those events' lines, newlines included.
	Bytes int64
	// Dropped counts events emitted after Close.
	Dropped int64
	// EncodeErrors counts events that could not be encoded (including a
	// recovered panic); they took no seq number.
	EncodeErrors int64
	// WriteErrors counts events lost because a write failed. After the
	// first failure nothing more is written, so the file stays a clean
	// prefix of the session, and every later event counts here.
	WriteErrors int64
	// SyncErrors counts failed fsyncs, and a failed close of the file:
	// events written before one may be lost.
	SyncErrors int64
	// Invalid counts events that failed Event.Validate; they were written
	// anyway so that nothing is lost, and the file's reader reports them.
	Invalid int64
	// Redactions counts secrets replaced by [REDACTED:...].
	Redactions int64
	// LabelFixes counts label values replaced by "invalid_label".
	LabelFixes int64
	// FirstError is the first encode, write, sync or closed error.
	FirstError error
	// FirstInvalid is the validation error of the first invalid event.
	FirstInvalid error
}

// Problems returns the number of problems that may have cost events: encode,
// write and sync errors and events dropped after Close. It is what
// session_end's recorder_errors holds. Invalid events and label fixes are
// not counted: those events are in the file.
func (s Stats) Problems() int {
	return int(s.EncodeErrors + s.WriteErrors + s.SyncErrors + s.Dropped)
}

// String summarises the stats on one line for the CLI, for example
// "recorded 120 events (48 KiB); 2 secrets redacted; 3 events lost to write
// errors: recorder: write runs/x.jsonl: no space left on device".
func (s Stats) String() string {
	parts := []string{fmt.Sprintf("recorded %s (%s)", plural(s.Events, "event"), size(s.Bytes))}
	if s.Redactions > 0 {
		parts = append(parts, plural(s.Redactions, "secret")+" redacted")
	}
	if s.LabelFixes > 0 {
		parts = append(parts, plural(s.LabelFixes, "label")+" replaced by "+invalidLabel)
	}
	if s.Invalid > 0 {
		msg := plural(s.Invalid, "invalid event") + " written"
		if s.FirstInvalid != nil {
			msg += " (first: " + s.FirstInvalid.Error() + ")"
		}
		parts = append(parts, msg)
	}
	var losses []string
	if s.EncodeErrors > 0 {
		losses = append(losses, plural(s.EncodeErrors, "event")+" not encodable")
	}
	if s.WriteErrors > 0 {
		losses = append(losses, plural(s.WriteErrors, "event")+" lost to write errors")
	}
	if s.SyncErrors > 0 {
		losses = append(losses, plural(s.SyncErrors, "failed fsync"))
	}
	if s.Dropped > 0 {
		losses = append(losses, plural(s.Dropped, "event")+" dropped after close")
	}
	if len(losses) > 0 {
		msg := strings.Join(losses, ", ")
		if s.FirstError != nil {
			msg += ": " + s.FirstError.Error()
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}

func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func size(b int64) string {
	switch {
	case b < 1<<10:
		return fmt.Sprintf("%d B", b)
	case b < 1<<20:
		return fmt.Sprintf("%d KiB", (b+1<<9)>>10)
	default:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
}
