package tooloutcome

import (
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// OpenCodeInvalid is the built-in tool opencode renames a call to when the
// model asked for a tool it does not have or sent input that did not
// parse; the original name survives only in the call's input.
const OpenCodeInvalid = "invalid"

// OpenCode classifies a tool result of opencode (1.18), from its own
// records (a tool part of `opencode export` or `opencode run --format
// json`: IsError is the part's status "error", Exit its metadata.exit) or
// from the Messages API wire (IsError is is_error). A command that failed
// is status "completed" with a non-zero exit, so the exit decides, not the
// status; on the wire, which carries no exit, a command's outcome is
// unknown. A call to a tool opencode does not have, or whose input did not
// parse, is answered by its built-in invalid tool, whose wording names
// the case.
func OpenCode(r Result) Outcome {
	text := r.Text
	switch {
	case strings.Contains(text, "Model tried to call unavailable tool"):
		return failure(trajectory.FailureNotFound, "", text)
	case r.Tool == OpenCodeInvalid, strings.HasPrefix(text, "The arguments provided to the tool are invalid"),
		strings.Contains(text, "was called with invalid arguments"):
		return failure(trajectory.FailureInvalidInput, "", text)
	case strings.Contains(text, "The user rejected permission to use this specific tool call"),
		strings.Contains(text, "The user has specified a rule which prevents you from using this specific tool call"):
		return failure(trajectory.FailurePermissionDenied, "", text)
	case r.Exit != nil && *r.Exit != 0:
		return failure(trajectory.FailureToolError, exitCode(*r.Exit), text)
	case r.Exit != nil:
		return success(text)
	case r.IsError:
		return failure(trajectory.FailureToolError, "", text)
	case openCodeCommands[r.Tool]:
		return failure(trajectory.FailureUnknown, "", text)
	}
	return success(text)
}

// openCodeCommands are opencode's tools that run a command, whose result
// is a failure only by its exit status.
var openCodeCommands = map[string]bool{"bash": true}
