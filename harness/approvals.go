package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/terminal"
	"github.com/retrace-dev/retrace/trajectory"
)

// The three people a session's permission prompts (Spec.Prompter) can go
// to, one each for retrace run, eval and replay; nil refuses every call
// that needs a person, as a headless session does.

// promptRedactor redacts the reason a question shows: it may quote the
// model's input.
var promptRedactor = recorder.DefaultRedactor()

// TerminalPrompter asks a person on a terminal whether a call may run
// (retrace run without --headless). Parallel calls may ask at once, so
// questions are asked one at a time. In is shared with whatever else reads
// the person's lines (follow-up prompts), so the two never take each
// other's lines.
type TerminalPrompter struct {
	In  *bufio.Reader
	Out io.Writer
	// Describe shows a call's input in one line; nil shows it as JSON.
	Describe func(json.RawMessage) string

	mu sync.Mutex
}

// Confirm asks and reads the answer: y or yes allows the call.
func (p *TerminalPrompter) Confirm(ctx context.Context, q executor.Prompt) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	input := string(q.Input)
	if p.Describe != nil {
		input = p.Describe(q.Input)
	}
	// The question holds what the model asked for: it is redacted and
	// shown escaped, so that no escape sequence can hide what is asked.
	reason, _ := promptRedactor.RedactString(q.Reason)
	fmt.Fprintf(p.Out, "\n  ? allow %s %s\n    %s\n    [y/N] ", terminal.Line(q.Tool), terminal.Line(input), terminal.Line(reason))
	line, err := p.In.ReadString('\n')
	if err != nil && line == "" {
		return false, err
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}

// Person is a scripted person who answers every question the same way (an
// eval scenario's person): true approves.
type Person bool

// Confirm answers yes for an approving person, no otherwise.
func (p Person) Confirm(context.Context, executor.Prompt) (bool, error) { return bool(p), nil }

// RecordedAnswers gives a recorded person's answers again (a replay of a
// recording trusted that far): a call the recording shows a person
// approving is approved again only when its input is byte-identical to
// the recorded call's, so a what-if change, a rewriting hook or a tampered
// response cannot borrow the approval; anything else is refused, as the
// person did not approve it.
type RecordedAnswers struct {
	approved map[string]json.RawMessage
	mu       sync.Mutex
	differ   []string
}

// NewRecordedAnswers reads the approvals of a recorded session: for every
// call a person approved, the input of its recorded tool_call.
func NewRecordedAnswers(events []trajectory.Event) *RecordedAnswers {
	inputs := map[string]json.RawMessage{}
	approved := map[string]json.RawMessage{}
	for _, ev := range events {
		switch p := ev.Payload.(type) {
		case *trajectory.ToolCall:
			inputs[p.ToolUseID] = p.Input
		case *trajectory.PermissionAllow:
			if p.Source == trajectory.SourceUser {
				approved[p.ToolUseID] = inputs[p.ToolUseID]
			}
		}
	}
	return &RecordedAnswers{approved: approved}
}

// Approved lists the calls the recording shows a person approving, sorted.
func (a *RecordedAnswers) Approved() []string {
	ids := make([]string, 0, len(a.approved))
	for id := range a.approved {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Confirm implements executor.Prompter.
func (a *RecordedAnswers) Confirm(_ context.Context, p executor.Prompt) (bool, error) {
	want, ok := a.approved[p.ToolUseID]
	if !ok {
		return false, nil
	}
	if len(want) == 0 || !bytes.Equal(want, p.Input) {
		a.mu.Lock()
		a.differ = append(a.differ, p.ToolUseID)
		a.mu.Unlock()
		return false, nil
	}
	return true, nil
}

// Mismatches lists the recorded approvals not given again because the
// call's input had changed.
func (a *RecordedAnswers) Mismatches() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.differ)
}
