// Package tooloutcome is the one place that reads a tool result as an
// agent client sends it and says what became of the call: a success, or a
// failure of a trajectory.FailureKind with an error code (exit:N, ENOENT,
// ...). The wire recorder (`retrace mock serve --record`) and the
// transcript importers (`retrace import`) both call it, so a session
// recorded on the wire and the same session imported from the client's
// transcript give every call the same outcome.
//
// There is one function per client, because each client words its
// results its own way, and a generic one per wire format for any other
// client:
//
//	ClaudeCode  is_error decides success or failure; the wording decides the kind: "No such tool
//	            available" → not_found, an InputValidationError or a call whose input never parsed →
//	            invalid_input, every permission-denial wording of Claude Code's tools (PermissionWordings)
//	            → permission_denied, "Exit code N" → tool_error exit:N, "File does not exist" →
//	            tool_error ENOENT, the user's rejection → permission_denied, an interruption → aborted,
//	            any other error → tool_error. A result saved elsewhere ("Output too large (340.7KB).
//	            Full output saved to: ...") is a truncated success with its size.
//	Codex       the exec tools' header (Chunk ID, Wall time, Process exited with code N, Original
//	            token count, Output:) is parsed: the exit code is the outcome (tool_error exit:N when
//	            not 0), the wall time the call's duration, and only the text after "Output:" is the
//	            result. "unsupported call: X" → not_found, "failed to parse function arguments" →
//	            invalid_input, a command the approval policy rejected → permission_denied, and any
//	            other text without a header → unknown.
//	OpenCode    opencode's tool parts: a command's non-zero exit (its status still "completed") →
//	            tool_error exit:N, the built-in invalid tool (an unknown or cut-off call renamed) →
//	            not_found or invalid_input, a permission rejection → permission_denied.
//	Anthropic   any other Messages API client: is_error → tool_error, else success.
//	OpenAI      any other Chat Completions or Responses client: the wire has no error flag, so
//	            every result is unknown.
//
// A result no rule recognises is a failure of kind unknown
// (trajectory.FailureUnknown), never taken for a success: a classifier
// that guesses would make a failed session look green.
//
// For Codex, the duration is the header's Wall time, the time the command
// ran as Codex measured it around the process, because the duration field
// of Codex's own exec events (a few microseconds for a command that ran
// for a third of a second) is not the call's time; a result without the
// header has no duration.
//
// ForUserAgent picks the classifier of the client a request came from,
// for the wire recorder, which sees only HTTP requests.
package tooloutcome
