package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/agent/hooks"
	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/agent/mcp"
	"github.com/retrace-dev/retrace/agent/permission"
	"github.com/retrace-dev/retrace/agent/sandbox"
	"github.com/retrace-dev/retrace/agent/tools"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// ErrSpec is wrapped by Build's errors for a Spec the caller has to fix: a
// workspace that is not a directory, a configuration whose rules, hooks,
// MCP servers or defenses are not valid, a missing model or recorder. The
// CLI maps it to its usage exit code; every other error of Build is the
// harness's own (a runs directory that cannot be written, say).
var ErrSpec = errors.New("invalid session spec")

// specError is an error of the caller's Spec: it reads as the problem
// itself, and errors.Is finds ErrSpec and the cause.
type specError struct{ err error }

func (e *specError) Error() string   { return e.err.Error() }
func (e *specError) Unwrap() []error { return []error{ErrSpec, e.err} }

func specErr(format string, args ...any) error {
	return &specError{fmt.Errorf(format, args...)}
}

// Spec declares a session. Build turns it into a Session.
type Spec struct {
	// Workspace is the directory the tools work in. Required.
	Workspace string
	// Config is the configuration the session runs under, already layered
	// and restricted by the caller: permission rules and mode, hooks, MCP
	// servers, limits and defenses. Permissions.Home, when set, replaces
	// the user's home directory (tests).
	Config config.Config
	// ConfigName names the configuration in error messages.
	ConfigName string
	// ConfigSources say which layer each setting of Config came from
	// (config.Resolved.Sources); session_start records them with the
	// effective configuration itself.
	ConfigSources map[string]string
	// BaseDefenses is the set Config.Defenses is applied to: nil means
	// agent.DefaultDefenses(); a replay gives the recorded set.
	BaseDefenses []trajectory.DefenseName

	// Provider is the model: a mockllm.Script, a mockllm.Replay or a live
	// provider from agent/llm. Required.
	Provider llm.Provider
	// Model names the model; empty asks the provider for its default.
	Model string
	// Stream asks for streamed replies; OnStream sees them arrive.
	Stream   bool
	OnStream func(llm.StreamEvent)
	// BatchTools, with Stream, starts the calls only once the whole reply
	// has arrived (see agent.Config.BatchTools).
	BatchTools bool
	// Retries records every failed model call attempt (see agent.Retries).
	Retries *agent.Retries
	// Plant changes each request before it is recorded and sent, to plant
	// a fault in an eval scenario (see agent.Config.Plant); nil for a real
	// session.
	Plant func(turn int, req *llm.Request)

	// System is the base system prompt; the loop appends the list of
	// deferred tools to it.
	System string
	// Prompt is the user's task.
	Prompt string
	// History, Continues and NextPrompt carry a conversation on and take
	// follow-up prompts (see agent.Config).
	History    []trajectory.Message
	Continues  string
	NextPrompt func(ctx context.Context) (string, bool)

	// Tools are added to the catalog after the built-in tools, in order.
	Tools []tools.Tool
	// MCPGrace is how long Build waits for the configured MCP servers
	// before the session starts without the slow ones, whose tools join as
	// each comes up; 0 waits for every server, so the catalog is the same
	// on every run (replay, evals, tests).
	MCPGrace time.Duration

	// Runs is the directory the trajectory is recorded in (recorder.Create).
	// Output, instead, records to a writer (recorder.New), with the blobs
	// in BlobsDir. Exactly one of them is required.
	Runs   string
	Output io.Writer
	// BlobsDir is the directory of the session's blobs (spilled outputs,
	// snapshot manifests); "" means the one next to the trajectory file.
	BlobsDir string
	// Observe, when set, wraps the recorder as the session's sink, e.g. a
	// live transcript that passes every event on.
	Observe func(*recorder.Recorder) trajectory.Sink
	// Clock times the session and names its file; nil means time.Now.
	Clock func() time.Time
	// Key, when set, signs the recording as the user's own (see
	// recorder.Key), so that the user's replays apply its permission mode
	// and rules. retrace run, eval --out and replay give the user's key.
	Key *recorder.Key

	// Snapshot, when set, stores the workspace the session starts from
	// (after session_start is on disk), so that a replay can restore it.
	Snapshot *recorder.SnapshotOptions
	// WorkspaceSnapshot is the reference of a snapshot taken before Build,
	// recorded in session_start instead.
	WorkspaceSnapshot string

	// Prompter asks a person whether a call may run; nil refuses every
	// call that needs one, as a headless session does.
	Prompter executor.Prompter
	// Mode is recorded in session_start; "" means interactive when there
	// is a Prompter, else headless.
	Mode trajectory.RunMode
	// MaxConcurrent bounds the executor's parallel calls; 0 is its default.
	MaxConcurrent int
	// HarnessVersion, HarnessRevision, Tags and ReplayOf are recorded in
	// session_start (Version gives the running build's).
	HarnessVersion  string
	HarnessRevision string
	Tags            map[string]string
	ReplayOf        string

	// Warn receives what the session can run without but a person should
	// know: a snapshot that failed, an MCP server that did not come up.
	// nil drops them.
	Warn func(string)
}

