package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/trajectory"
)

// ErrContinuation is wrapped by LoadContinuation's errors for a recorded
// session that cannot be carried on: torn, still running, without a
// session_start or a workspace, or whose conversation cannot be rebuilt.
// A missing file wraps fs.ErrNotExist instead.
var ErrContinuation = errors.New("the session cannot be carried on")

// Continuation is a recorded session that a new session carries on:
// retrace run --continue starts one from it, and a replay of a continued
// recording rebuilds the same one, so that both give the model the same
// conversation (Spec.History, Spec.Continues).
type Continuation struct {
	// Path is its trajectory file, and Dir the directory the continued
	// session is recorded in: the same, so that the link (session_start's
	// continues) resolves there, for a replay as for a person.
	Path, Dir string
	// Session is its session id, Workspace the directory it ran in.
	Session   string
	Workspace string
	// History is its conversation, as the next request would send it.
	History []trajectory.Message
}

// LoadContinuation reads the recorded session at path and rebuilds its
// conversation. A session that is torn, still running or crashed, that
// records no workspace, or whose conversation cannot be rebuilt is an
// error wrapping ErrContinuation that says what to do; nothing is written.
func LoadContinuation(path string) (Continuation, error) {
	f, err := os.Open(path)
	if err != nil {
		return Continuation{}, err
	}
	defer f.Close()
	dec := trajectory.NewDecoder(f, path)
	var events []trajectory.Event
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Continuation{}, fmt.Errorf("%w: %w; only a valid trajectory can be continued", ErrContinuation, err)
		}
		events = append(events, ev)
	}
	if w := dec.Warnings(); len(w) > 0 {
		return Continuation{}, fmt.Errorf("%w: %s: the session is still being recorded, or its run crashed; continue a session that ended (retrace validate %s says more)", ErrContinuation, w[0], path)
	}
	c := Continuation{Path: path, Dir: filepath.Dir(path)}
	var ended bool
	for _, ev := range events {
		switch p := ev.Payload.(type) {
		case *trajectory.SessionStart:
			c.Session, c.Workspace = ev.Session, p.Workspace
		case *trajectory.SessionEnd:
			ended = true
		}
	}
	switch {
	case c.Session == "":
		return Continuation{}, fmt.Errorf("%w: %s has no session_start; it is not a recorded session", ErrContinuation, path)
	case !ended:
		return Continuation{}, fmt.Errorf("%w: %s has no session_end: the session is still running, or it crashed before it ended; continue a session that ended", ErrContinuation, path)
	case c.Workspace == "":
		return Continuation{}, fmt.Errorf("%w: %s does not record its workspace, so the session cannot be carried on where it ran", ErrContinuation, path)
	}
	if c.History, err = agent.ConversationOf(events); err != nil {
		return Continuation{}, fmt.Errorf("%w: %s: %w", ErrContinuation, path, err)
	}
	return c, nil
}

// ContinuationOf is the trajectory file of the session a recording at
// path continues (session_start's continues): the file of that id next to
// it, where retrace run --continue records a continued session.
func ContinuationOf(path, continues string) string {
	return filepath.Join(filepath.Dir(path), continues+trajectory.Ext)
}
