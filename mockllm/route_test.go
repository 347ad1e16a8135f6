package mockllm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

func TestConversationScriptsWithMistakesAreRefusedAtTheirLine(t *testing.T) {
	cases := []struct {
		name string
		yml  string
		want string
	}{
		{"turns and conversations together are ambiguous",
			"turns: [{content: [{text: a}]}]\nconversations: [{match: {header: a}, turns: [{content: [{text: a}]}]}]\n",
			"test.yaml:2: the script has both `turns:` and `conversations:`"},
		{"an empty conversations list has nothing to serve",
			"conversations: []\n", "test.yaml:1: `conversations` must be a list with at least one conversation"},
		{"a conversation without a match would take requests it cannot tell apart",
			"conversations:\n  - name: main\n    turns: [{content: [{text: a}]}]\n", "test.yaml:2: conversation main needs a `match:`"},
		{"a match with no key matches nothing in particular",
			"conversations:\n  - match: {}\n    turns: [{content: [{text: a}]}]\n", "test.yaml:2: conversation 1 match needs at least one of header"},
		{"an empty match text would match every request",
			"conversations:\n  - match: {system_contains: \"\"}\n    turns: [{content: [{text: a}]}]\n", "test.yaml:2: conversation 1 match.system_contains must not be empty"},
		{"a misspelt match key is an error, not a dropped check",
			"conversations:\n  - match: {headr: a}\n    turns: [{content: [{text: a}]}]\n", `test.yaml:2: unknown key "headr" in conversation 1 match`},
		{"two conversations with the same name are refused",
			"conversations:\n  - {name: a, match: {header: x}, turns: [{content: [{text: a}]}]}\n  - {name: a, match: {header: y}, turns: [{content: [{text: a}]}]}\n",
			`test.yaml:3: conversation 2: the name "a" is already used by the conversation at line 2`},
		{"a conversation that matches exactly as an earlier one would never be served",
			"conversations:\n  - {match: {header: x}, turns: [{content: [{text: a}]}]}\n  - {match: {header: x}, turns: [{content: [{text: b}]}]}\n",
			"test.yaml:3: conversation 2 matches exactly as the conversation at line 2"},
		{"a conversation without turns has nothing to serve",
			"conversations:\n  - {name: sub, match: {header: x}}\n", "test.yaml:2: conversation sub: `turns` must be a list"},
		{"a bad turn inside a conversation names the conversation and its line",
			"conversations:\n  - name: sub\n    match: {header: x}\n    turns:\n      - stop_reason: finished\n",
			`test.yaml:5: conversation sub turn 1: stop_reason "finished" is not one the API sends`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScript([]byte(tc.yml), "test.yaml")
			var se *ScriptError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a *ScriptError containing %q", err, tc.want)
			}
		})
	}
	t.Run("a conversations script refuses a route of its own", func(t *testing.T) {
		_, err := ParseScriptWith([]byte("conversations: [{match: {header: a}, turns: [{content: [{text: a}]}]}]\n"), "test.yaml", ScriptOptions{Route: RouteHeader})
		if err == nil || !strings.Contains(err.Error(), "drop --route header") {
			t.Fatalf("got %v, want an error telling to drop --route", err)
		}
	})
}

func TestDefaultToolUseIDsDifferBetweenConversations(t *testing.T) {
	s := mustParse(t, "conversations:\n  - {match: {header: a}, turns: [{content: [{tool_use: {name: read}}]}]}\n  - {match: {header: b}, turns: [{content: [{tool_use: {name: read}}]}]}\n")
	a, errA := s.Next(WithConversation(context.Background(), "a"), &llm.Request{})
	b, errB := s.Next(WithConversation(context.Background(), "b"), &llm.Request{})
	if errA != nil || errB != nil || a.Response.Content[0].ID == b.Response.Content[0].ID {
		t.Fatalf("ids %q and %q (%v, %v), want two different ids", a.Response.Content[0].ID, b.Response.Content[0].ID, errA, errB)
	}
}

