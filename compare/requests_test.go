package compare

import (
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

func TestRequestsComparesSentRequestsOneAtATimeAfterNormalisation(t *testing.T) {
	tools := []string{"read", "bash"}
	u1 := textMsg(trajectory.RoleUser, "what time is it?")
	a1 := textMsg(trajectory.RoleAssistant, "Let me check.")
	said := func(when string) trajectory.Message {
		return textMsg(trajectory.RoleUser, "the clock says "+when)
	}
	recorded := requestSession(request("sys", tools, u1), request("sys", tools, u1, a1, said("Tue Dec  1 20:05:21 UTC 2026")))
	tests := []struct {
		name  string
		i     int
		sent  *trajectory.ModelRequest
		same  bool
		field string
		want  string
	}{
		{"the recorded first request matches", 0, request("sys", tools, u1), true, "", ""},
		{"a message that differs only by a date matches", 1, request("sys", tools, u1, a1, said("Wed Dec  2 08:00:00 UTC 2026")), true, "", ""},
		{"a changed message is named with what changed", 1, request("sys", tools, u1, a1, said("noon")), false, "messages[2]", `says noon`},
		{"changed tools break the prompt cache", 0, request("sys", []string{"bash", "read"}, u1), false, "tool_names", "breaks the prompt cache"},
		{"a request past the recording is extra", 2, request("sys", tools, u1), false, "model_request", "only 2 requests"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRequests(recorded, Options{})
			if r.Len() != 2 {
				t.Fatalf("Len %d", r.Len())
			}
			d, same := r.Compare(tc.i, tc.sent)
			if same != tc.same {
				t.Fatalf("same %v, want %v: %+v", same, tc.same, d)
			}
			if !same && (d.Field != tc.field || !strings.Contains(d.Summary, tc.want)) {
				t.Fatalf("got field %q summary %q, want %q containing %q", d.Field, d.Summary, tc.field, tc.want)
			}
		})
	}
}
