package tooloutcome

import (
	"strconv"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// CodexHeader is the header Codex's exec tools (exec_command, shell, ...)
// put before a command's output for the model:
//
//	Chunk ID: e55de1
//	Wall time: 0.2824 seconds
//	Process exited with code 1           (or: Process running with session ID 7)
//	Original token count: 11
//	Output:
//	cat: missing.txt: No such file or directory
//
// Older versions wrote "Exit code: N" for the exit line.
type CodexHeader struct {
	// ExitCode is the command's exit status; nil while it still runs
	// (Running) or when the header gives none.
	ExitCode *int
	// Running says the process was still running when the output was
	// taken (continued with write_stdin).
	Running bool
	// WallMs is the wall time in milliseconds, when given (WallKnown).
	WallMs    float64
	WallKnown bool
	// Output is the text after the "Output:" line.
	Output string
}

// ParseCodexHeader parses the header of an exec tool's output. It reports
// false when text does not start with one: then nothing of it is read.
func ParseCodexHeader(text string) (CodexHeader, bool) {
	var h CodexHeader
	rest := text
	seen := false
	for rest != "" {
		line, after, found := strings.Cut(rest, "\n")
		if line == "Output:" {
			if !seen {
				return CodexHeader{}, false
			}
			h.Output = after
			return h, true
		}
		if !found {
			break
		}
		key, val, ok := strings.Cut(line, ": ")
		switch {
		case ok && key == "Chunk ID":
		case ok && key == "Wall time":
			secs, unit, _ := strings.Cut(val, " ")
			f, err := strconv.ParseFloat(secs, 64)
			if err != nil || f < 0 || (unit != "seconds" && unit != "") {
				return CodexHeader{}, false
			}
			h.WallMs, h.WallKnown = f*1000, true
		case ok && key == "Original token count", ok && key == "Total output lines":
		case ok && key == "Exit code":
			n, err := strconv.Atoi(val)
			if err != nil {
				return CodexHeader{}, false
			}
			h.ExitCode = &n
		case strings.HasPrefix(line, "Process exited with code "):
			n, err := strconv.Atoi(strings.TrimPrefix(line, "Process exited with code "))
			if err != nil {
				return CodexHeader{}, false
			}
			h.ExitCode = &n
		case strings.HasPrefix(line, "Process running with session ID "):
			h.Running = true
		default:
			return CodexHeader{}, false
		}
		seen = true
		rest = after
	}
	return CodexHeader{}, false
}

// codexTruncated is the line Codex puts at the head of an output it cut
// for the model.
const codexTruncated = "Warning: truncated output"

// codexRefusals are the texts with which Codex (0.171) answers a command
// its approval policy or sandbox settings would not let run.
var codexRefusals = []string{
	"approval policy is Never; reject command",
	"exec command rejected by user",
	"patch rejected by user",
	"rejected by user approval settings",
}

// Codex classifies the output of a Codex (0.171) tool call (see the
// package doc).
func Codex(r Result) Outcome {
	text := r.Text
	if h, ok := ParseCodexHeader(text); ok {
		o := success(h.Output)
		o.DurationMs, o.DurationKnown = h.WallMs, h.WallKnown
		o.Truncated = strings.HasPrefix(h.Output, codexTruncated)
		if h.ExitCode != nil && *h.ExitCode != 0 {
			o.Kind, o.Code = trajectory.FailureToolError, exitCode(*h.ExitCode)
		}
		if h.ExitCode == nil && !h.Running {
			o.Kind = trajectory.FailureUnknown
		}
		return o
	}
	switch {
	case strings.HasPrefix(text, "unsupported call: "), strings.HasPrefix(text, "unsupported custom tool call: "):
		return failure(trajectory.FailureNotFound, "", text)
	case strings.HasPrefix(text, "failed to parse function arguments"), strings.HasPrefix(text, "failed to parse "):
		return failure(trajectory.FailureInvalidInput, "", text)
	}
	for _, w := range codexRefusals {
		if strings.Contains(text, w) {
			return failure(trajectory.FailurePermissionDenied, "", text)
		}
	}
	switch {
	case strings.HasPrefix(text, "Success. Updated the following files:"), text == "Plan updated":
		return success(text)
	case strings.HasPrefix(text, "apply_patch verification failed"):
		return failure(trajectory.FailureToolError, "", text)
	}
	if r.IsError {
		return failure(trajectory.FailureToolError, "", text)
	}
	return failure(trajectory.FailureUnknown, "", text)
}
