package tooloutcome

import (
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// OpenCodeInvalid is the built-in tool opencode renames a call to when the
// model asked for a tool it does not have or sent input that did not
// parse; the original name survives only in the call's input.
const OpenCodeInvalid = "invalid"

// OpenCode classifies a tool result of opencode as its own records state
// it (a tool part of `opencode export` or `opencode run --format json`):
// IsError is the part's status "error", Exit its metadata.exit. A command
// that failed is status "completed" with a non-zero exit, so the exit
// decides, not the status. It is also used for opencode's results on the
// Messages API wire, whose is_error is the same status; on a wire with no
// error flag opencode's results are classified by OpenAI (unknown).
func OpenCode(r Result) Outcome {
	text := r.Text
	switch {
	case r.Tool == OpenCodeInvalid && strings.Contains(text, "unavailable tool"):
		return failure(trajectory.FailureNotFound, "", text)
	case r.Tool == OpenCodeInvalid:
		return failure(trajectory.FailureInvalidInput, "", text)
	case strings.Contains(text, "The user rejected permission to use this specific tool call"),
		strings.Contains(text, "rejected permission to use this"):
		return failure(trajectory.FailurePermissionDenied, "", text)
	case r.Exit != nil && *r.Exit != 0:
		return failure(trajectory.FailureToolError, exitCode(*r.Exit), text)
	case r.IsError:
		return failure(trajectory.FailureToolError, "", text)
	}
	return success(text)
}
