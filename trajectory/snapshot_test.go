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
			chk := NewChecker("session.jsonl")
			for i, p := range c.edit(ps) {
				turn := 1
				if i == 0 {
					turn = 0
				}
				if _, ok := p.(*WorkspaceSnapshot); ok {
					turn = 0
				}
				ev := NewEvent(sample[0].Session, int64(i+1), sample[0].TS, turn, p)
				if err := ev.Validate(); err != nil {
					t.Fatalf("event %d: %v", i+1, err)
				}
				chk.Add(i+1, ev)
			}
			var msgs []string
			for _, v := range chk.Finish() {
				msgs = append(msgs, v.Error())
			}
			got := strings.Join(msgs, "\n")
			switch {
			case c.want == "" && got != "":
				t.Fatalf("violations:\n%s\nwant none", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Fatalf("violations:\n%s\nwant one saying %q", got, c.want)
			}
		})
	}
}