// Session is a built session, ready to run.
type Session struct {
	// Agent is the configuration agent.Run is called with.
	Agent agent.Config
	// Recorder records the session; Close closes it.
	Recorder *recorder.Recorder
	// Blobs is the session's blob store.
	Blobs *recorder.Blobs
	// Env is the tools' workspace and registry.
	Env *tools.Env
	// Permission and Hooks are built from the configuration.
	Permission *permission.Checker
	Hooks      *hooks.Runner

	servers *mcp.Servers
	box     *sandbox.Sandbox
	stop    context.CancelFunc
	closed  bool
}

// Run runs the session to its end (agent.Run).
func (s *Session) Run(ctx context.Context) (agent.Result, error) {
	return agent.Run(ctx, s.Agent)
}

// Close closes the recorder, returning its statistics, and stops the MCP
// servers. It is safe to call more than once; only the first call closes.
func (s *Session) Close() (recorder.Stats, error) {
	if s == nil || s.closed {
		return recorder.Stats{}, nil
	}
	s.closed = true
	stats, err := s.Recorder.Close()
	s.stop()
	s.box.Close()
	if s.servers != nil {
		// A server that does not stop cleanly costs nothing recorded.
		_ = s.servers.Close()
	}
	return stats, err
}

// Build assembles the session spec declares. On error nothing is left
// running or open.
func Build(ctx context.Context, spec Spec) (_ *Session, err error) {
	if spec.Provider == nil {
		return nil, specErr("no model: give a provider, a script or a recording")
	}
	if (spec.Runs == "") == (spec.Output == nil) {
		return nil, specErr("give exactly one place to record the session (a runs directory or a writer)")
	}
	if spec.Output != nil && spec.BlobsDir == "" {
		return nil, specErr("a session recorded to a writer needs a blobs directory")
	}
	name := spec.ConfigName
	if name == "" {
		name = "(defaults)"
	}
	reg, err := tools.NewRegistry(append(tools.Builtins(), spec.Tools...)...)
	if err != nil {
		return nil, specErr("tools: %w", err)
	}
	env, err := tools.NewEnv(spec.Workspace, reg)
	if err != nil {
		return nil, specErr("workspace %s: %w", spec.Workspace, err)
	}
	perm, hr, err := spec.Config.Check(name, env.Workspace())
	if err != nil {
		return nil, &specError{err}
	}
	policy, err := PolicyHash(spec.Config)
	if err != nil {
		return nil, &specError{err}
	}
	effective, err := config.Effective(spec.Config)
	if err != nil {
		return nil, &specError{err}
	}
	// Every process a tool starts runs in the session's sandbox, in every
	// permission mode, in replays and evals alike: this is the one place
	// sessions are built. A kernel that cannot sandbox leaves the session
	// able to start, with every tool process refused and the reason
	// recorded in session_start; it is never a silent downgrade.
	box, err := sandbox.New(sandbox.Options{Policy: spec.Config.Sandbox, Workspace: env.Workspace(), Home: spec.Config.Permissions.Home})
	if err != nil {
		return nil, &specError{fmt.Errorf("config %s: %w", name, err)}
	}
	env.SetSandbox(box)
	if uerr := box.Unavailable(); uerr != nil {
		spec.warn(uerr.Error())
	} else if box.Mode() != sandbox.ModeOff {
		// Landlock checks paths: a hard link already in the workspace
		// reaches its other names, which the sandbox cannot protect.
		if linked, complete := sandbox.LinkedFiles(env.Workspace(), 5); len(linked) > 0 {
			more := ""
			if !complete {
				more = " (and maybe more)"
			}
			spec.warn(fmt.Sprintf("the workspace holds files with other hard links%s, e.g. %s: a command can write through them to their other names, which the sandbox cannot see; remove the links if those names lie outside the workspace",
				more, strings.Join(linked, ", ")))
		}
	}
	life, stop := context.WithCancel(context.Background())
	s := &Session{Env: env, Permission: perm, Hooks: hr, stop: stop, box: box}
	defer func() {
		if err != nil {
			stop()
			box.Close()
			if s.servers != nil {
				_ = s.servers.Close()
			}
		}
	}()
	var lifecycle *mcp.Lifecycle
	if len(spec.Config.MCPServers) > 0 {
		lifecycle = mcp.NewLifecycle(reg, spec.warn)
		if s.servers, err = attachMCP(ctx, life, spec, env.Workspace(), reg, lifecycle); err != nil {
			return nil, err
		}
	}
	s.Recorder, err = newRecorder(spec)
	if err != nil {
		return nil, err
	}
	blobsDir := spec.BlobsDir
	if blobsDir == "" {
		blobsDir = recorder.BlobsDir(s.Recorder.Path())
	}
	s.Blobs = recorder.OpenBlobs(blobsDir)
	var sink trajectory.Sink = s.Recorder
	if spec.Observe != nil {
		sink = spec.Observe(s.Recorder)
	}
	mode := spec.Mode
	if mode == "" {
		mode = trajectory.ModeHeadless
		if spec.Prompter != nil {
			mode = trajectory.ModeInteractive
		}
	}
	s.Agent = agent.Config{
		Provider: spec.Provider, Model: spec.Model, Sink: sink, System: spec.System, Prompt: spec.Prompt,
		History: spec.History, Continues: spec.Continues, NextPrompt: spec.NextPrompt,
		Limits: spec.Config.Limits, Models: spec.Config.Models, Cache: spec.Config.Cache.Request(), Plant: spec.Plant,
		Stream: spec.Stream, BatchTools: spec.BatchTools, OnStream: spec.OnStream, Retries: spec.Retries,
		Defenses: spec.Config.Defenses.Apply(spec.BaseDefenses),
		Executor: executor.Config{Env: env, Permission: perm, Hooks: hr, Prompter: spec.Prompter, Blobs: s.Blobs,
			SessionID: s.Recorder.SessionID(), MaxConcurrent: spec.MaxConcurrent,
			// Nothing starts once the recorder cannot write.
			RecordErr: s.Recorder.Err},
		PolicyHash: policy, Mode: mode, PermissionMode: spec.Config.Permissions.Mode,
		HarnessVersion: spec.HarnessVersion, HarnessRevision: spec.HarnessRevision, Tags: spec.Tags, ReplayOf: spec.ReplayOf, Clock: spec.Clock,
		WorkspaceSnapshot: spec.WorkspaceSnapshot, EffectiveConfig: effective, ConfigSources: spec.ConfigSources,
	}
	if lifecycle != nil {
		s.Agent.MCPEvents = lifecycle.Drain
	}
	if spec.Snapshot != nil {
		opts := *spec.Snapshot
		// Taken after session_start is on disk, so that a crash during the
		// snapshot leaves a valid trajectory.
		s.Agent.SnapshotWorkspace = func() *trajectory.WorkspaceSnapshot {
			return snapshot(env.Workspace(), s.Blobs, opts, spec.warn)
		}
	}
	return s, nil
}

