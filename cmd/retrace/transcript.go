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
	"github.com/retrace-dev/retrace/trajectory"
)

// liveTranscript is the Sink retrace run hands the agent: it passes every
// event to the recorder and prints a readable line for the ones a person
// follows — turns, tools with their own durations, permission decisions,
// defenses — as they happen. What it prints is redacted like the
// trajectory: text is redacted before it is shortened to a line, and every
// write is redacted again on its way out, so no secret reaches the
// terminal (or a log of it).
type liveTranscript struct {
	rec *recorder.Recorder
	mu  sync.Mutex
	out io.Writer
	// calls remembers each call's input and decisions until its tool_end.
	calls    map[string]*liveCall
	failures map[trajectory.FailureKind]int
	// awaiting is set from a model_request to its reply; the lines of
	// calls that finish while the reply still streams are held until the
	// turn's header is printed, so a turn reads top to bottom.
	awaiting bool
	held     []string
}

type liveCall struct {
	input   string
	outcome string
	notes   []string
	// streamed is the call's stream_offset_ms: it started in the reply.
	streamed *float64
}

func newLiveTranscript(out io.Writer, rec *recorder.Recorder) *liveTranscript {
	return &liveTranscript{rec: rec, out: redactingWriter{out}, calls: map[string]*liveCall{}, failures: map[trajectory.FailureKind]int{}}
}

// transcriptRedactor redacts what the live transcript and the permission
// prompt print: the recorder's default patterns, which are the ones retrace
// run records with.
var transcriptRedactor = recorder.DefaultRedactor()

// redactingWriter redacts each write before passing it on. The transcript
// writes whole lines, so a secret is never split between two writes.
type redactingWriter struct{ w io.Writer }

func (r redactingWriter) Write(p []byte) (int, error) {
	out, _ := transcriptRedactor.Redact(p)
	if _, err := r.w.Write(out); err != nil {
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
	case *trajectory.ModelRequest:
		l.awaiting = true
	case *trajectory.ModelResponse:
		fmt.Fprintf(l.out, "turn %d · model: %s · %d in / %d out tokens · %.0f ms\n", turn, e.StopReason, e.Usage.InputTokens+e.Usage.CacheReadTokens, e.Usage.OutputTokens, e.DurationMs)
		for _, b := range e.Content {
			if b.Type == trajectory.BlockText && strings.TrimSpace(b.Text) != "" {
				fmt.Fprintf(l.out, "  %s\n", oneLine(redacted(b.Text), 160))
			}
		}
		l.release()
	case *trajectory.ModelError:
		l.release()
		retry := ""
		if e.WillRetry {
			retry = fmt.Sprintf(", retrying in %.0f ms", e.RetryAfterMs)
		}
		fmt.Fprintf(l.out, "  ! model error %s (HTTP %d, attempt %d%s)\n", e.ErrorKind, e.StatusCode, e.Attempt, retry)
	case *trajectory.ToolCall:
		l.calls[e.ToolUseID] = &liveCall{input: inputSummary(e.Input), outcome: "ok", streamed: e.StreamOffsetMs}
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
		c := l.calls[e.ToolUseID]
		if c == nil {
			c = &liveCall{outcome: "?"}
		}
		delete(l.calls, e.ToolUseID)
		extra := ""
		if e.Truncated {
			extra = " · truncated, full output saved"
		}
		if c.streamed != nil {
			extra += fmt.Sprintf(" · started in the reply at +%.0f ms", *c.streamed)
		}
		lines := []string{fmt.Sprintf("  ⏺ %s %s · %s · %.1f ms%s\n", e.Tool, c.input, c.outcome, e.DurationMs, extra)}
		for _, n := range c.notes {
			lines = append(lines, fmt.Sprintf("      %s\n", n))
		}
		if l.awaiting {
			l.held = append(l.held, lines...)
			break
		}
		for _, line := range lines {
			fmt.Fprint(l.out, line)
		}
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

// release ends the wait for a reply and prints the lines held meanwhile.
func (l *liveTranscript) release() {
	l.awaiting = false
	for _, line := range l.held {
		fmt.Fprint(l.out, line)
	}
	l.held = l.held[:0]
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
func (l *liveTranscript) summary(res agent.Result, path string, st recorder.Stats) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Lines still held (a reply that never answered) are not lost.
	l.release()
	fmt.Fprintf(l.out, "\nsession %s ended: %s after %s\n", strings.TrimSuffix(pathBase(path), trajectory.Ext), res.Reason, plural(res.Turns, "turn"))
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
	fmt.Fprintf(l.out, "  tokens: %d in, %d cache read, %d out\n", u.InputTokens, u.CacheReadTokens, u.OutputTokens)
	if st.Problems() > 0 || st.Redactions > 0 {
		fmt.Fprintf(l.out, "  recorder: %s\n", st)
	}
	fmt.Fprintf(l.out, "trajectory: %s\n", path)
	fmt.Fprintf(l.out, "  check it with: retrace validate %s\n", path)
}

func pathBase(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
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
