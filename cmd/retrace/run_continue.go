package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/trajectory"
)

// continuation is a recorded session that retrace run --continue carries on.
type continuation struct {
	// path is its trajectory file, and dir the directory the continued
	// session is recorded in: the same, so that the link (session_start's
	// continues) resolves there, for a replay as for a person.
	path, dir string
	session   string
	workspace string
	history   []trajectory.Message
}

// loadContinuation finds the session arg names — a session id in runs, or
// a trajectory file — and rebuilds its conversation. A session that is
// unknown, still running or torn, or that cannot be carried on, is an
// input error that says what to do; nothing is written.
func loadContinuation(runs, arg string) (continuation, error) {
	path := arg
	if !strings.HasSuffix(arg, trajectory.Ext) && !strings.ContainsRune(arg, filepath.Separator) {
		path = filepath.Join(runs, arg+trajectory.Ext)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return continuation{}, invalid(fmt.Errorf("--continue %s: no recorded session %s (looked for %s); give a session id from the runs directory (--runs) or a trajectory file", arg, arg, path))
	}
	if err != nil {
		return continuation{}, invalid(fmt.Errorf("--continue %s: %w", arg, err))
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
			return continuation{}, invalid(fmt.Errorf("--continue: %w; only a valid trajectory can be continued", err))
		}
		events = append(events, ev)
	}
	if w := dec.Warnings(); len(w) > 0 {
		return continuation{}, invalid(fmt.Errorf("--continue: %s: the session is still being recorded, or its run crashed; continue a session that ended (retrace validate %s says more)", w[0], path))
	}
	c := continuation{path: path, dir: filepath.Dir(path)}
	var ended bool
	for _, ev := range events {
		switch p := ev.Payload.(type) {
		case *trajectory.SessionStart:
			c.session, c.workspace = ev.Session, p.Workspace
		case *trajectory.SessionEnd:
			ended = true
		}
	}
	switch {
	case c.session == "":
		return continuation{}, invalid(fmt.Errorf("--continue: %s has no session_start; it is not a recorded session", path))
	case !ended:
		return continuation{}, invalid(fmt.Errorf("--continue: %s has no session_end: the session is still running, or it crashed before it ended; continue a session that ended", path))
	case c.workspace == "":
		return continuation{}, invalid(fmt.Errorf("--continue: %s does not record its workspace, so the session cannot be carried on where it ran", path))
	}
	if c.history, err = agent.ConversationOf(events); err != nil {
		return continuation{}, invalid(fmt.Errorf("--continue: %s: %w", path, err))
	}
	return c, nil
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	ia, err := os.Stat(a)
	if err != nil {
		return false
	}
	ib, err := os.Stat(b)
	return err == nil && os.SameFile(ia, ib)
}

// promptReader reads a person's prompts, one a line, for retrace run -i.
// The permission prompter reads its answers from the same reader, so the
// two never take each other's lines.
type promptReader struct {
	in  *bufio.Reader
	out io.Writer
}

// next asks for the next prompt; ok is false at the end of the input.
// Blank lines are skipped.
func (p *promptReader) next(ctx context.Context) (string, bool) {
	for ctx.Err() == nil {
		fmt.Fprint(p.out, "\n> ")
		line, err := p.in.ReadString('\n')
		if text := strings.TrimSpace(line); text != "" {
			return text, true
		}
		if err != nil {
			fmt.Fprintln(p.out)
			return "", false
		}
	}
	return "", false
}