func (spec Spec) warn(msg string) {
	if spec.Warn != nil {
		spec.Warn(msg)
	}
}

func newRecorder(spec Spec) (*recorder.Recorder, error) {
	opts := recorder.Options{Clock: spec.Clock, Key: spec.Key}
	if spec.Output != nil {
		return recorder.New(spec.Output, opts), nil
	}
	return recorder.Create(spec.Runs, opts)
}

// PolicyHash is the hash of the parts of a configuration the agent loop
// cannot see — the permission rules and mode, the hooks, the MCP servers,
// the sandbox policy —
// that Build passes on as agent.Config.PolicyHash, so that session_start's
// config_hash covers them. Limits and defenses are hashed by the loop
// itself. The home directory is left out: it is where the user lives, not
// a policy, and differs from machine to machine. Map entries (environments,
// headers) are hashed in key order, so their order never counts.
func PolicyHash(c config.Config) (string, error) {
	p := c.Permissions
	p.Home = ""
	// The sandbox policy counts only when it is not the default, so the
	// hashes of sessions recorded before the sandbox existed still match.
	var box *sandbox.Policy
	if c.Sandbox.Mode != "" || c.Sandbox.Network || len(c.Sandbox.AllowNetwork) > 0 || len(c.Sandbox.Writable) > 0 {
		box = &c.Sandbox
	}
	b, err := json.Marshal(struct {
		Permissions permission.Config
		Hooks       []hooks.Config
		MCPServers  []mcp.Config
		Sandbox     *sandbox.Policy `json:",omitempty"`
	}{p, c.Hooks, c.MCPServers, box})
	if err != nil {
		return "", fmt.Errorf("hash the configuration: %w", err)
	}
	return trajectory.Hash(b), nil
}

