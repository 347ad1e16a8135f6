package recorder

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// NotReplayableFile is the name of the file that marks the recordings of
// a directory as not made by retrace's runtime, so that retrace replay
// lists them as such instead of failing them: the failure museum's
// exhibits, whose trajectories were written by hand to show a fault the
// runtime cannot produce, are kept in a directory of their own under an
// eval's --out with this file beside them. Its first line says why.
const NotReplayableFile = "NOT-REPLAYABLE"

// MarkNotReplayable writes dir's NotReplayableFile with reason.
func MarkNotReplayable(dir, reason string) error {
	reason = strings.ReplaceAll(strings.TrimSpace(reason), "\n", " ")
	if err := os.WriteFile(filepath.Join(dir, NotReplayableFile), []byte(reason+"\n"), 0o644); err != nil {
		return fmt.Errorf("recorder: mark %s not replayable: %w", dir, err)
	}
	return nil
}

// NotReplayable returns why the recording at path cannot be replayed, when
// its directory carries a NotReplayableFile; ok is false otherwise. A
// marker that cannot be read counts as absent, so the recording is
// replayed (and fails) like any other.
func NotReplayable(path string) (reason string, ok bool) {
	data, err := os.ReadFile(filepath.Join(filepath.Dir(path), NotReplayableFile))
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	if line = strings.TrimSpace(line); line == "" {
		line = "marked not replayable"
	}
	return line, true
}
