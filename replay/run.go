package replay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/compare"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// ErrNotReplayable is wrapped by Run's errors for a recording that cannot be
// replayed as it is (no session_start, no request, no workspace).
var ErrNotReplayable = errors.New("recording cannot be replayed")

// ErrInput is wrapped by Run's errors for input the caller has to fix: a
// recording that cannot be read as a trajectory, a workspace snapshot that
// would write outside its directory, a --workspace that is not empty, a
// configuration that is not valid. Each message says what to do.
var ErrInput = errors.New("bad replay input")

// RunOptions say what to replay and where.
type RunOptions struct {
	// Recording is the trajectory file of the session to replay.
	Recording string
	// Out is the directory the replay's own trajectory is written to; it
	// must not be the recording's directory, so nothing is written over
	// the original run.
	Out string
	// Workspace is where the recorded workspace snapshot is restored (it
	// must be empty or missing); "" means a new temporary directory,
	// removed when the replay ends unless Keep. A recording without a
	// snapshot runs in Workspace as it is.
	Workspace string
	// Keep keeps the temporary workspace after the replay.
	Keep bool
	// Config is a what-if configuration file, trusted like any file the
	// user names; "" means the retrace.yaml of the restored workspace, as
	// the recorded session had it, which is untrusted unless
	// TrustRecording.
	Config string
	// TrustRecording replays the recording as its author ran it: the
	// restored retrace.yaml applies as it is (its mode, allow rules, hooks
	// and MCP servers), and the person's recorded approvals are re-applied
	// to calls whose input is byte-identical to the approved one. Without
	// it, a recording is treated as someone else's: its configuration may
	// only restrict (config.Restrict), none of its hooks or MCP servers
	// run, no approval is re-applied (a call that needs a person is
	// refused, as in a headless session), and the report says what was
	// left out.
	TrustRecording bool
	// Compare tunes the comparison: the caller's normalisation rules
	// (after the configuration's replay.normalize), tool levels (over the
	// configuration's replay.tools) and NoDefaults. The workspace and blob
	// paths are rewritten, and $TMPDIR added to the temporary paths, by
	// Run itself.
	Compare compare.Options
}

// Result is a replay's outcome.
type Result struct {
	Report Report
	// Path is the replay's trajectory.
	Path string
	// Workspace is where it ran.
	Workspace string
	// Removed says the workspace was a temporary directory and is gone.
	Removed bool
	// End is how the replayed session ended.
	End agent.Result
}