// snapshot stores the workspace the session starts from and returns the
// event that records it. A snapshot that fails costs the replay, not the
// session: it is a warning, and the session runs without one.
func snapshot(workspace string, blobs *recorder.Blobs, opts recorder.SnapshotOptions, warn func(string)) *trajectory.WorkspaceSnapshot {
	start := time.Now()
	ref, rep, err := recorder.SnapshotWorkspace(workspace, blobs, opts)
	for _, w := range rep.Warnings {
		warn(w)
	}
	if err != nil {
		warn(fmt.Sprintf("the session runs without a workspace snapshot, so it cannot be replayed from its starting files: %v", err))
		return nil
	}
	return &trajectory.WorkspaceSnapshot{Manifest: ref, Files: int64(rep.Files), Bytes: rep.Bytes, Skipped: int64(len(rep.Skipped)),
		DurationMs: trajectory.Millis(time.Since(start))}
}

// attachMCP starts the configured MCP servers. With a grace period it
// waits that long, so that local servers' tools are in the catalog from the
// first turn, and lets the session start: the tools of slower servers join
// the registry as each server comes up (lifecycle adds them and queues the
// mcp_server event the loop records and announces), and until then tool_search and the
// executor report those servers as still connecting rather than their
// tools as missing. Without one it waits for every
// server. A server that fails is a warning; the others work. The servers
// and the background refresh live until life ends.
func attachMCP(ctx, life context.Context, spec Spec, workspace string, reg *tools.Registry, lifecycle *mcp.Lifecycle) (*mcp.Servers, error) {
	dir, err := filepath.Abs(workspace)
	if err != nil {
		return nil, err
	}
	servers, err := mcp.Connect(ctx, spec.Config.MCPServers, mcp.Options{Dir: dir, OnEvent: lifecycle.OnEvent})
	if err != nil {
		return nil, &specError{err}
	}
	for _, n := range servers.Notices() {
		spec.warn(n)
	}
	if spec.MCPGrace <= 0 {
		_ = servers.Wait(ctx)
	} else {
		grace, cancel := context.WithTimeout(ctx, spec.MCPGrace)
		_ = servers.Wait(grace)
		cancel()
	}
	var mu sync.Mutex
	pending := servers.Pending()
	reg.SetPending(func() []string {
		mu.Lock()
		defer mu.Unlock()
		return pending
	})
	reported := map[string]bool{}
	refresh := func() (done bool) {
		p := servers.Pending()
		if _, err := reg.AddMissing(servers.Tools()...); err != nil {
			spec.warn(err.Error())
		}
		for _, f := range servers.Failures() {
			if msg := f.Error(); !reported[msg] {
				reported[msg] = true
				spec.warn(msg)
			}
		}
		// Published only after the tools of every server that left the
		// pending list were added, so no tool is ever neither pending nor here.
		mu.Lock()
		pending = p
		mu.Unlock()
		return len(p) == 0
	}
	if !refresh() {
		go func() {
			for !refresh() {
				select {
				case <-life.Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
	}
	return servers, nil
}
