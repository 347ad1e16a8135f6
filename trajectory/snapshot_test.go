package trajectory

import (
	"strings"
	"testing"
)

func TestTheWorkspaceSnapshotBelongsToTheSessionsStart(t *testing.T) {
	snap := func() *WorkspaceSnapshot {
		return &WorkspaceSnapshot{Manifest: BlobRef([]byte("m")), Files: 1, Bytes: 10}
	}
	cases := []struct {
		name string
		// edit changes the payloads of a one-turn sample session, whose
		// second event is its workspace_snapshot.
		edit func([]Payload) []Payload
		want string // a violation message, or "" for a valid session
	}{
		{"a snapshot right after session_start is valid", func(ps []Payload) []Payload { return ps }, ""},
		{"a session without a snapshot is valid", func(ps []Payload) []Payload { return append(ps[:1:1], ps[2:]...) }, ""},
		{"a snapshot after the first model_request is a violation", func(ps []Payload) []Payload {
			return append(append(append(ps[:1:1], ps[2]), snap()), ps[3:]...)
		}, "workspace_snapshot after a model_request"},
		{"a second snapshot is a violation", func(ps []Payload) []Payload {
			return append(append(ps[:2:2], snap()), ps[2:]...)
		}, "second workspace snapshot"},
		{"a snapshot event when session_start already names one is a violation", func(ps []Payload) []Payload {
			start := *ps[0].(*SessionStart)
			start.WorkspaceSnapshot = BlobRef([]byte("earlier"))
			return append([]Payload{&start}, ps[1:]...)
		}, "second workspace snapshot"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sample := sampleSession("20261130-090000.000-0000abcd", 1)
			var ps []Payload
			for _, ev := range sample {
				ps = append(ps, ev.Payload)
			}
			if sample[1].Type() != TypeWorkspaceSnapshot {
				t.Fatalf("the sample's second event is %s, want workspace_snapshot", sample[1].Type())
			}
			wantViolation(t, sample[0], c.edit(ps), c.want)
		})
	}
}

// wantViolation checks payloads as one session, numbered from seq 1 with
// first's session and time, and fails unless the checker reports a
// violation containing want, or none when want is empty. The first payload
// is turn 0, as session_start and workspace snapshots are; the rest turn 1.
func wantViolation(t *testing.T, first Event, payloads []Payload, want string) {
	t.Helper()
	chk := NewChecker("session.jsonl")
	for i, p := range payloads {
		turn := 1
		if _, ok := p.(*WorkspaceSnapshot); ok || i == 0 {
			turn = 0
		}
		ev := NewEvent(first.Session, int64(i+1), first.TS, turn, p)
		if err := ev.Validate(); err != nil {
			t.Fatalf("event %d (%s): %v", i+1, p.EventType(), err)
		}
		chk.Add(i+1, ev)
	}
	var msgs []string
	for _, v := range chk.Finish() {
		msgs = append(msgs, v.Error())
	}
	got := strings.Join(msgs, "\n")
	switch {
	case want == "" && got != "":
		t.Fatalf("violations:\n%s\nwant none", got)
	case want != "" && !strings.Contains(got, want):
		t.Fatalf("violations:\n%s\nwant one saying %q", got, want)
	}
}
