package tooloutcome

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// The texts below are the real clients' own, from the transcripts in
// importer/testdata (Claude Code 2.1.328, Codex 0.171.0).

func TestClaudeCodeOutcomes(t *testing.T) {
	read := json.RawMessage(`{"file_path":"/w/notes.txt"}`)
	cases := []struct {
		name  string
		r     Result
		kind  trajectory.FailureKind
		code  string
		trunc bool
		full  int64
	}{
		{"a read", Result{Tool: "Read", Input: read, Text: "1\thello\n"}, "", "", false, 0},
		{"an unknown tool", Result{Tool: "Frobnicate", Input: json.RawMessage(`{"target":"x"}`), IsError: true,
			Text: "<tool_use_error>Error: No such tool available: Frobnicate</tool_use_error>"}, trajectory.FailureNotFound, "", false, 0},
		{"an empty input", Result{Tool: "Read", Input: json.RawMessage(`{}`), IsError: true,
			Text: "<tool_use_error>InputValidationError: Read failed due to the following issue:\nThe required parameter `file_path` is missing</tool_use_error>"}, trajectory.FailureInvalidInput, "", false, 0},
		{"a cut input", Result{Tool: "Write", IsError: true, Text: "<tool_use_error>something</tool_use_error>"}, trajectory.FailureInvalidInput, "", false, 0},
		{"a failed command", Result{Tool: "Bash", Input: json.RawMessage(`{"command":"cat missing.txt"}`), IsError: true,
			Text: "Exit code 1\ncat: missing.txt: No such file or directory"}, trajectory.FailureToolError, "exit:1", false, 0},
		{"a denied write", Result{Tool: "Write", Input: read, IsError: true,
			Text: "Claude requested permissions to write to /w/out.txt, but you haven't granted it yet."}, trajectory.FailurePermissionDenied, "", false, 0},
		{"a denied bash", Result{Tool: "Bash", Input: read, IsError: true,
			Text: "touch in '/w/x' needs approval. The path is inside the working directories for this session ('/w'), and Claude Code asks before a shell command creates, changes or removes files there."}, trajectory.FailurePermissionDenied, "", false, 0},
		{"a deny rule", Result{Tool: "Bash", Input: read, IsError: true, Text: "Permission to use Bash with command rm -rf x has been denied."}, trajectory.FailurePermissionDenied, "", false, 0},
		{"a user's rejection", Result{Tool: "Edit", Input: read, IsError: true,
			Text: "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing"}, trajectory.FailurePermissionDenied, "", false, 0},
		{"a missing file", Result{Tool: "Read", Input: read, IsError: true, Text: "File does not exist. Note: your current working directory is /w."}, trajectory.FailureToolError, "ENOENT", false, 0},
		{"a tool's own error about permissions", Result{Tool: "Bash", Input: read, IsError: true, Text: "Exit code 1\nrm: cannot remove 'x': Permission denied"}, trajectory.FailureToolError, "exit:1", false, 0},
		{"an error without a known wording", Result{Tool: "WebFetch", Input: read, IsError: true, Text: "Request failed with status code 404"}, trajectory.FailureToolError, "", false, 0},
		{"an output saved elsewhere", Result{Tool: "Bash", Input: read,
			Text: "<persisted-output>\nOutput too large (340.7KB). Full output saved to: /h/tool-results/bto5jwwl9.txt\n\nPreview (first 2KB):\n1\n2\n"}, "", "", true, 348876},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := ClaudeCode(tc.r)
			if o.Kind != tc.kind || o.Code != tc.code || o.Truncated != tc.trunc || o.FullBytes != tc.full {
				t.Errorf("ClaudeCode = %+v, want kind %q code %q truncated %v full %d", o, tc.kind, tc.code, tc.trunc, tc.full)
			}
			if o.Text != tc.r.Text {
				t.Errorf("text %q, want the client's %q", o.Text, tc.r.Text)
			}
		})
	}
}

