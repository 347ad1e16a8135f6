package scenarios

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/trajectory"
)

// watchedScript is the mock's source in an agent run: the scenario's
// script, and the first request it could not answer (out of turns, a
// missed expectation, no conversation matched), so that the run's
// failure says what the agent asked for that the script did not hold,
// not only that the agent exited with an error. It is safe for
// concurrent use, like the script.
type watchedScript struct {
	*mockllm.Script

	mu      sync.Mutex
	refused string
}

// Next implements mockllm.Source.
func (w *watchedScript) Next(ctx context.Context, req *llm.Request) (mockllm.Reply, error) {
	r, err := w.Script.Next(ctx, req)
	if err != nil {
		w.mu.Lock()
		if w.refused == "" {
			w.refused = refusal(err, req)
		}
		w.mu.Unlock()
	}
	return r, err
}

// failure returns the run's failure for the first request the script
// refused, placed at the scenario's model:, or nil when it refused none.
func (w *watchedScript) failure(s *Scenario) *results.Failure {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.refused == "" {
		return nil
	}
	return &results.Failure{Expect: Place{File: s.File, Line: scriptLine(s), Path: "model"}.String() + ": the script answers every model request of the agent",
		Got: w.refused}
}

// refusal says why the script refused req: "the script has 1 turn; the
// agent sent request 2: "…"", with the first line of the text the
// request ends with.
func refusal(err error, req *llm.Request) string {
	sent := strconv.Quote(lastUserLine(req))
	var te *mockllm.TurnError
	if !errors.As(err, &te) {
		// No conversation matched: the error names the script's matchers
		// and the request's prompts.
		return fmt.Sprintf("the script refused a request of the agent: %v", err)
	}
	conv := ""
	if te.Conversation != "" {
		conv = " in conversation " + te.Conversation
	}
	if errors.Is(err, mockllm.ErrOutOfTurns) {
		return fmt.Sprintf("the script has %s%s; the agent sent request %d: %s", plural(te.Turn-1, "turn"), conv, te.Turn, sent)
	}
	return fmt.Sprintf("the agent's request %d%s does not meet the script's turn %d: %s; the request ends: %s", te.Turn, conv, te.Turn, te.Msg, sent)
}

// maxSentLine bounds the request text a refusal quotes.
const maxSentLine = 100

// lastUserLine returns the first non-blank line of the text the last
// user message of req holds (its text and tool results), trimmed and
// cut to maxSentLine bytes: what the agent was answering or asking.
func lastUserLine(req *llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != trajectory.RoleUser {
			continue
		}
		for _, c := range m.Content {
			text := c.Text
			if c.Type == trajectory.BlockToolResult {
				text = c.Content
			}
			// Claude Code puts reminders of its own before the user's text.
			if strings.HasPrefix(strings.TrimSpace(text), "<system-reminder>") {
				continue
			}
			for line := range strings.Lines(text) {
				if line = strings.TrimSpace(line); line != "" {
					return cut(line, maxSentLine)
				}
			}
		}
		return ""
	}
	return ""
}

// cut shortens s to at most n bytes, on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// scriptLine is the archive line where s's script begins (the script is
// padded so that its lines are the archive's); s.Line when it is empty.
func scriptLine(s *Scenario) int {
	for i, line := range strings.Split(string(s.Script), "\n") {
		if strings.TrimSpace(line) != "" {
			return i + 1
		}
	}
	return s.Line
}

// plural returns "1 turn" or "n turns".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
