package replay

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/agent/sandbox"
	"github.com/retrace-dev/retrace/compare"
	"github.com/retrace-dev/retrace/harness"
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
	// Key is the user's recording key (recorder.UserKey): a recording
	// whose session_start it signed is the user's own, and its permission
	// mode, rules and recorded answers apply without TrustRecording (its
	// hooks and MCP servers still need it). nil proves nothing.
	Key *recorder.Key
	// NoSandbox runs the replay's tool processes without the kernel
	// sandbox (retrace replay --no-sandbox), recorded in its session_start.
	NoSandbox bool
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
	// LeftOut are the recording's settings the replay did not apply
	// (config.Refused, as "field: value"): divergences they cause are
	// expected, not a what-if.
	LeftOut []string
	// WhatIf lists the settings the what-if configuration changed.
	WhatIf []string
}

// Run replays a recorded session through the real runtime: it restores the
// recorded workspace, answers every model request with the recorded
// responses (mockllm.Replay; a request past the recording is a replay
// miss, never a live call), records a new trajectory and compares the two.
// What the recording's own configuration would have run, and what its
// workspace snapshot left out, is said in Report.Notes.
func Run(ctx context.Context, opts RunOptions) (Result, error) {
	rec, err := load(ctx, opts.Recording)
	if err != nil {
		return Result{}, err
	}
	return rec.replay(ctx, opts)
}

