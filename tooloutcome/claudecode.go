package tooloutcome

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// PermissionWordings are the fixed parts of the texts with which Claude
// Code (2.1.328; the same in 2.1.332) answers a call that its permission
// system refused, for every tool: the messages of its permission checks'
// "deny" results and of the "ask" results it turns into a refusal when
// nobody can be asked (claude -p), and the user's own rejection. Each is
// the client's wording, never a tool's output: a tool's error that
// happens to say "denied" is not in this list unless Claude Code words it
// so.
var PermissionWordings = []string{
	// "ask" turned into a refusal: Write, Edit, NotebookEdit, MCP tools...
	"but you haven't granted it yet.",
	// Bash's path check in -p mode: "touch in '...' needs approval. The
	// path is inside the working directories ..."
	"needs approval. The path is",
	"and Claude Code asks before",
	// "Permission to use X [with command Y] has been denied[ by your rule
	// R]", "Permission to read X has been denied", "... to edit X ...".
	"Permission to use ",
	"Permission to read ",
	"Permission to edit ",
	// Deny rules: "X in 'P' was blocked by a deny rule", "X targeting 'P'
	// was blocked by a deny rule", "Input redirection from 'P' was
	// blocked by a deny rule.", "... blocked by a Read permission rule",
	// "Workflow X blocked by permission rules".
	"was blocked by a deny rule",
	"blocked by a Read permission rule",
	"blocked by permission rules",
	"deny rule (",
	// Failed or impossible permission checks, which fail closed.
	"was not run: its permission check could not be completed.",
	"permission check needs a working directory",
	"permission check failed and its fail-closed posture",
	"permission check crashed",
	"this permission request is denied.",
	"returned an invalid permission result.",
	"Permission dialog failed:",
	"requires the user to read a consent disclosure",
	"Only the auto-mode classifier can allow",
	"Nobody can be asked here, so it has not run.",
	"Nobody can be asked to approve actions in this session",
	"No one can answer in this session.",
	"requires manual approval",
	// The user said no.
	"The user doesn't want to proceed with this tool use.",
	"The user doesn't want to take this action right now.",
}

// permissionPhrases are wordings that count only together with "denied":
// "Permission to use X has been denied", "denied by plugin".
var ccDeniedRe = regexp.MustCompile(`(?:has been denied|denied by plugin|denied access to)`)

// ccExitRe is the first line of a Bash result whose command failed:
// "Exit code N".
var ccExitRe = regexp.MustCompile(`^(?:Error: )?Exit code (-?\d+)\b`)

// ccPersistedRe is the head of a result Claude Code saved to a file
// because it was too large: "Output too large (340.7KB). Full output
// saved to: PATH".
var ccPersistedRe = regexp.MustCompile(`Output too large \((\d+(?:\.\d+)?)\s*(B|KB|MB|GB)\)\. Full output saved to: `)

// ClaudeCode classifies a tool result of Claude Code (2.1). Its is_error
// flag says whether the call failed; its wording says why (see the
// package doc).
func ClaudeCode(r Result) Outcome {
	text := r.Text
	if !r.IsError {
		o := success(text)
		if m := ccPersistedRe.FindStringSubmatch(text); m != nil {
			o.Truncated, o.FullBytes = true, humanBytes(m[1], m[2])
		}
		return o
	}
	switch {
	case strings.Contains(text, "No such tool available:"):
		return failure(trajectory.FailureNotFound, "", text)
	case ccDenied(text):
		return failure(trajectory.FailurePermissionDenied, "", text)
	case strings.Contains(text, "InputValidationError"), len(r.Input) == 0:
		return failure(trajectory.FailureInvalidInput, "", text)
	case strings.HasPrefix(text, "[Request interrupted by user"):
		return failure(trajectory.FailureAborted, "", text)
	}
	if m := ccExitRe.FindStringSubmatch(text); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n != 0 {
			return failure(trajectory.FailureToolError, exitCode(n), text)
		}
	}
	if strings.Contains(text, "File does not exist") {
		return failure(trajectory.FailureToolError, "ENOENT", text)
	}
	if emptyInput(r.Input) && strings.Contains(text, "<tool_use_error>") {
		return failure(trajectory.FailureInvalidInput, "", text)
	}
	return failure(trajectory.FailureToolError, "", text)
}

// ccDenied reports whether text is one of Claude Code's refusals.
func ccDenied(text string) bool {
	for _, w := range PermissionWordings {
		if strings.Contains(text, w) {
			switch w {
			case "Permission to use ", "Permission to read ", "Permission to edit ":
				if !ccDeniedRe.MatchString(text) {
					continue
				}
			}
			return true
		}
	}
	return ccDeniedRe.MatchString(text) && strings.Contains(text, "Permission")
}

// humanBytes reads a size as Claude Code prints it (1024-based, one
// decimal): the real size to within the rounding of the last digit.
func humanBytes(num, unit string) int64 {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0
	}
	switch unit {
	case "KB":
		f *= 1 << 10
	case "MB":
		f *= 1 << 20
	case "GB":
		f *= 1 << 30
	}
	return int64(f)
}
