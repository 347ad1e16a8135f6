package agent

import (
	"errors"
	"fmt"

	"github.com/retrace-dev/retrace/trajectory"
)

// ErrNotContinuable is wrapped by ConversationOf's errors for a recording
// whose conversation cannot be carried on.
var ErrNotContinuable = errors.New("session cannot be continued")

// ConversationOf rebuilds the conversation a recorded session ended with,
// for a session that carries it on (Config.History): the messages of its
// last model_request (each request records the messages added since the
// one before and the hash of every message, so the whole history is
// rebuilt request by request), then its last reply. Of that reply the text
// is kept, and each tool_use that got a tool_result event, with that
// result in a user message after it; a tool_use that got none is left
// out, so that the history holds no call without its answer. The text is
// what the recorder wrote, so secrets stay redacted.
func ConversationOf(events []trajectory.Event) ([]trajectory.Message, error) {
	var msgs []trajectory.Message
	var last *trajectory.ModelResponse
	requests := 0
	results := map[string]*trajectory.ToolResult{}
	// conv gives each request's full message list, in either contract
	// version: the messages it shares with the history are the ones
	// before its new messages.
	var conv trajectory.Conversation
	for _, ev := range events {
		switch p := ev.Payload.(type) {
		case *trajectory.ModelRequest:
			full, err := conv.Next(p)
			if err != nil {
				return nil, fmt.Errorf("%w: the model_request at seq %d: %w", ErrNotContinuable, ev.Seq, err)
			}
			shared := len(full) - len(p.NewMessages)
			if shared < 0 || shared > len(msgs) {
				return nil, fmt.Errorf("%w: the model_request at seq %d shares %d messages with a history of %d: the recording is not whole",
					ErrNotContinuable, ev.Seq, shared, len(msgs))
			}
			msgs = append(msgs[:shared:shared], p.NewMessages...)
			last, requests = nil, requests+1
			clear(results)
		case *trajectory.ModelResponse:
			last = p
		case *trajectory.ToolResult:
			results[p.ToolUseID] = p
		}
	}
	if requests == 0 {
		return nil, fmt.Errorf("%w: it has no model request, so there is no conversation to carry on", ErrNotContinuable)
	}
	if last == nil {
		return msgs, nil
	}
	var said, answers []trajectory.ContentBlock
	for _, b := range last.Content {
		switch b.Type {
		case trajectory.BlockText:
			if b.Text != "" {
				said = append(said, b)
			}
		case trajectory.BlockToolUse:
			r, ok := results[b.ID]
			if !ok || len(b.Input) == 0 {
				continue
			}
			said = append(said, b)
			answers = append(answers, trajectory.ContentBlock{Type: trajectory.BlockToolResult, ToolUseID: b.ID, Content: r.Text, IsError: r.IsError})
		}
	}
	if len(said) == 0 {
		return msgs, nil
	}
	msgs = append(msgs, trajectory.Message{Role: trajectory.RoleAssistant, Content: said})
	if len(answers) > 0 {
		msgs = append(msgs, trajectory.Message{Role: trajectory.RoleUser, Content: answers})
	}
	return msgs, nil
}
