package mockllm

import (
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

func TestTheRequestCheckerNamesTheFirstFieldThatDiffersFromTheRecording(t *testing.T) {
	msg := func(role trajectory.Role, s string) trajectory.Message {
		return trajectory.Message{Role: role, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: s}}}
	}
	first := llm.Request{System: "sys", Tools: []llm.ToolDef{{Name: "read"}}, Messages: []trajectory.Message{msg(trajectory.RoleUser, "hi")}}
	second := first
	second.Messages = []trajectory.Message{msg(trajectory.RoleUser, "hi"), msg(trajectory.RoleAssistant, "hello"), msg(trajectory.RoleUser, "go on")}
	var conv trajectory.Conversation
	events := []trajectory.Event{
		{Payload: llm.RequestEvent(first, nil, &conv, 0, false)},
		{Payload: llm.RequestEvent(second, &first, &conv, 0, false)},
	}

	c := NewRequestChecker(events)
	if n, diff := c.Check(&first); n != 1 || diff != "" {
		t.Fatalf("the recorded first request: %d %q, want a match", n, diff)
	}
	changed := second
	changed.Messages = []trajectory.Message{msg(trajectory.RoleUser, "hi"), msg(trajectory.RoleAssistant, "HELLO"), msg(trajectory.RoleUser, "go on")}
	if n, diff := c.Check(&changed); n != 2 || !strings.HasPrefix(diff, "messages[1]") || !strings.Contains(diff, "HELLO") {
		t.Fatalf("a changed assistant message: %d %q, want messages[1]", n, diff)
	}
	if _, diff := c.Check(&second); diff != "the recording has only 2 requests" {
		t.Fatalf("a third request: %q", diff)
	}

	c = NewRequestChecker(events)
	other := first
	other.Tools = []llm.ToolDef{{Name: "bash"}}
	if _, diff := c.Check(&other); !strings.HasPrefix(diff, "tool_names") || !strings.Contains(diff, "read → bash") {
		t.Fatalf("changed tools: %q", diff)
	}
}
