package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/harness"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// trustHint is how every note about something left out ends.
const trustHint = "use --trust-recording if you trust this recording"

// workspaceDir returns the directory the replay runs in and whether it is
// a temporary one Run made. A --workspace given for a snapshot must be
// empty or missing, checked here so the mistake is an input error.
func workspaceDir(opts RunOptions, rec recording) (dir string, temporary bool, err error) {
	if rec.snapshot == "" {
		if opts.Workspace == "" {
			return "", false, fmt.Errorf("%s: %w: it has no workspace snapshot; give --workspace DIR with the workspace as it was when the session started", opts.Recording, ErrNotReplayable)
		}
		info, err := os.Stat(opts.Workspace)
		if err != nil || !info.IsDir() {
			return "", false, fmt.Errorf("%w: --workspace %s: give the directory the recorded session worked in (%v)", ErrInput, opts.Workspace, describe(err, "not a directory"))
		}
		return opts.Workspace, false, nil
	}
	if opts.Workspace == "" {
		d, err := os.MkdirTemp("", "retrace-replay-")
		return d, err == nil, err
	}
	names, err := os.ReadDir(opts.Workspace)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return opts.Workspace, false, nil
	case err != nil:
		return "", false, fmt.Errorf("%w: --workspace %s: %v; give an empty or new directory to restore the recorded workspace into", ErrInput, opts.Workspace, err)
	case len(names) > 0:
		return "", false, fmt.Errorf("%w: --workspace %s is not empty; give an empty or new directory to restore the recorded workspace into (or leave --workspace out for a temporary one)", ErrInput, opts.Workspace)
	}
	return opts.Workspace, false, nil
}

func describe(err error, otherwise string) string {
	if err != nil {
		return err.Error()
	}
	return otherwise
}

// restore recreates the recorded workspace in dst and returns a note for
// every entry the snapshot did not capture, so a divergence caused by a
// missing file is explained rather than silent.
func restore(blobs *recorder.Blobs, ref, dst string) ([]string, error) {
	if err := recorder.RestoreWorkspace(blobs, ref, dst); err != nil {
		// A snapshot that cannot be restored — a missing or corrupt blob, a
		// manifest of another version, an entry that would write outside
		// dst — is a recording that cannot be replayed as it is.
		hint := "check that the recording's .blobs directory sits next to it, as retrace run wrote it"
		if errors.Is(err, recorder.ErrUnsafeSnapshot) {
			hint = "the recording was damaged or crafted, so it is not replayed"
		}
		return nil, fmt.Errorf("%w: restore the recorded workspace: %w; %s", ErrInput, err, hint)
	}
	data, err := blobs.Get(ref)
	if err != nil {
		return nil, fmt.Errorf("restore the recorded workspace: %w", err)
	}
	var m recorder.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("restore the recorded workspace: the manifest %s: %w", ref, err)
	}
	var notes []string
	for _, e := range m.Entries {
		if e.Skipped != "" {
			notes = append(notes, fmt.Sprintf("not captured: %s (%s); the recorded session had it, the replay does not, so a call that reads it differs", e.Path, e.Skipped))
		}
	}
	if len(m.LeftOut) > 0 {
		// Left out by design (a .git directory, what .gitignore
		// matches): a replayed `git status` or `ls build` differs.
		why := map[string]string{recorder.LeftOutGit: "always left out", recorder.LeftOutGitignore: ".gitignore"}
		parts := make([]string, 0, len(m.LeftOut))
		for _, l := range m.LeftOut {
			w := why[l.Why]
			if w == "" {
				w = l.Why
			}
			parts = append(parts, fmt.Sprintf("%s (%s)", l.Path, w))
		}
		more := ""
		if m.LeftOutMore > 0 {
			more = fmt.Sprintf(" and %d more", m.LeftOutMore)
		}
		notes = append(notes, fmt.Sprintf("not captured: %s%s; the recorded session had them, the replay does not, so a call that reads them differs", strings.Join(parts, ", "), more))
	}
	return notes, nil
}

// setup is the configuration a replay runs under and what it left out.
type setup struct {
	cfg config.Config
	// name names cfg's files in messages, and sources say which layer
	// each setting came from.
	name    string
	sources map[string]string
	answers *harness.RecordedAnswers
	notes   []string
	// modeRefused says a note already explains that the recording's mode
	// was not applied.
	modeRefused bool
	// leftOut are the recording's settings not applied, whatIf the
	// settings the what-if file changed.
	leftOut []string
	whatIf  []string
}