func TestARequestThatMatchesNoConversationGetsA400AndIsReported(t *testing.T) {
	script := loadScript(t, subagentScript)
	srv, url := startServer(t, script)
	c := anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey("k"), option.WithMaxRetries(2))
	_, err := c.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "m", MaxTokens: 10,
		System:   []anthropic.TextBlockParam{{Text: "You are some other agent."}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || !strings.Contains(err.Error(), "matches no conversation") ||
		!strings.Contains(err.Error(), `main: system_contains \"official CLI for Claude\"`) {
		t.Fatalf("got %v, want a 400 naming the conversations' matchers", err)
	}
	if n := srv.Stats().Requests; n != 1 {
		t.Fatalf("%d attempts, want 1: a request no conversation takes is not retried", n)
	}
	if err := script.Verify(); !errors.Is(err, ErrNoConversation) {
		t.Fatalf("Verify: %v, want ErrNoConversation among the problems", err)
	}
}

func TestARoutedTurnsScriptGivesEachConversationItsOwnPassOverTheTurns(t *testing.T) {
	yml := "turns:\n  - content: [{text: first}]\n  - content: [{text: second}]\n"
	cases := []struct {
		name  string
		route Route
		ctx   func(i int) context.Context
		req   func(i int) *llm.Request
	}{
		{"by header, each X-Retrace-Conversation value plays the turns from the first", RouteHeader,
			func(i int) context.Context { return WithConversation(context.Background(), string(rune('a'+i))) },
			func(int) *llm.Request { return &llm.Request{Messages: []trajectory.Message{userText("go")}} }},
		{"by prompt, each first user message plays the turns from the first", RoutePrompt,
			func(int) context.Context { return context.Background() },
			func(i int) *llm.Request {
				return &llm.Request{System: "s", Messages: []trajectory.Message{userText("task " + string(rune('a'+i)))}}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseScriptWith([]byte(yml), "routed.yaml", ScriptOptions{Route: tc.route, MaxConversations: 3})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				rep, err := s.Next(tc.ctx(i), tc.req(i))
				if err != nil || rep.Turn != 1 || rep.Response.Content[0].Text != "first" || rep.Conversation == "" {
					t.Fatalf("conversation %d got turn %d %+v (%v), want its own turn 1", i, rep.Turn, rep.Response.Content, err)
				}
			}
			if rep, err := s.Next(tc.ctx(1), tc.req(1)); err != nil || rep.Turn != 2 || rep.Response.Content[0].Text != "second" {
				t.Fatalf("conversation 1 again got turn %d (%v), want its turn 2", rep.Turn, err)
			}
			_, err = s.Next(tc.ctx(3), tc.req(3))
			if !errors.Is(err, ErrTooManyConversations) || !strings.Contains(err.Error(), "3 are tracked") {
				t.Fatalf("a fourth conversation got %v, want ErrTooManyConversations", err)
			}
			err = s.Verify()
			if err == nil || strings.Count(err.Error(), "1 of 2 turns were used") != 2 || !errors.Is(err, ErrTooManyConversations) {
				t.Fatalf("Verify: %v, want two conversations with an unused turn and the refused one", err)
			}
		})
	}
}

func TestVerifyReportsUnusedTurnsPerConversation(t *testing.T) {
	script := loadScript(t, subagentScript)
	ctx := context.Background()
	req := &llm.Request{System: "You are Claude Code, Anthropic's official CLI for Claude.",
		Messages: []trajectory.Message{userText("Fix the failing test")}}
	if _, err := script.Next(ctx, req); err != nil {
		t.Fatal(err)
	}
	err := script.Verify()
	for _, want := range []string{
		"conversation main: 1 of 3 turns were used; turn 2 (line 14) was never requested",
		"conversation explore: 0 of 3 turns were used; turn 1 (line 23) was never requested",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Verify: %v, want it to say %q", err, want)
		}
	}
}

func TestNormalizeReplacesOnlyTheVolatileParts(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"a timestamp is replaced whole", "at 2026-12-01T10:00:07.123Z done", "at <TIME> done"},
		{"a date alone is replaced", "Today's date is 2026-12-01.", "Today's date is <DATE>."},
		{"a clock time is replaced", "started 09:41:12", "started <TIME>"},
		{"durations are replaced", "took 12ms, then 1.5s", "took <DURATION>, then <DURATION>"},
		{"temporary paths are replaced", "wrote /tmp/retrace-123/out.txt and /var/folders/x/y", "wrote <TMP> and <TMP>"},
		{"UUIDs and long hex ids are replaced", "id 123e4567-e89b-12d3-a456-426614174000 sha 9f86d081884c7d65", "id <UUID> sha <HEX>"},
		{"ordinary text, tool ids and short numbers stay", "toolu_01ABC read 3 files in src/", "toolu_01ABC read 3 files in src/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Normalize(tc.in); got != tc.want {
				t.Fatalf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
