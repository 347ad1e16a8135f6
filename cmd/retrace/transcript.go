package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/terminal"
	"github.com/retrace-dev/retrace/trajectory"
)

// liveTranscript is the Sink retrace run hands the agent: it passes every
// event to the recorder and prints a readable line for the ones a person
// follows — turns, tools with their own durations, permission decisions,
// defenses — as they happen. What it prints is redacted like the
// trajectory: text is redacted before it is shortened to a line, and every
// write is redacted again on its way out, so no secret reaches the
// terminal (or a log of it), and nothing a model or tool wrote is obeyed
// by the terminal (see terminalWriter).
//
// A tool's card is printed at its tool_result, in call order, by the
// result's display mode: full shows the card and the first
// line of the output, summary the card alone, hidden no card (todo_write's
// list is shown in the todo panel instead). The display mode never hides
// an error: a failed call, and a call that never ran (denied, abandoned,
// cancelled), always gets its card and the reason the model was given.
type liveTranscript struct {
	rec *recorder.Recorder
	mu  sync.Mutex
	out io.Writer
	// calls remembers each call from its tool_call until its tool_result.
	calls    map[string]*liveCall
	failures map[trajectory.FailureKind]int
}

type liveCall struct {
	input   string
	raw     json.RawMessage
	outcome string
	notes   []string
	// ended is set at tool_end: the call went through the executor.
	ended      bool
	notRun     bool // the tool never started: no duration to show
	durationMs float64
	truncated  bool
	// streamed is the call's stream_offset_ms: it started while the
	// reply was still streaming.
	streamed *float64
}

func newLiveTranscript(out io.Writer, rec *recorder.Recorder) *liveTranscript {
	return &liveTranscript{rec: rec, out: terminalWriter{out}, calls: map[string]*liveCall{}, failures: map[trajectory.FailureKind]int{}}
}

// transcriptRedactor redacts what the live transcript and the permission
// prompt print: the recorder's default patterns, which are the ones retrace
// run records with.
var transcriptRedactor = recorder.DefaultRedactor()

// terminalWriter redacts each write and makes it safe for a terminal
// (terminal.Text: escape sequences, carriage returns and the like shown
// escaped, no line that starts a workflow command) before passing it on.
// The transcript writes whole lines, so a secret or an escape sequence is
// never split between two writes.
type terminalWriter struct{ w io.Writer }

