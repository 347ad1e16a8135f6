package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/agent/permission"
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
	return notes, nil
}

// setup is the configuration a replay runs under and what it left out.
type setup struct {
	cfg config.Config
	// name names cfg's file in messages.
	name    string
	answers *answers
	notes   []string
	// modeRefused says a note already explains that the recording's mode
	// was not applied.
	modeRefused bool
}

// loadConfig chooses the replay's configuration: the what-if file when one
// is given (trusted: the user named it), else the restored workspace's
// retrace.yaml, which is the recording's and so restricted unless
// TrustRecording. The person's recorded approvals are re-applied only to a
// trusted recording.
func loadConfig(opts RunOptions, ws string, events []trajectory.Event) (setup, error) {
	var s setup
	name := opts.Config
	switch {
	case opts.Config != "":
		f, err := config.LoadFile(opts.Config)
		if err != nil {
			return s, fmt.Errorf("%w: --config: %w", ErrInput, err)
		}
		s.cfg = f.Config
	default:
		name = config.FileName
		data, err := os.ReadFile(filepath.Join(ws, config.FileName))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			name = "(defaults)"
		case err != nil:
			return s, fmt.Errorf("the recording's %s: %w", config.FileName, err)
		default:
			f, err := config.ParseFile(data, config.FileName)
			if err != nil {
				return s, fmt.Errorf("%w: the recording's configuration: %w; replay it with --config FILE", ErrInput, err)
			}
			s.cfg = f.Config
			if !opts.TrustRecording {
				// The ceiling is accept_edits, not default: a replay
				// runs in a workspace of its own that it throws away,
				// writes outside a workspace are denied in every mode,
				// and accept_edits never lets bash run unasked, so the
				// recording's edits may land there as they did when it
				// was made. Bypass, allow rules, hooks and MCP servers
				// run code on this machine and stay refused.
				var refused []config.Refused
				s.cfg, refused = config.Restrict(config.Config{Permissions: permission.Config{Mode: trajectory.PermAcceptEdits}}, f)
				if f.Config.Permissions.Mode == "" {
					s.cfg.Permissions.Mode = "" // the recording ran in default mode
				}
				s.notes = append(s.notes, untrustedNotes(f.Config, s.cfg, refused)...)
				s.modeRefused = slices.ContainsFunc(refused, func(r config.Refused) bool { return r.Field == "permissions.mode" })
			}
		}
	}
	approved := recordedApprovals(events)
	switch {
	case opts.TrustRecording && len(approved) > 0:
		s.answers = &answers{approved: approved}
	case len(approved) > 0:
		s.notes = append(s.notes, fmt.Sprintf("the recording shows a person approving %s (%s); not re-approved: a call that needs a person is refused, as in a headless session (%s)",
			plural(len(approved), "call"), strings.Join(sortedKeys(approved), ", "), trustHint))
	}
	// The session builder checks the rules, hooks and MCP servers.
	s.name = name
	return s, nil
}

// untrustedNotes says what of an untrusted recording's configuration was
// not applied: first what would have run, then every refused setting.
func untrustedNotes(c, restricted config.Config, refused []config.Refused) []string {
	var notes []string
	var parts []string
	if n := len(c.Hooks); n > 0 {
		parts = append(parts, plural(n, "hook"))
	}
	if n := len(c.MCPServers); n > 0 {
		parts = append(parts, plural(n, "MCP server"))
	}
	if len(parts) > 0 {
		notes = append(notes, fmt.Sprintf("the recording's config has %s; not run (%s)", strings.Join(parts, " and "), trustHint))
	}
	for _, r := range refused {
		if strings.HasPrefix(r.Field, "hooks[") || strings.HasPrefix(r.Field, "mcp_servers[") {
			continue
		}
		note := "not applied: " + r.String()
		if r.Field == "permissions.mode" {
			// The general reason speaks of files; for a recording what
			// matters is what the replay does instead.
			note = fmt.Sprintf("not applied: %s: %s: %s; the replay runs in %s mode, and a call that needs a person is refused as in a headless session",
				r.Where(), r.Field, r.Value, modeOf(restricted))
		}
		notes = append(notes, note+" ("+trustHint+")")
	}
	return notes
}

// recordedApprovals returns, for every call the recording shows a person
// approving, the input of its recorded tool_call.
func recordedApprovals(events []trajectory.Event) map[string]json.RawMessage {
	inputs := map[string]json.RawMessage{}
	approved := map[string]json.RawMessage{}
	for _, ev := range events {
		switch p := ev.Payload.(type) {
		case *trajectory.ToolCall:
			inputs[p.ToolUseID] = p.Input
		case *trajectory.PermissionAllow:
			if p.Source == trajectory.SourceUser {
				approved[p.ToolUseID] = inputs[p.ToolUseID]
			}
		}
	}
	return approved
}

// answers replays a person's recorded answers to permission prompts: a call
// the recording shows a person approving is approved again only when its
// input is byte-identical to the recorded call's, so a what-if change, a
// rewriting hook or a tampered response cannot borrow the approval;
// anything else is refused, as in a headless session.
type answers struct {
	approved map[string]json.RawMessage
	mu       sync.Mutex
	differ   []string
}

// Confirm implements executor.Prompter.
func (a *answers) Confirm(_ context.Context, p executor.Prompt) (bool, error) {
	want, ok := a.approved[p.ToolUseID]
	if !ok {
		return false, nil
	}
	if len(want) == 0 || !bytes.Equal(want, p.Input) {
		a.mu.Lock()
		a.differ = append(a.differ, p.ToolUseID)
		a.mu.Unlock()
		return false, nil
	}
	return true, nil
}

// mismatches says which recorded approvals were not re-applied because the
// call's input had changed.
func (a *answers) mismatches() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var notes []string
	for _, id := range a.differ {
		notes = append(notes, fmt.Sprintf("%s: the recorded approval was not re-applied, because the call's input differs from the one the person approved", id))
	}
	return notes
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
// too long — is an ErrInput error that says what to give instead.
func readRecording(path string) ([]trajectory.Event, error) {
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
	events, err := trajectory.ReadFile(path)
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

// isLoop reports a symlink loop (ELOOP from the kernel).
func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
