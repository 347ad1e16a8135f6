package compare

import (
	"fmt"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// requestSession builds a session of the given requests, one per turn.
func requestSession(reqs ...*trajectory.ModelRequest) []trajectory.Event {
	var evs []trajectory.Event
	for i, r := range reqs {
		evs = append(evs, trajectory.Event{Turn: i + 1, Payload: r})
	}
	return evs
}

func textMsg(role trajectory.Role, text string) trajectory.Message {
	return trajectory.Message{Role: role, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: text}}}
}

// request builds a request whose messages are all new, hashed by content.
func request(system string, tools []string, msgs ...trajectory.Message) *trajectory.ModelRequest {
	r := &trajectory.ModelRequest{SystemHash: trajectory.Hash([]byte(system)), System: system,
		ToolsHash: trajectory.Hash([]byte(strings.Join(tools, ","))), ToolNames: tools, NewMessages: msgs}
	for _, m := range msgs {
		r.MessageHashes = append(r.MessageHashes, trajectory.Hash([]byte(fmt.Sprint(m))))
	}
	return r
}

func TestRequestPrefixCacheBreakRule(t *testing.T) {
	tools := []string{"read", "bash"}
	u1, a1, u2 := textMsg(trajectory.RoleUser, "hi"), textMsg(trajectory.RoleAssistant, "hello"), textMsg(trajectory.RoleUser, "run it")
	base := func() *trajectory.ModelRequest { return request("sys", tools, u1, a1, u2) }
	tests := []struct {
		name   string
		rep    *trajectory.ModelRequest
		field  string
		breaks bool
	}{
		{"an appended message does not break the cache", request("sys", tools, u1, a1, u2, textMsg(trajectory.RoleAssistant, "more")), "messages", false},
		{"a changed system prompt breaks the cache", request("other sys", tools, u1, a1, u2), "system", true},
		{"a changed tool order breaks the cache", request("sys", []string{"bash", "read"}, u1, a1, u2), "tool_names", true},
		{"a changed earlier message breaks the cache", request("sys", tools, textMsg(trajectory.RoleUser, "bye"), a1, u2), "messages[0]", true},
		{"a changed last message does not break the cache", request("sys", tools, u1, a1, textMsg(trajectory.RoleUser, "stop")), "messages[2]", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Sessions(requestSession(base()), requestSession(tc.rep), Options{})
			if len(r.Divergences) != 1 {
				t.Fatalf("want one divergence, got %+v", r.Divergences)
			}
			d := r.Divergences[0]
			if d.Class != ClassRequestPrefix || d.Field != tc.field {
				t.Fatalf("got %s on %q, want request_prefix_changed on %q", d.Class, d.Field, tc.field)
			}
			if got := strings.Contains(d.Detail, "breaks the prompt cache"); got != tc.breaks {
				t.Errorf("detail %q: breaks %v, want %v", d.Detail, got, tc.breaks)
			}
		})
	}
}

func TestLaterRequestsAreSaidOnceAndToolSideIsStillCompared(t *testing.T) {
	tools := []string{"read"}
	var rec, rep []trajectory.Event
	for turn := 1; turn <= 5; turn++ {
		msgs := []trajectory.Message{textMsg(trajectory.RoleUser, fmt.Sprint("turn ", turn))}
		rec = append(rec, trajectory.Event{Turn: turn, Payload: request("sys", tools, msgs...)})
		rep = append(rep, trajectory.Event{Turn: turn, Payload: request("new sys", tools, msgs...)})
		id := fmt.Sprintf("toolu_%02d", turn)
		for _, side := range []*[]trajectory.Event{&rec, &rep} {
			text := "same"
			if side == &rep && turn == 4 {
				text = "changed"
			}
			*side = append(*side,
				trajectory.Event{Turn: turn, Payload: &trajectory.ToolCall{ToolRef: trajectory.ToolRef{ToolUseID: id, Tool: "read"}, Input: []byte(`{}`)}},
				trajectory.Event{Turn: turn, Payload: &trajectory.ToolResult{ToolRef: trajectory.ToolRef{ToolUseID: id, Tool: "read"}, Text: text}})
		}
	}
	r := Sessions(rec, rep, Options{})
	var prefix []Divergence
	for _, d := range r.Divergences {
		if d.Class == ClassRequestPrefix {
			prefix = append(prefix, d)
		}
	}
	if len(prefix) != 2 || prefix[0].Field != "system" || prefix[1].Detail != DetailLaterRequests {
		t.Fatalf("want the system change and one later-requests note, got %+v", prefix)
	}
	if r.Counts[ClassToolOutput] != 1 {
		t.Fatalf("a tool output change after the request change must still be reported: %+v", r.Divergences)
	}
	last := r.Divergences[len(r.Divergences)-1]
	if last.Class != ClassToolOutput || last.Turn != 4 || last.ToolUseID != "toolu_04" {
		t.Errorf("divergences are out of order: %+v", r.Divergences)
	}
}
