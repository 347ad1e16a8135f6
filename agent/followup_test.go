package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// prompts answers NextPrompt with each of ps in turn, then says there are
// no more.
func prompts(ps ...string) func(context.Context) (string, bool) {
	return func(context.Context) (string, bool) {
		if len(ps) == 0 {
			return "", false
		}
		p := ps[0]
		ps = ps[1:]
		return p, true
	}
}

func TestAFollowUpPromptContinuesTheSameSessionAndIsMarked(t *testing.T) {
	r := runScript(t, "followups", runOpts{verify: true, cfg: func(c *Config) {
		c.Prompt = "Read README.md"
		c.NextPrompt = prompts("Now read a.txt")
	}})
	ups := payloads[*trajectory.UserPrompt](r.events)
	if len(ups) != 1 || ups[0].Text != "Now read a.txt" || ups[0].PromptIndex != 1 {
		t.Fatalf("user_prompt events %+v", ups)
	}
	if end := sessionEnd(t, r.events); end.Reason != trajectory.EndTurn || end.Turns != 4 || end.ToolCalls != 2 {
		t.Errorf("session_end %+v", end)
	}
	if n := len(payloads[*trajectory.SessionStart](r.events)); n != 1 {
		t.Errorf("%d session_start events", n)
	}
	// The follow-up's request holds the whole first exchange.
	full, err := trajectory.Full(r.events)
	if err != nil {
		t.Fatal(err)
	}
	var lens []int
	for i, e := range r.events {
		if _, ok := e.Payload.(*trajectory.ModelRequest); ok {
			lens = append(lens, len(full[i]))
		}
	}
	if len(lens) < 3 || lens[2] != 5 {
		t.Errorf("the requests hold %v messages, want the follow-up's (the third) to hold 5", lens)
	}
}

func TestMaxTurnsBoundsEachPromptOfAnInteractiveSession(t *testing.T) {
	r := runScript(t, "followups", runOpts{verify: true, cfg: func(c *Config) {
		c.Prompt = "Read README.md"
		c.Limits.MaxTurns = 2
		c.NextPrompt = prompts("Now read a.txt")
	}})
	if end := sessionEnd(t, r.events); end.Reason != trajectory.EndTurn || end.Turns != 4 {
		t.Errorf("session_end %+v: two turns per prompt fit", end)
	}
}

func TestWithoutAFollowUpTheSessionEndsAsBefore(t *testing.T) {
	r := runScript(t, "clean", runOpts{verify: true, cfg: func(c *Config) { c.NextPrompt = prompts() }})
	if ups := payloads[*trajectory.UserPrompt](r.events); len(ups) != 0 {
		t.Errorf("user_prompt events %+v", ups)
	}
	if end := sessionEnd(t, r.events); end.Reason != trajectory.EndTurn {
		t.Errorf("session_end %+v", end)
	}
}

func TestAContinuedSessionCarriesTheRecordedConversationOn(t *testing.T) {
	first := runScript(t, "clean", runOpts{verify: true})
	history, err := ConversationOf(first.events)
	if err != nil {
		t.Fatal(err)
	}
	// The five messages of the last request, then the final reply.
	if len(history) != 6 || history[5].Role != trajectory.RoleAssistant || !strings.Contains(history[5].Content[0].Text, "NOTES.md") {
		t.Fatalf("history %+v", history)
	}
	session := first.events[0].Session
	r := runScript(t, "continued", runOpts{verify: true, cfg: func(c *Config) {
		c.History, c.Continues, c.Prompt = history, session, "Now read a.txt"
	}})
	if start := payloads[*trajectory.SessionStart](r.events)[0]; start.Continues != session {
		t.Errorf("session_start.continues %q, want %q", start.Continues, session)
	}
	ups := payloads[*trajectory.UserPrompt](r.events)
	if len(ups) != 1 || ups[0].PromptIndex != 0 || ups[0].Text != "Now read a.txt" {
		t.Errorf("user_prompt events %+v", ups)
	}
	req := payloads[*trajectory.ModelRequest](r.events)[0]
	if len(req.NewMessages) != 7 {
		t.Errorf("the first request carries %d messages, want the 6 recorded and the prompt", len(req.NewMessages))
	}
}

func TestConversationOfAnswersEveryToolUseItKeepsAndDropsTheUnanswered(t *testing.T) {
	r := runScript(t, "max_turns", runOpts{cfg: func(c *Config) { c.Limits.MaxTurns = 1 }})
	history, err := ConversationOf(r.events)
	if err != nil {
		t.Fatal(err)
	}
	uses, answers := map[string]bool{}, map[string]bool{}
	for _, m := range history {
		for _, b := range m.Content {
			switch b.Type {
			case trajectory.BlockToolUse:
				uses[b.ID] = true
			case trajectory.BlockToolResult:
				answers[b.ToolUseID] = true
			}
		}
	}
	for id := range uses {
		if !answers[id] {
			t.Errorf("tool_use %s has no tool_result in the rebuilt history", id)
		}
	}
	if _, err := ConversationOf(r.events[:1]); err == nil {
		t.Error("a recording without a request was continued")
	}
}