// trustOf is how far a replay trusts the recording: all of it with
// TrustRecording; the user's own (its signature checks with the user's
// key) except what runs code outside the throwaway workspace; anyone
// else's only to restrict.
func trustOf(opts RunOptions, rec *recording) config.Trust {
	switch {
	case opts.TrustRecording:
		return config.TrustAll
	case opts.Key.Verify(rec.session, rec.start):
		return config.TrustOwn
	}
	return config.TrustStranger
}

// loadConfig chooses the replay's configuration (config.Resolve, as run
// and eval do): the configuration the recording ran under, from
// session_start (an older recording's: the restored workspace's
// retrace.yaml), as far as trustOf allows, with the what-if file, when one
// is given, layered over it (trusted: the user named it). The person's
// recorded answers are given again to a recording trusted that far.
func loadConfig(opts RunOptions, ws string, rec *recording) (setup, error) {
	var s setup
	trust := trustOf(opts, rec)
	recorded := config.Recorded{Name: "the recording's configuration (session_start.config)", Data: rec.start.Config,
		Sources: rec.start.ConfigSources, Trust: trust}
	if len(rec.start.Config) == 0 {
		// Recorded before session_start carried its configuration: the
		// workspace's own file is the best witness left.
		recorded.Name = config.FileName
		data, err := os.ReadFile(filepath.Join(ws, config.FileName))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			recorded.Name = "(defaults)"
		case err != nil:
			return s, fmt.Errorf("the recording's %s: %w", config.FileName, err)
		}
		recorded.Data = data
	}
	res, err := config.Resolve(config.Sources{Explicit: opts.Config, Recorded: &recorded,
		Defaults: config.Config{Limits: recordedLimits(rec.start.Limits)}, DefaultsName: "session_start.limits"})
	switch {
	case err != nil && opts.Config != "" && !strings.Contains(err.Error(), recorded.Name):
		return s, fmt.Errorf("%w: --config: %w", ErrInput, err)
	case err != nil:
		return s, fmt.Errorf("%w: %w; replay it with --config FILE", ErrInput, err)
	}
	s.cfg, s.name, s.sources, s.whatIf = res.Config, res.Name(), res.Sources, res.WhatIf
	for _, r := range res.Refused {
		s.leftOut = append(s.leftOut, r.Field+": "+r.Value)
	}
	s.notes = append(s.notes, leftOutNotes(recorded, res.Config, res.Refused)...)
	s.modeRefused = slices.ContainsFunc(res.Refused, func(r config.Refused) bool { return r.Field == "permissions.mode" })
	if len(res.WhatIf) > 0 {
		s.notes = append(s.notes, fmt.Sprintf("what-if: %s changes %s over the recording's configuration; the divergences below are its effect", opts.Config, strings.Join(res.WhatIf, ", ")))
	}
	answers := harness.NewRecordedAnswers(rec.events)
	approved := answers.Approved()
	switch {
	case trust != config.TrustStranger && (len(approved) > 0 || rec.start.Mode == trajectory.ModeInteractive):
		// The person answered then; their answers stand, and a question
		// they were never asked is refused, as they did not answer it.
		s.answers = answers
	case len(approved) > 0:
		s.notes = append(s.notes, fmt.Sprintf("the recording shows a person approving %s (%s); not re-approved: a call that needs a person is refused, as in a headless session (%s)",
			plural(len(approved), "call"), strings.Join(approved, ", "), trustHint))
	}
	return s, nil
}

