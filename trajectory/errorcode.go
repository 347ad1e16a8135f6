package trajectory

import "strings"

// errorCodeNames are the named error codes of a tool_failure, a closed
// set: what the executor, the built-in tools, the MCP client and the
// importers write today. A new code is added here, documented in
// docs/glossary.md, and only then written.
var errorCodeNames = closedSet[string]{
	// The executor: lookup, validation, abort and crash of a call.
	"unknown_tool", "not_loaded", "pending", "schema", "user_abort", "sibling_failed",
	"cancelled", "timeout", "panic", "error", "stream_abandoned",
	// The built-in tools.
	"invalid_input", "bad_pattern", "bad_regexp", "empty_old_string", "no_change", "not_read",
	"not_found", "ambiguous", "not_regular", "binary", "offset_past_end", "outside_workspace", "io",
	"hard_linked",
	// The kernel sandbox: it refused an access of a running command, or
	// could not start the command at all.
	ErrorCodeSandbox, "sandbox_unavailable",
	// The MCP client.
	"mcp_error", "mcp_timeout", "mcp_reconnecting", "mcp_disconnected",
	// The Codex importer: a command the client refused to run.
	"not_run",
	// An importer: the source gave a code outside this format.
	ErrorCodeOther,
}

// ErrorCodeOther is the error_code an importer records when the source
// gave a code outside the closed format (an OpenTelemetry error.type
// naming an exception class of the other agent): the failure is kept,
// the code that would be an unbounded label is not.
const ErrorCodeOther = "other"

// ErrorCodeSandbox is the error_code of a permission_denied call whose
// command ran and was refused an access by the kernel sandbox: the one
// permission_denied that ran (see StoppedBeforeStart).
const ErrorCodeSandbox = "sandbox"

// ErrorCodeFormat describes the closed format of a tool_failure's
// error_code, for messages.
const ErrorCodeFormat = "exit:N, signal:NAME, http:NNN, an errno name (ENOENT) or a named code (docs/glossary.md lists them)"

// IsErrorCode reports whether s has the closed format of a tool_failure's
// error_code: exit:N (a process's exit status, N an integer), signal:NAME
// (the signal that killed it, NAME upper case without SIG), http:NNN (an
// HTTP status), an errno name (E and 2 to 15 upper-case letters or
// digits: ENOENT, ENAMETOOLONG), or one of the named codes above. Any
// other text — a code carrying an id, a path or a message — is no label
// a metric may group by (docs/glossary.md). retrace validate reports a code
// outside the format in files of every version; the loaders still read
// them, so that an old file stays readable.
func IsErrorCode(s string) bool {
	switch {
	case errorCodeNames.has(s):
		return true
	case strings.HasPrefix(s, "exit:"):
		n := strings.TrimPrefix(strings.TrimPrefix(s, "exit:"), "-")
		return len(n) > 0 && len(n) <= 10 && allBytes(n, isDigitByte)
	case strings.HasPrefix(s, "signal:"):
		n := strings.TrimPrefix(s, "signal:")
		return len(n) > 0 && len(n) <= 16 && isUpperByte(n[0]) && allBytes(n, func(b byte) bool { return isUpperByte(b) || isDigitByte(b) })
	case strings.HasPrefix(s, "http:"):
		n := strings.TrimPrefix(s, "http:")
		return len(n) == 3 && n[0] >= '1' && n[0] <= '5' && allBytes(n, isDigitByte)
	}
	return len(s) >= 3 && len(s) <= 16 && s[0] == 'E' && allBytes(s, func(b byte) bool { return isUpperByte(b) || isDigitByte(b) })
}

// ErrorCodeNames returns the named error codes, in the order of the list.
func ErrorCodeNames() []string { return append([]string(nil), errorCodeNames...) }

func isDigitByte(b byte) bool { return b >= '0' && b <= '9' }
func isUpperByte(b byte) bool { return b >= 'A' && b <= 'Z' }

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}