func TestCodexOutcomes(t *testing.T) {
	cases := []struct {
		name, text string
		kind       trajectory.FailureKind
		code       string
		out        string
		wallMs     float64
		wall       bool
		trunc      bool
	}{
		{"a read", "Chunk ID: e55de1\nWall time: 0.2824 seconds\nProcess exited with code 0\nOriginal token count: 7\nOutput:\nhello from notes\nline two\n",
			"", "", "hello from notes\nline two\n", 282.4, true, false},
		{"cat missing", "Chunk ID: 62618b\nWall time: 0.0000 seconds\nProcess exited with code 1\nOriginal token count: 11\nOutput:\ncat: missing.txt: No such file or directory\n",
			trajectory.FailureToolError, "exit:1", "cat: missing.txt: No such file or directory\n", 0, true, false},
		{"a big output", "Chunk ID: d1ddad\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 87224\nOutput:\nWarning: truncated output (original token count: 87224)\nTotal output lines: 60000\n\n1\n2\n",
			"", "", "Warning: truncated output (original token count: 87224)\nTotal output lines: 60000\n\n1\n2\n", 0, true, true},
		{"a running process", "Chunk ID: a\nWall time: 1.0020 seconds\nProcess running with session ID 7\nOriginal token count: 0\nOutput:\n",
			"", "", "", 1002, true, false},
		{"an older header", "Exit code: 2\nWall time: 0.5 seconds\nOutput:\nboom\n", trajectory.FailureToolError, "exit:2", "boom\n", 500, true, false},
		{"an unknown tool", "unsupported call: frobnicate", trajectory.FailureNotFound, "", "unsupported call: frobnicate", 0, false, false},
		{"an empty input", "failed to parse function arguments: missing field `cmd` at line 1 column 2", trajectory.FailureInvalidInput, "", "failed to parse function arguments: missing field `cmd` at line 1 column 2", 0, false, false},
		{"a refused escalation", "approval policy is Never; reject command — you cannot ask for escalated permissions if the approval policy is Never",
			trajectory.FailurePermissionDenied, "", "approval policy is Never; reject command — you cannot ask for escalated permissions if the approval policy is Never", 0, false, false},
		{"a plan", "Plan updated", "", "", "Plan updated", 0, false, false},
		{"anything else", "it went fine, probably", trajectory.FailureUnknown, "", "it went fine, probably", 0, false, false},
		{"a header that is not one", "Output:\nhi", trajectory.FailureUnknown, "", "Output:\nhi", 0, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := Codex(Result{Tool: "exec_command", Input: json.RawMessage(`{"cmd":"x"}`), Text: tc.text})
			if o.Kind != tc.kind || o.Code != tc.code || o.Text != tc.out || o.DurationKnown != tc.wall || o.Truncated != tc.trunc ||
				(tc.wall && (o.DurationMs < tc.wallMs-0.01 || o.DurationMs > tc.wallMs+0.01)) {
				t.Errorf("Codex = %+v, want kind %q code %q text %q wall %v %.1f ms truncated %v", o, tc.kind, tc.code, tc.out, tc.wall, tc.wallMs, tc.trunc)
			}
		})
	}
}

