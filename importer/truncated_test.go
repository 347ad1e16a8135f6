package importer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// A transcript cut off mid-line (the client was killed while writing)
// imports what it holds: the cut line is one LineError naming file:line,
// and the session written is a valid trajectory with the calls before it.
func TestATruncatedTranscriptImportsWhatItHoldsAndNamesTheCutLine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format Format
		src    string
	}{
		{"Claude Code", ClaudeCode, ccFixture},
		{"Codex", Codex, cxFixture},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, err := os.ReadFile(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			// Cut in the middle of the line that holds 70% of the bytes.
			cut := len(whole) * 7 / 10
			if whole[cut] == '\n' {
				cut--
			}
			lastLine := bytes.Count(whole[:cut], []byte("\n")) + 1
			path := filepath.Join(t.TempDir(), filepath.Base(tc.src))
			if err := os.WriteFile(path, whole[:cut], 0o600); err != nil {
				t.Fatal(err)
			}
			clean := importAll(t, tc.format, t.TempDir(), tc.src)
			rep := importAll(t, tc.format, t.TempDir(), path)
			if len(rep.Problems) != 1 {
				t.Fatalf("problems %v, want only the cut line", rep.Problems)
			}
			var le *LineError
			if !errors.As(rep.Problems[0], &le) || le.File != path || le.Line != lastLine {
				t.Errorf("problem %v, want a LineError for %s:%d", rep.Problems[0], path, lastLine)
			}
			if len(rep.Sessions) == 0 {
				t.Fatal("no session imported from the truncated transcript")
			}
			main := rep.Sessions[0]
			if main.ToolCalls == 0 || main.ToolCalls > clean.Sessions[0].ToolCalls {
				t.Errorf("imported %d tool calls from the cut transcript, want between 1 and the whole one's %d", main.ToolCalls, clean.Sessions[0].ToolCalls)
			}
			for _, s := range rep.Sessions {
				fr, err := trajectory.ValidateFile(s.Path)
				if err != nil || len(fr.Problems) > 0 {
					t.Errorf("%s does not validate: %v %v", s.Path, err, fr.Problems)
				}
			}
		})
	}
}