// Run replays a recorded session through the real runtime: it restores the
// recorded workspace, answers every model request with the recorded
// responses (mockllm.Replay; a request past the recording is a replay
// miss, never a live call), records a new trajectory and compares the two.
// What the recording's own configuration would have run, and what its
// workspace snapshot left out, is said in Report.Notes.
func Run(ctx context.Context, opts RunOptions) (res Result, err error) {
	events, err := readRecording(opts.Recording)
	if err != nil {
		return Result{}, err
	}
	rec, err := inspect(events)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", opts.Recording, err)
	}
	if filepath.Clean(opts.Out) == filepath.Clean(filepath.Dir(opts.Recording)) {
		return Result{}, fmt.Errorf("%w: --out %s is the recording's own directory: write the replay elsewhere so the original run stays as it was", ErrInput, opts.Out)
	}
	blobs := recorder.OpenBlobs(recorder.BlobsDir(opts.Recording))
	ws, temporary, err := workspaceDir(opts, rec)
	if err != nil {
		return Result{}, err
	}
	if temporary && !opts.Keep {
		defer func() {
			if rerr := os.RemoveAll(ws); rerr != nil && err == nil {
				err = fmt.Errorf("remove the replay's temporary workspace %s: %w", ws, rerr)
			}
			res.Removed = true
		}()
	}
	var notes []string
	if rec.snapshot != "" {
		skipped, err := restore(blobs, rec.snapshot, ws)
		if err != nil {
			return Result{}, err
		}
		notes = append(notes, skipped...)
	}
	setup, err := loadConfig(opts, ws, events)
	if err != nil {
		return Result{}, err
	}
	notes = append(notes, setup.notes...)
	if rec.start.PermissionMode != "" && rec.start.PermissionMode != modeOf(setup.cfg) && !setup.modeRefused {
		notes = append(notes, fmt.Sprintf("the recorded session ran in permission mode %s; the replay runs in %s mode", rec.start.PermissionMode, modeOf(setup.cfg)))
	}
	reg, err := tools.NewRegistry(tools.Builtins()...)
	if err != nil {
		return Result{}, err
	}
	if len(setup.cfg.MCPServers) > 0 {
		servers, mcpNotes, err := startMCP(ctx, setup.cfg, ws, reg)
		if err != nil {
			return Result{}, err
		}
		defer servers.Close()
		notes = append(notes, mcpNotes...)
	}
	env, err := tools.NewEnv(ws, reg)
	if err != nil {
		return Result{}, err
	}
	out, err := recorder.Create(opts.Out, recorder.Options{})
	if err != nil {
		return Result{}, err
	}
	replayBlobs := recorder.OpenBlobs(recorder.BlobsDir(out.Path()))
	limits := agent.Limits{}
	if l := rec.start.Limits; l != nil {
		limits.MaxTurns, limits.TokenBudget = l.MaxTurns, l.TokenBudget
	}
	var prompter executor.Prompter
	if setup.answers != nil {
		prompter = setup.answers
	}
	end, err := agent.Run(ctx, agent.Config{
		Provider: mockllm.NewReplay(events), Sink: out, System: rec.system, Prompt: rec.prompt, Limits: limits,
		Executor: executor.Config{Env: env, Permission: setup.perm, Hooks: setup.hooks, Blobs: replayBlobs,
			Prompter: prompter, SessionID: out.SessionID()},
		Mode: trajectory.ModeReplay, PermissionMode: setup.cfg.Permissions.Mode, HarnessVersion: rec.start.HarnessVersion,
		ReplayOf: rec.session, Tags: rec.start.Tags,
	})
	if _, cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Result{}, err
	}
	if setup.answers != nil {
		notes = append(notes, setup.answers.mismatches()...)
	}
	replayed, err := trajectory.ReadFile(out.Path())
	if err != nil {
		return Result{}, err
	}
	copts, err := compareOptions(opts.Compare, setup.cfg.Replay)
	if err != nil {
		return Result{}, err
	}
	if opts.Config == "" {
		notes = append(notes, replaySectionNote(setup.cfg.Replay)...)
	}
	copts.PathRewrites = append(copts.PathRewrites,
		compare.PathRewrite{Old: rec.start.Workspace, New: env.Workspace()},
		compare.PathRewrite{Old: blobs.Dir(), New: replayBlobs.Dir()})
	report := compare.Sessions(events, replayed, copts)
	report.Notes = append(report.Notes, notes...)
	return Result{Report: report, Path: out.Path(), Workspace: env.Workspace(), End: end}, nil
}

// recording is what a replay needs to know about the recorded session.
type recording struct {
	session string
	start   *trajectory.SessionStart
	// snapshot is the workspace snapshot's manifest reference, from
	// session_start or the workspace_snapshot event after it.
	snapshot string
	system   string
	prompt   string
}

func inspect(events []trajectory.Event) (recording, error) {
	var r recording
	for _, ev := range events {
		switch p := ev.Payload.(type) {
		case *trajectory.SessionStart:
			r.session, r.start = ev.Session, p
			r.snapshot = p.WorkspaceSnapshot
		case *trajectory.WorkspaceSnapshot:
			r.snapshot = p.Manifest
		case *trajectory.ModelRequest:
			if r.prompt != "" {
				continue
			}
			r.system = baseSystem(p.System)
			for _, m := range p.NewMessages {
				for _, b := range m.Content {
					if m.Role == trajectory.RoleUser && b.Type == trajectory.BlockText && r.prompt == "" {
						r.prompt = b.Text
					}
				}
			}
		}
	}
	switch {
	case r.start == nil:
		return r, fmt.Errorf("%w: it has no session_start", ErrNotReplayable)
	case r.prompt == "":
		return r, fmt.Errorf("%w: it has no model request with the user's task", ErrNotReplayable)
	}
	return r, nil
}

// baseSystem removes the list of deferred tools the loop appends to the
// system prompt; the replay's loop appends it again.
func baseSystem(system string) string {
	if i := strings.Index(system, "\n\n# Deferred tools\n"); i >= 0 {
		return system[:i]
	}
	if strings.HasPrefix(system, "# Deferred tools\n") {
		return ""
	}
	return system
}