// load reads the recording at path, once, and what a replay needs to know
// about it.
func load(ctx context.Context, path string) (*recording, error) {
	events, err := readRecording(ctx, path)
	if err != nil {
		return nil, err
	}
	if isMockServe(events) {
		return nil, fmt.Errorf("%s: %w: not replayable here: it was recorded by retrace mock serve --record (another agent's conversation, no workspace snapshot); use retrace mock serve --from %s and run that agent against it", path, ErrNotReplayable, path)
	}
	rec, err := inspect(events)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rec.path, rec.events = path, events
	if rec.history, err = carriedOn(path, rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// replay runs the recorded session again under opts and compares.
func (rec *recording) replay(ctx context.Context, opts RunOptions) (res Result, err error) {
	if filepath.Clean(opts.Out) == filepath.Clean(filepath.Dir(rec.path)) {
		return Result{}, fmt.Errorf("%w: --out %s is the recording's own directory: write the replay elsewhere so the original run stays as it was", ErrInput, opts.Out)
	}
	blobs := recorder.OpenBlobs(recorder.BlobsDir(rec.path))
	ws, temporary, err := workspaceDir(opts, *rec)
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
	setup, err := loadConfig(opts, ws, rec)
	if err != nil {
		return Result{}, err
	}
	notes = append(notes, setup.notes...)
	if rec.start.PermissionMode != "" && rec.start.PermissionMode != modeOf(setup.cfg) && !setup.modeRefused {
		notes = append(notes, fmt.Sprintf("the recorded session ran in permission mode %s; the replay runs in %s mode", rec.start.PermissionMode, modeOf(setup.cfg)))
	}
	spec, err := sessionSpec(*rec, setup, ws, opts.Out)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", rec.path, err)
	}
	spec.Key = opts.Key
	var homeRewrite []compare.PathRewrite
	if rec.start.Tags[harness.ScenarioTag] != "" {
		// An eval run's tools saw a throwaway home, not the user's: so
		// do the replay's, or its commands would meet (and aim at) the
		// real one.
		root, err := os.MkdirTemp("", "retrace-replay-home-")
		if err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(root)
		spec.Config.Permissions.Home = filepath.Join(root, "home")
		if err := harness.ThrowawayHome(spec.Config.Permissions.Home); err != nil {
			return Result{}, err
		}
		homeRewrite = []compare.PathRewrite{{Old: harness.ScenarioHome(rec.start.Workspace), New: spec.Config.Permissions.Home}}
	}
	if opts.NoSandbox {
		spec.Config.Sandbox.Mode = sandbox.ModeOff
	}
	spec.Warn = func(msg string) { notes = append(notes, "MCP: "+msg) }
	sess, err := harness.Build(ctx, spec)
	if errors.Is(err, harness.ErrSpec) {
		return Result{}, fmt.Errorf("%w: %w", ErrInput, err)
	}
	if err != nil {
		return Result{}, err
	}
	defer sess.Close()
	end, err := sess.Run(ctx)
	if _, cerr := sess.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Result{}, err
	}
	out, env, replayBlobs := sess.Recorder, sess.Env, sess.Blobs
	if setup.answers != nil {
		for _, id := range setup.answers.Mismatches() {
			notes = append(notes, fmt.Sprintf("%s: the recorded approval was not re-applied, because the call's input differs from the one the person approved", id))
		}
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
	if abs, err := filepath.Abs(blobs.Dir()); err == nil && abs != blobs.Dir() {
		// The recorder names its blobs as its run directory was given, so
		// a recording the replay was given by a relative path may name
		// them by the absolute one (eval --out /abs, replay abs/runs/x from
		// a directory above).
		copts.PathRewrites = append(copts.PathRewrites, compare.PathRewrite{Old: abs, New: replayBlobs.Dir()})
	}
	copts.PathRewrites = append(copts.PathRewrites, homeRewrite...)
	if temporary {
		// A path beside the recorded workspace (a write outside it that
		// was refused) names the replay's temporary directory instead.
		if from, to := filepath.Dir(rec.start.Workspace), filepath.Dir(env.Workspace()); rec.start.Workspace != "" && from != "/" && from != "." {
			copts.PathRewrites = append(copts.PathRewrites, compare.PathRewrite{Old: from, New: to})
		}
	}
	report := compare.Sessions(rec.events, replayed, copts)
	report.Notes = append(report.Notes, notes...)
	return Result{Report: report, Path: out.Path(), Workspace: env.Workspace(), End: end, LeftOut: setup.leftOut, WhatIf: setup.whatIf}, nil
}

// isMockServe reports whether events are a conversation recorded by
// retrace mock serve --record: its session_start carries the mock_serve
// source tag.
func isMockServe(events []trajectory.Event) bool {
	if len(events) == 0 {
		return false
	}
	start, ok := events[0].Payload.(*trajectory.SessionStart)
	return ok && start.Tags["source"] == mockServeSource
}

// mockServeSource is the session_start tag value of a conversation
// recorded by retrace mock serve --record.
const mockServeSource = "mock_serve"

// recording is what a replay needs to know about the recorded session.
type recording struct {
	// path is the trajectory file, events its events, read once.
	path    string
	events  []trajectory.Event
	session string
	start   *trajectory.SessionStart
	// snapshot is the workspace snapshot's manifest reference, from
	// session_start or the workspace_snapshot event after it.
	snapshot string
	system   string
	prompt   string
	// stream says the recorded session asked for streamed replies.
	stream bool
	// followUps are the prompts of the recording's user_prompt events
	// after the first prompt, in order; history is the conversation a
	// continued session carried on (session_start's continues).
	followUps []string
	history   []trajectory.Message
}

// carriedOn rebuilds the conversation a continued recording carried on,
// from the trajectory of the session it continues, which retrace run
// records next to it, as retrace run --continue rebuilt it
// (harness.LoadContinuation); nil for a recording that continues nothing.
func carriedOn(path string, rec recording) ([]trajectory.Message, error) {
	if rec.start.Continues == "" {
		return nil, nil
	}
	prev := harness.ContinuationOf(path, rec.start.Continues)
	c, err := harness.LoadContinuation(prev)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s continues session %s, whose trajectory %s is not next to it; put it there to replay the continued session",
			ErrNotReplayable, path, rec.start.Continues, prev)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s continues session %s: %w", ErrNotReplayable, path, rec.start.Continues, err)
	}
	return c.History, nil
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
		case *trajectory.UserPrompt:
			r.followUps = append(r.followUps, p.Text)
		case *trajectory.ModelRequest:
			if r.prompt != "" {
				continue
			}
			r.system, r.stream = agent.BaseSystemPrompt(p.System), p.Stream
			for _, m := range p.NewMessages {
				for _, b := range m.Content {
					if m.Role == trajectory.RoleUser && b.Type == trajectory.BlockText && r.prompt == "" {
						r.prompt = b.Text
					}
				}
			}
		}
	}
	if r.start != nil && r.start.SystemPrompt != "" {
		r.system = r.start.SystemPrompt
	}
	// Each replayed request is compared with the recorded one's full
	// message list; a v2 recording whose chain of prefix hashes breaks
	// (a request lost or edited) cannot give those lists.
	_, chainErr := trajectory.Full(events)
	if r.start != nil && r.start.Continues != "" {
		// A continued session's first request carries the conversation
		// it continues; its own first prompt is its first user_prompt.
		r.prompt = ""
		if len(r.followUps) > 0 {
			r.prompt, r.followUps = r.followUps[0], r.followUps[1:]
		}
	}
	switch {
	case chainErr != nil:
		return r, fmt.Errorf("%w: its model requests do not chain: %w", ErrNotReplayable, chainErr)
	case r.start == nil:
		return r, fmt.Errorf("%w: it has no session_start", ErrNotReplayable)
	case r.prompt == "":
		return r, fmt.Errorf("%w: it has no model request with the user's task", ErrNotReplayable)
	}
	return r, nil
}

