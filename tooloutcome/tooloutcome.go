package tooloutcome

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// Result is one tool result as a client sent it, with the call it answers.
type Result struct {
	// Tool is the name the call asked for.
	Tool string
	// Input is the call's input as the model sent it; empty when it never
	// parsed (a tool_use cut off by max_tokens).
	Input json.RawMessage
	// Text is the result's text as the client sent it.
	Text string
	// IsError is the client's own error flag (Anthropic's is_error); false
	// on a wire that has none.
	IsError bool
	// Exit is the exit status the client recorded apart from the text
	// (opencode's metadata.exit), nil when it recorded none.
	Exit *int
}

// Outcome is what became of a call, as its result shows it.
type Outcome struct {
	// Kind is "" for a success, else the kind of the failure
	// (trajectory.FailureUnknown when no rule recognised the result).
	Kind trajectory.FailureKind
	// Code is the failure's error code (exit:N, ENOENT), a label; "" when
	// the result states none.
	Code string
	// Text is the result the detectors compare: the client's text without
	// the envelope the client put around the tool's output (Codex's
	// header). It is the whole text when the client adds none.
	Text string
	// DurationMs is the call's own run time, when the result states it
	// (DurationKnown).
	DurationMs    float64
	DurationKnown bool
	// Truncated says the client cut the output it gave the model;
	// FullBytes is the size of the whole output when the result states
	// it, and 0 when it does not.
	Truncated bool
	FullBytes int64
}

// Failed reports whether the call did not succeed (an unknown outcome
// included).
func (o Outcome) Failed() bool { return o.Kind != "" }

// Classifier turns one tool result of a client into an outcome.
type Classifier func(Result) Outcome

// success is the outcome of a call that succeeded with text.
func success(text string) Outcome { return Outcome{Text: text} }

// failure is the outcome of a failed call.
func failure(kind trajectory.FailureKind, code, text string) Outcome {
	return Outcome{Kind: kind, Code: code, Text: text}
}

// Anthropic classifies the tool results of a Messages API client this
// package has no rules for: the client's is_error flag is all there is.
func Anthropic(r Result) Outcome {
	if r.IsError {
		return failure(trajectory.FailureToolError, "", r.Text)
	}
	return success(r.Text)
}

// OpenAI classifies the tool results of a Chat Completions or Responses
// client this package has no rules for: those wires carry no error flag,
// so the outcome is unknown, never a guessed success.
func OpenAI(r Result) Outcome {
	return failure(trajectory.FailureUnknown, "", r.Text)
}

// ForUserAgent returns the classifier of the client whose requests carry
// the User-Agent ua: Claude Code (claude-cli/...), Codex (codex_exec/...,
// codex_cli_rs/...) or opencode (opencode/..., on the Messages API); else the generic one of
// the wire the request came on (Anthropic for the Messages API, OpenAI
// for the others).
func ForUserAgent(ua string, messagesAPI bool) Classifier {
	switch {
	case strings.HasPrefix(ua, "claude-cli/"), strings.HasPrefix(ua, "claude-code/"):
		return ClaudeCode
	case strings.HasPrefix(ua, "codex_"), strings.HasPrefix(ua, "codex-"), strings.HasPrefix(ua, "codex/"):
		return Codex
	case strings.HasPrefix(ua, "opencode/") && messagesAPI:
		return OpenCode
	case messagesAPI:
		return Anthropic
	}
	return OpenAI
}

// ClientOfUserAgent names the agent CLI a request's User-Agent header
// is of, as retrace import names it (claude-code, codex, opencode), so a
// wire recording says which client it holds; "" for any other.
func ClientOfUserAgent(ua string) string {
	switch {
	case strings.HasPrefix(ua, "claude-cli/"), strings.HasPrefix(ua, "claude-code/"):
		return "claude-code"
	case strings.HasPrefix(ua, "codex_"), strings.HasPrefix(ua, "codex-"), strings.HasPrefix(ua, "codex/"):
		return "codex"
	case strings.HasPrefix(ua, "opencode/"):
		return "opencode"
	}
	return ""
}

// exitCode is the error code of a non-zero exit status.
func exitCode(n int) string { return "exit:" + strconv.Itoa(n) }

// emptyInput reports whether a call's input is missing or an empty object.
func emptyInput(in json.RawMessage) bool {
	s := strings.TrimSpace(string(in))
	return s == "" || s == "{}" || s == "null"
}