func TestGenericAndOpenCodeOutcomes(t *testing.T) {
	if o := Anthropic(Result{Text: "x", IsError: true}); o.Kind != trajectory.FailureToolError {
		t.Errorf("Anthropic with is_error = %+v, want tool_error", o)
	}
	if o := Anthropic(Result{Text: "x"}); o.Failed() {
		t.Errorf("Anthropic without is_error = %+v, want success", o)
	}
	if o := OpenAI(Result{Text: "all good"}); o.Kind != trajectory.FailureUnknown {
		t.Errorf("OpenAI = %+v, want unknown: the wire has no error flag", o)
	}
	one, zero := 1, 0
	cases := []struct {
		name string
		r    Result
		kind trajectory.FailureKind
		code string
	}{
		{"a failing command, status completed", Result{Tool: "bash", Text: "cat: x: No such file", Exit: &one}, trajectory.FailureToolError, "exit:1"},
		{"a command that worked", Result{Tool: "bash", Text: "ok", Exit: &zero}, "", ""},
		{"an unknown tool renamed invalid", Result{Tool: OpenCodeInvalid, Text: "The arguments provided to the tool are invalid: Model tried to call unavailable tool 'frobnicate'. Available tools: bash, read."}, trajectory.FailureNotFound, ""},
		{"an unknown tool on the wire", Result{Tool: "frobnicate", Text: "The arguments provided to the tool are invalid: Model tried to call unavailable tool 'frobnicate'. Available tools: bash, read."}, trajectory.FailureNotFound, ""},
		{"an empty input", Result{Tool: "read", IsError: true, Text: "The read tool was called with invalid arguments: SchemaError(Missing key\n  at [\"filePath\"])."}, trajectory.FailureInvalidInput, ""},
		{"a command on the wire, whose exit is not there", Result{Tool: "bash", Text: "cat: x: No such file"}, trajectory.FailureUnknown, ""},
		{"a read on the wire", Result{Tool: "read", Text: "<path>/w/notes.txt</path>"}, "", ""},
		{"a cut-off call renamed invalid", Result{Tool: OpenCodeInvalid, Text: "The arguments provided to the tool are invalid: expected string"}, trajectory.FailureInvalidInput, ""},
		{"a rejection", Result{Tool: "write", IsError: true, Text: "The user rejected permission to use this specific tool call."}, trajectory.FailurePermissionDenied, ""},
		{"an error", Result{Tool: "read", IsError: true, Text: "File not found"}, trajectory.FailureToolError, ""},
	}
	for _, tc := range cases {
		if o := OpenCode(tc.r); o.Kind != tc.kind || o.Code != tc.code {
			t.Errorf("%s: OpenCode = %+v, want %q %q", tc.name, o, tc.kind, tc.code)
		}
	}
}

func TestForUserAgent(t *testing.T) {
	deny := Result{Text: "Claude requested permissions to use Foo, but you haven't granted it yet.", IsError: true}
	cases := []struct {
		ua       string
		messages bool
		want     trajectory.FailureKind
	}{
		{"claude-cli/2.1.328 (external, sdk-cli)", true, trajectory.FailurePermissionDenied},
		{"my-agent/1", true, trajectory.FailureToolError},
		{"codex_exec/0.171.0 (Ubuntu 24.4.0; x86_64) dumb", false, trajectory.FailureToolError}, // flagged, in no wording Codex has
		{"", false, trajectory.FailureUnknown},
	}
	for _, tc := range cases {
		if got := ForUserAgent(tc.ua, tc.messages)(deny); got.Kind != tc.want {
			t.Errorf("ForUserAgent(%q, %v) gave %q, want %q", tc.ua, tc.messages, got.Kind, tc.want)
		}
	}
}

// FuzzParseCodexHeader: the header parser never panics, accepts only text
// that ends its header with "Output:", and gives back a suffix of it.
func FuzzParseCodexHeader(f *testing.F) {
	f.Add("Chunk ID: e55de1\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 7\nOutput:\nhello\n")
	f.Add("Exit code: 2\nWall time: 0.5 seconds\nOutput:\nboom")
	f.Add("Process running with session ID 3\nOutput:\n")
	f.Add("Wall time: -1 seconds\nOutput:\n")
	f.Fuzz(func(t *testing.T, text string) {
		h, ok := ParseCodexHeader(text)
		if !ok {
			return
		}
		if !strings.HasSuffix(text, h.Output) || !strings.Contains(text, "Output:") {
			t.Fatalf("parsed %q into %+v", text, h)
		}
		if h.WallMs < 0 {
			t.Fatalf("negative wall time from %q", text)
		}
		_ = Codex(Result{Text: text})
	})
}