// sessionSpec is the session a replay runs: the recorded one — its system
// prompt, task, limits, defenses, streaming and harness version, from
// session_start and the first request — under the configuration setup chose, whose every
// setting takes effect. The what-if (or restored) configuration's rules,
// mode, hooks and MCP servers are the replay's own; its limits replace the
// recorded ones they set, and its defenses are turned on or off over the
// recorded set. The model answers from the recording, so a request past it
// is a replay miss, never a live call.
func sessionSpec(rec recording, s setup, ws, out string) (harness.Spec, error) {
	// The model answers from the recording, as harness.Model says.
	model, err := harness.NewProvider(harness.Model{Recording: rec.events})
	if err != nil {
		return harness.Spec{}, err
	}
	spec := harness.Spec{
		Workspace: ws, Config: s.cfg, ConfigName: s.name, ConfigSources: s.sources, BaseDefenses: rec.start.Defenses,
		Provider: model, Stream: rec.stream, System: rec.system, Prompt: rec.prompt,
		Runs: out, Mode: trajectory.ModeReplay, HarnessVersion: rec.start.HarnessVersion,
		ReplayOf: rec.session, Tags: rec.start.Tags,
		History: rec.history, Continues: rec.start.Continues,
	}
	if len(rec.followUps) > 0 {
		// The person's follow-ups are given again in their order, each
		// when the replayed model finishes its turn, as they were.
		prompts := slices.Clone(rec.followUps)
		spec.NextPrompt = func(context.Context) (string, bool) {
			if len(prompts) == 0 {
				return "", false
			}
			p := prompts[0]
			prompts = prompts[1:]
			return p, true
		}
	}
	if s.answers != nil {
		spec.Prompter = s.answers
	}
	if v, ok := rec.start.Tags[harness.PlantTag]; ok {
		// The fault an eval planted in the requests is part of what
		// the session ran under: planted again, the requests are sent
		// as they were.
		pl, err := harness.ParsePlant(v)
		if err != nil {
			return spec, fmt.Errorf("%w: session_start.tags.%s: %w", ErrInput, harness.PlantTag, err)
		}
		spec.Plant = pl.Apply
	}
	return spec, nil
}

// recordedLimits are the limits session_start recorded; a recording of
// an older version holds only the turn limit and the budgets.
func recordedLimits(l *trajectory.Limits) agent.Limits {
	if l == nil {
		return agent.Limits{}
	}
	return agent.Limits{MaxTurns: l.MaxTurns, TokenBudget: l.TokenBudget, CostBudget: l.CostBudget,
		MaxTokens: l.MaxTokens, ContextTokens: l.ContextTokens,
		ContextWindow: l.ContextWindow, CompactThreshold: l.CompactThreshold, Compaction: l.Compaction,
		Prices: agent.Prices{Input: l.InputPerMTok, Output: l.OutputPerMTok, CacheRead: l.CacheReadPerMTok, CacheWrite: l.CacheWritePerMTok}}
}