func (r terminalWriter) Write(p []byte) (int, error) {
	out, _ := transcriptRedactor.Redact(p)
	if _, err := io.WriteString(r.w, terminal.Text(string(out))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// redacted returns s without its secrets, for text about to be shortened.
func redacted(s string) string {
	out, _ := transcriptRedactor.RedactString(s)
	return out
}

// Emit implements trajectory.Sink.
func (l *liveTranscript) Emit(turn int, p trajectory.Payload) {
	l.rec.Emit(turn, p)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e := p.(type) {
	case *trajectory.SessionStart:
		// The sandbox is worth a line only when it is not confining:
		// an explicit opt-out, or a kernel that cannot sandbox.
		if sb := e.Sandbox; sb != nil {
			switch sb.Mode {
			case trajectory.SandboxOff:
				fmt.Fprintf(l.out, "sandbox: off — tool processes run unconfined, as the configuration or --no-sandbox asked\n")
			case trajectory.SandboxUnavailable:
				fmt.Fprintf(l.out, "sandbox: unavailable — no tool process will run: %s\n", sb.Reason)
			}
		}
	case *trajectory.ModelResponse:
		fmt.Fprintf(l.out, "turn %d · model: %s · %s · %.0f ms\n", turn, e.StopReason, usageLine(e.Usage), e.DurationMs)
		for _, b := range e.Content {
			switch {
			case b.Type == trajectory.BlockText && strings.TrimSpace(b.Text) != "":
				fmt.Fprintf(l.out, "  %s\n", oneLine(redacted(b.Text), 160))
			case b.Type == trajectory.BlockToolUse:
				// Known before its tool_call, so that a call the session
				// answers without running still shows what it was; a call
				// started while the reply streamed is known already.
				if l.calls[b.ID] == nil {
					l.calls[b.ID] = &liveCall{input: inputSummary(b.Input), raw: b.Input, outcome: "ok"}
				}
			}
		}
	case *trajectory.ModelError:
		retry := ""
		if e.WillRetry {
			retry = fmt.Sprintf(", retrying in %.0f ms", e.RetryAfterMs)
		}
		fmt.Fprintf(l.out, "  ! model error %s (HTTP %d, attempt %d%s)\n", e.ErrorKind, e.StatusCode, e.Attempt, retry)
	case *trajectory.ToolCall:
		l.calls[e.ToolUseID] = &liveCall{input: inputSummary(e.Input), raw: e.Input, outcome: "ok", streamed: e.StreamOffsetMs}
	case *trajectory.PermissionAllow:
		if e.NeededPrompt || e.Source == trajectory.SourceRule {
			l.note(e.ToolUseID, fmt.Sprintf("allowed by %s%s", e.Source, ruleSuffix(e.Rule)))
		}
	case *trajectory.PermissionDeny:
		l.note(e.ToolUseID, fmt.Sprintf("denied by %s at %s%s", e.Source, e.Step, ruleSuffix(e.Rule)))
	case *trajectory.HookRun:
		if e.Outcome != trajectory.HookContinue {
			l.note(e.ToolUseID, fmt.Sprintf("hook %s: %s", e.Hook, e.Outcome))
		}
	case *trajectory.ToolFailure:
		l.failures[e.FailureKind]++
		if c := l.calls[e.ToolUseID]; c != nil {
			c.outcome = string(e.FailureKind)
			if e.ErrorCode != "" {
				c.outcome += " " + e.ErrorCode
			}
		}
	case *trajectory.ToolEnd:
		if c := l.calls[e.ToolUseID]; c != nil {
			c.ended, c.notRun, c.durationMs, c.truncated = true, e.NotRun, e.DurationMs, e.Truncated
		}
	case *trajectory.ToolResult:
		l.card(e)
	case *trajectory.DefenseTrigger:
		fmt.Fprintf(l.out, "  ⚑ defense %s: %s\n", e.Defense, e.Action)
	case *trajectory.Compaction:
		fmt.Fprintf(l.out, "  ~ context compacted (%s): %d → %d messages, %d → %d tokens (%s)\n",
			e.Strategy, e.MessagesBefore, e.MessagesAfter, e.TokensBefore, e.TokensAfter, measuredBy(e.MeasuredBy))
	case *trajectory.UserPrompt:
		fmt.Fprintf(l.out, "you: %s\n", oneLine(redacted(e.Text), 160))
	}
}

// measuredBy names how a compaction's tokens were measured, for a
// recording that does not say (an older one estimated).
func measuredBy(m trajectory.TokenMeasure) trajectory.TokenMeasure {
	if m == "" {
		return trajectory.MeasuredEstimate
	}
	return m
}

// usageLine shows a response's tokens: all of its input (the part read
// from the cache and the part written to it included, so the number is
// the prompt's size), then the cache's share when it has one.
func usageLine(u trajectory.Usage) string {
	in := u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens
	line := fmt.Sprintf("%d in / %d out tokens", in, u.OutputTokens)
	if u.CacheReadTokens > 0 || u.CacheCreationTokens > 0 {
		line += fmt.Sprintf(" (cache: %d read, %d written)", u.CacheReadTokens, u.CacheCreationTokens)
	}
	return line
}

// card prints a call's card at its tool_result, by the result's display
// mode; see liveTranscript.
func (l *liveTranscript) card(e *trajectory.ToolResult) {
	c := l.calls[e.ToolUseID]
	delete(l.calls, e.ToolUseID)
	if c == nil {
		// The call never reached the executor: the session answered it
		// without running it, and the user must see that.
		c = &liveCall{}
	}
	mode := e.Display
	if e.IsError || !c.ended {
		mode = trajectory.DisplayFull
	}
	if mode == trajectory.DisplayHidden {
		if panel := panels[e.Tool]; panel != nil {
			for _, line := range panel(c.raw) {
				fmt.Fprintf(l.out, "  %s\n", terminal.Line(line))
			}
		}
		return
	}
	header := fmt.Sprintf("  ⏺ %s", terminal.Line(e.Tool))
	if c.input != "" {
		header += " " + c.input
	}
	switch {
	case !c.ended:
		header += " · not run"
	case c.notRun:
		header += " · " + c.outcome + " · not run"
	default:
		header += fmt.Sprintf(" · %s · %.1f ms", c.outcome, c.durationMs)
	}
	if c.truncated {
		header += " · truncated, full output saved"
	}
	if c.streamed != nil {
		header += fmt.Sprintf(" · started in the reply at +%.0f ms", *c.streamed)
	}
	fmt.Fprintln(l.out, header)
	for _, n := range c.notes {
		fmt.Fprintf(l.out, "      %s\n", n)
	}
	if mode == trajectory.DisplaySummary {
		return
	}
	if body := firstLine(e.Text); body != "" {
		fmt.Fprintf(l.out, "    ⎿ %s\n", body)
	}
}

// firstLine is the first non-blank line of a tool's output, redacted and
// shortened, with how many lines follow it.
func firstLine(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, line := range lines {
		if strings.TrimSpace(line) == "" {
			continue
		}
		out := oneLine(redacted(line), 120)
		if rest := len(lines) - i - 1; rest > 0 {
			out += fmt.Sprintf(" (+%s)", plural(rest, "line"))
		}
		return out
	}
	return ""
}

// panels render the results of hidden tools whose effect the user sees
// elsewhere: the panel is that elsewhere. A hidden tool
// without a panel must be one after which nothing happened from the
// user's view (②b, tool_search); TestEveryHiddenToolHasAPanelOrNothingToShow
// holds the two lists together.
var panels = map[string]func(input json.RawMessage) []string{
	"todo_write": todoPanel,
}

// todoPanel shows the todo list a todo_write call set: the items in order,
// each with its state, the one in progress by its active form.
func todoPanel(input json.RawMessage) []string {
	var in struct {
		Todos []struct {
			Content    string `json:"content"`
			Status     string `json:"status"`
			ActiveForm string `json:"active_form"`
		} `json:"todos"`
	}
	if json.Unmarshal(input, &in) != nil {
		return nil
	}
	if len(in.Todos) == 0 {
		return []string{"☰ todos: cleared"}
	}
	done := 0
	lines := []string{""}
	for _, t := range in.Todos {
		mark, text := "○", t.Content
		switch t.Status {
		case "completed":
			mark = "✓"
			done++
		case "in_progress":
			mark = "▶"
			if t.ActiveForm != "" {
				text = t.ActiveForm
			}
		}
		lines = append(lines, fmt.Sprintf("  %s %s", mark, oneLine(redacted(text), 100)))
	}
	lines[0] = fmt.Sprintf("☰ todos: %d of %d done", done, len(in.Todos))
	return lines
}

func (l *liveTranscript) note(id, s string) {
	if c := l.calls[id]; c != nil {
		c.notes = append(c.notes, s)
	}
}

func ruleSuffix(rule string) string {
	if rule == "" {
		return ""
	}
	return " (" + rule + ")"
}

// summary prints the one-screen summary after the session.
func (l *liveTranscript) summary(res agent.Result, session, path string, st recorder.Stats) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, "\nsession %s ended: %s after %s\n", session, res.Reason, plural(res.Turns, "turn"))
	if res.ErrorCode != "" {
		fmt.Fprintf(l.out, "  error: %s %v\n", res.ErrorCode, res.Err)
	}
	line := fmt.Sprintf("  tools: %s, %d failed", plural(res.ToolCalls, "call"), res.ToolFailures)
	if len(l.failures) > 0 {
		kinds := make([]string, 0, len(l.failures))
		for k, n := range l.failures {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(kinds)
		line += " (" + strings.Join(kinds, ", ") + ")"
	}
	fmt.Fprintln(l.out, line)
	u := res.Usage
	in := u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens
	line = fmt.Sprintf("  tokens: %d in, %d out", in, u.OutputTokens)
	if in > 0 && (u.CacheReadTokens > 0 || u.CacheCreationTokens > 0) {
		// The share's denominator is all input, cached or not, as the
		// cache metric's.
		line += fmt.Sprintf("; cache: %d read (%.1f%% of input), %d written", u.CacheReadTokens, 100*float64(u.CacheReadTokens)/float64(in), u.CacheCreationTokens)
	}
	fmt.Fprintln(l.out, line)
	if st.Problems() > 0 || st.Redactions > 0 {
		fmt.Fprintf(l.out, "  recorder: %s\n", st)
	}
	if path == "" {
		fmt.Fprintln(l.out, "trajectory: none written")
		return
	}
	fmt.Fprintf(l.out, "trajectory: %s\n", path)
	fmt.Fprintf(l.out, "  check it with: retrace validate %s\n", path)
}

// inputSummary shows a tool input in a few words: its most telling value,
// redacted before it is shortened.
func inputSummary(raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "file_path", "pattern", "path", "query"} {
		if s, ok := m[k].(string); ok {
			return oneLine(redacted(s), 70)
		}
	}
	return ""
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}
