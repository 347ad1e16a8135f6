package replay

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/agent/hooks"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// ErrNotReplayable is wrapped by Run's errors for a recording that cannot be
// replayed as it is (no session_start, no request, no workspace).
var ErrNotReplayable = errors.New("recording cannot be replayed")

// RunOptions say what to replay and where.
type RunOptions struct {
	// Recording is the trajectory file of the session to replay.
	Recording string
	// Out is the directory the replay's own trajectory is written to; it
	// must not be the recording's directory, so nothing is written over
	// the original run.
	Out string
	// Workspace is where the recorded workspace snapshot is restored (it
	// must be empty or missing); "" means a new temporary directory. A
	// recording without a snapshot runs in Workspace as it is.
	Workspace string
	// Config is a what-if configuration file; "" means the retrace.yaml of
	// the restored workspace, as the recorded session had it.
	Config string
	// Compare tunes the comparison (extra volatile patterns); the
	// workspace and blob paths are rewritten by Run itself.
	Compare Options
}

// Result is a replay's outcome.
type Result struct {
	Report Report
	// Path is the replay's trajectory.
	Path string
	// Workspace is where it ran.
	Workspace string
	// End is how the replayed session ended.
	End agent.Result
}

// Run replays a recorded session through the real runtime: it restores the
// recorded workspace, answers every model request with the recorded
// responses (mockllm.Replay; a request past the recording is a replay
// miss, never a live call), replays the person's recorded answers to
// permission prompts, records a new trajectory and compares the two.
func Run(ctx context.Context, opts RunOptions) (Result, error) {
	events, err := trajectory.ReadFile(opts.Recording)
	if err != nil {
		return Result{}, err
	}
	rec, err := inspect(events)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", opts.Recording, err)
	}
	blobs := recorder.OpenBlobs(recorder.BlobsDir(opts.Recording))
	ws, err := workspace(opts, rec, blobs)
	if err != nil {
		return Result{}, err
	}
	cfg, perm, hooksRunner, err := loadConfig(opts.Config, ws)
	if err != nil {
		return Result{}, err
	}
	if filepath.Clean(opts.Out) == filepath.Clean(filepath.Dir(opts.Recording)) {
		return Result{}, fmt.Errorf("--out %s is the recording's own directory: write the replay elsewhere so the original run stays as it was", opts.Out)
	}
	reg, err := tools.NewRegistry(tools.Builtins()...)
	if err != nil {
		return Result{}, err
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
	end, err := agent.Run(ctx, agent.Config{
		Provider: mockllm.NewReplay(events), Sink: out, System: rec.system, Prompt: rec.prompt, Limits: limits,
		Executor: executor.Config{Env: env, Permission: perm, Hooks: hooksRunner, Blobs: replayBlobs,
			Prompter: recordedAnswers(events), SessionID: out.SessionID()},
		Mode: trajectory.ModeReplay, PermissionMode: cfg.Permissions.Mode, HarnessVersion: rec.start.HarnessVersion,
		ReplayOf: rec.session, Tags: rec.start.Tags,
	})
	if _, cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Result{}, err
	}
	replayed, err := trajectory.ReadFile(out.Path())
	if err != nil {
		return Result{}, err
	}
	copts := opts.Compare
	copts.Volatile = append(copts.Volatile, pidPattern)
	copts.PathRewrites = append(copts.PathRewrites,
		PathRewrite{Old: rec.start.Workspace, New: env.Workspace()},
		PathRewrite{Old: blobs.Dir(), New: replayBlobs.Dir()})
	return Result{Report: Compare(events, replayed, copts), Path: out.Path(), Workspace: env.Workspace(), End: end}, nil
}

// pidPattern matches process ids as programs print them ("pid 4242",
// "PID=4242"): a new process gets a new one on every run.
var pidPattern = regexp.MustCompile(`(?i)\bpid[ =:]+\d+`)

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

func workspace(opts RunOptions, rec recording, blobs *recorder.Blobs) (string, error) {
	ref := rec.snapshot
	if ref == "" {
		if opts.Workspace == "" {
			return "", fmt.Errorf("%s: %w: it has no workspace snapshot; give --workspace DIR with the workspace as it was when the session started", opts.Recording, ErrNotReplayable)
		}
		return opts.Workspace, nil
	}
	dst := opts.Workspace
	if dst == "" {
		d, err := os.MkdirTemp("", "retrace-replay-")
		if err != nil {
			return "", err
		}
		dst = d
	}
	if err := recorder.RestoreWorkspace(blobs, ref, dst); err != nil {
		return "", fmt.Errorf("restore the recorded workspace: %w", err)
	}
	return dst, nil
}

func loadConfig(path, ws string) (config.Config, *permission.Checker, *hooks.Runner, error) {
	name := path
	if name == "" {
		name = filepath.Join(ws, "retrace.yaml")
		if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
			cfg := config.Config{}
			perm, hr, err := cfg.Check("(defaults)", ws)
			return cfg, perm, hr, err
		}
	}
	cfg, err := config.Load(name)
	if err != nil {
		return cfg, nil, nil, err
	}
	perm, hr, err := cfg.Check(name, ws)
	return cfg, perm, hr, err
}

// recordedAnswers replays a person's answers to permission prompts: a call
// the recording shows a person allowed is allowed again; anything else is
// refused, as a headless session would.
func recordedAnswers(events []trajectory.Event) executor.Prompter {
	allowed := map[string]bool{}
	for _, ev := range events {
		if a, ok := ev.Payload.(*trajectory.PermissionAllow); ok && a.Source == trajectory.SourceUser {
			allowed[a.ToolUseID] = true
		}
	}
	if len(allowed) == 0 {
		return nil
	}
	return answers(allowed)
}

type answers map[string]bool

func (a answers) Confirm(_ context.Context, p executor.Prompt) (bool, error) {
	return a[p.ToolUseID], nil
}
