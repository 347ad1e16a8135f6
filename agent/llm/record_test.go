package llm

import (
	"slices"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

func text(role trajectory.Role, s string) trajectory.Message {
	return trajectory.Message{Role: role, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: s}}}
}

func TestRequestEventsCarryOnlyTheNewMessagesAndHashEveryPart(t *testing.T) {
	first := Request{System: "sys", Tools: []ToolDef{{Name: "read"}, {Name: "bash"}},
		Messages: []trajectory.Message{text(trajectory.RoleUser, "hi")}}
	second := first
	second.Messages = append(append([]trajectory.Message{}, first.Messages...), text(trajectory.RoleAssistant, "hello"), text(trajectory.RoleUser, "more"))

	var conv trajectory.Conversation
	e1 := RequestEvent(first, nil, &conv, 100, false)
	e2 := RequestEvent(second, &first, &conv, 200, true)
	if len(e1.NewMessages) != 1 || e1.System != "sys" {
		t.Fatalf("first request event %+v: want its one message and the system prompt", e1)
	}
	if len(e2.NewMessages) != 2 || e2.System != "" || e2.MessagesKept != 1 || len(e2.MessageHashes) != 2 ||
		e2.PrefixHash != trajectory.PrefixHashOf(append(slices.Clone(e1.MessageHashes), e2.MessageHashes...)) {
		t.Fatalf("second request event %+v: want the first message kept, the two added ones with their hashes, the prefix hash of all three, no repeated system", e2)
	}
	reordered := second
	reordered.Tools = []ToolDef{{Name: "bash"}, {Name: "read"}}
	if RequestEvent(reordered, &second, nil, 0, false).ToolsHash == e2.ToolsHash {
		t.Fatal("reordering the tools must change the tools hash: it breaks the prompt cache")
	}
	if err := trajectory.NewEvent("s", 2, time.Now(), 1, e2).Validate(); err != nil {
		t.Fatalf("the event is not valid: %v", err)
	}
	if err := trajectory.NewEvent("s", 3, time.Now(), 1, ResponseEvent(Response{StopReason: trajectory.StopEndTurn})).Validate(); err != nil {
		t.Fatalf("an empty response event is not valid: %v", err)
	}
}
