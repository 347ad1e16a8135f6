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

	"github.com/retrace-dev/retrace/harness"
	"github.com/retrace-dev/retrace/trajectory"
)

// loadContinuation finds the session arg names — a session id in runs, or
// a trajectory file — and rebuilds its conversation (harness.
// LoadContinuation, which a replay of the continued session shares). A
// session that is unknown, still running or torn, or that cannot be
// carried on, is an input error that says what to do; nothing is written.
func loadContinuation(runs, arg string) (harness.Continuation, error) {
	path := arg
	if !strings.HasSuffix(arg, trajectory.Ext) && !strings.ContainsRune(arg, filepath.Separator) {
		path = filepath.Join(runs, arg+trajectory.Ext)
	}
	c, err := harness.LoadContinuation(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c, invalid(fmt.Errorf("--continue %s: no recorded session %s (looked for %s); give a session id from the runs directory (--runs) or a trajectory file", arg, arg, path))
	case err != nil:
		return c, invalid(fmt.Errorf("--continue %s: %w", arg, err))
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