// leftOutNotes says what of the recording's configuration was not
// applied: first what would have run, then every other refused setting,
// and that the divergences they cause are expected.
func leftOutNotes(r config.Recorded, applied config.Config, refused []config.Refused) []string {
	if len(refused) == 0 {
		return nil
	}
	var notes []string
	var hooks, servers int
	for _, f := range refused {
		switch {
		case strings.HasPrefix(f.Field, "hooks["):
			hooks++
		case strings.HasPrefix(f.Field, "mcp_servers["):
			servers++
		}
	}
	var parts []string
	if hooks > 0 {
		parts = append(parts, plural(hooks, "hook"))
	}
	if servers > 0 {
		parts = append(parts, plural(servers, "MCP server"))
	}
	if len(parts) > 0 {
		notes = append(notes, fmt.Sprintf("the recording's config has %s; not run (%s)", strings.Join(parts, " and "), trustHint))
	}
	for _, f := range refused {
		if strings.HasPrefix(f.Field, "hooks[") || strings.HasPrefix(f.Field, "mcp_servers[") {
			continue
		}
		note := "not applied: " + f.String()
		if f.Field == "permissions.mode" {
			// The general reason speaks of files; for a recording what
			// matters is what the replay does instead.
			note = fmt.Sprintf("not applied: %s: %s: %s; the replay runs in %s mode, and a call that needs a person is refused as in a headless session",
				f.Where(), f.Field, f.Value, modeOf(applied))
		}
		notes = append(notes, note+" ("+trustHint+")")
	}
	who := "it is not signed with your key, so it may be someone else's"
	if r.Trust == config.TrustOwn {
		who = "it is your own recording, but hooks and MCP servers run code outside the replay's workspace"
	}
	return append(notes, fmt.Sprintf("divergences these settings cause are expected, not a what-if (%s)", who))
}

// modeOf is the permission mode a configuration runs in.
func modeOf(c config.Config) trajectory.PermissionMode {
	if c.Permissions.Mode == "" {
		return trajectory.PermDefault
	}
	return c.Permissions.Mode
}

// readRecording reads the trajectory to replay. Every way the path can be
// wrong — missing, a directory, a symlink loop, not a trajectory, a line
// too long — is an ErrInput error that says what to give instead. A named
// pipe is read as it comes; ctx ends the wait for its writer and the read.
func readRecording(ctx context.Context, path string) ([]trajectory.Event, error) {
	info, err := os.Stat(path)
	switch {
	case err != nil && isLoop(err):
		return nil, fmt.Errorf("%w: %s is a symlink loop; give the trajectory file itself", ErrInput, path)
	case err != nil:
		return nil, fmt.Errorf("%w: %w; give a trajectory file (.jsonl) written by retrace run", ErrInput, err)
	case info.IsDir():
		return nil, fmt.Errorf("%w: %s is a directory; replay takes one trajectory file, e.g. %s", ErrInput, path, filepath.Join(path, "<session>.jsonl"))
	case !info.Mode().IsRegular() && info.Mode()&fs.ModeNamedPipe == 0:
		return nil, fmt.Errorf("%w: %s is not a regular file (%s); give a trajectory file (.jsonl) written by retrace run", ErrInput, path, info.Mode().Type())
	}
	f, err := openRecording(ctx, path, info.Mode()&fs.ModeNamedPipe != 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A pipe's writer may stall: closing the file ends the read.
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	events, err := decodeAll(f, path)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("read %s: %w", path, context.Cause(ctx))
	}
	switch {
	case err == nil:
		return events, nil
	case errors.Is(err, trajectory.ErrLineTooLong):
		return nil, fmt.Errorf("%w: %w; this is not a retrace trajectory, or it is damaged: check it with retrace validate", ErrInput, err)
	case errors.Is(err, trajectory.ErrBinary), errors.Is(err, trajectory.ErrMalformed), errors.Is(err, trajectory.ErrMissingField),
		errors.Is(err, trajectory.ErrUnknownValue), errors.Is(err, trajectory.ErrUnsupportedVersion):
		return nil, fmt.Errorf("%w: %w", ErrInput, err)
	}
	return nil, fmt.Errorf("%w: read %s: %w", ErrInput, path, err)
}

// openRecording opens the recording; a named pipe's open waits for a
// writer, and ctx ends that wait.
func openRecording(ctx context.Context, path string, pipe bool) (*os.File, error) {
	if !pipe {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("%w: read %s: %w", ErrInput, path, err)
		}
		return f, nil
	}
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			return nil, fmt.Errorf("%w: read %s: %w", ErrInput, path, o.err)
		}
		return o.f, nil
	case <-ctx.Done():
		// Release the waiting open with a writer that comes and goes,
		// so that no goroutine stays blocked in it.
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, fmt.Errorf("read %s: no writer opened the pipe: %w", path, context.Cause(ctx))
	}
}

// decodeAll decodes every event of r; the first malformed line is an
// error, a torn last line is not (as trajectory.ReadFile).
func decodeAll(r io.Reader, name string) ([]trajectory.Event, error) {
	dec := trajectory.NewDecoder(r, name)
	var out []trajectory.Event
	for {
		ev, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

// isLoop reports a symlink loop (ELOOP from the kernel).
func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
