package otlp

import (
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// ev makes the seq-th event of session s1, one millisecond after the one before.
func ev(seq int64, p trajectory.Payload) trajectory.Event {
	return trajectory.Event{V: trajectory.Version, Session: "s1", Seq: seq, TS: t0.Add(time.Duration(seq) * time.Millisecond), Payload: p}
}
