package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrace-dev/retrace/agent"
	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/agent/sandbox"
	"github.com/retrace-dev/retrace/harness"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/scenarios"
	"github.com/retrace-dev/retrace/trajectory"
)

// demoScenario is the built-in scenario that run plays with no argument.
const demoScenario = "demo"

type runOptions struct {
	prompt    string
	script    string
	provider  string
	model     string
	baseURL   string
	workspace string
	config    string
	headless  bool
	noSandbox bool
	runs      string
	maxTurns  int
	stream    bool
	batch     bool
	labels    labelFlag
	// continueSession is --continue: the session id or trajectory file
	// whose conversation this run carries on.
	continueSession string
	// interactive is -i: after each finished turn the next prompt is read
	// from stdin, one a line, until its end.
	interactive bool

	// trustWorkspace layers the workspace's retrace.yaml like a trusted file.
	trustWorkspace bool
}

func newRunCmd(sys *IO) *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [PROMPT]",
		Short: "Run the agent on a task and record the session as a trajectory",
		Long: `Run drives the agent runtime — the agent loop, the tool executor with its
permission chain and hooks — on a task, and records the whole session as a
trajectory in the runs directory (--runs, RETRACE_DIR, or .retrace/runs).

The model is either a script (--script FILE, the mock LLM's YAML format, see
'retrace mock serve --help') or a real provider (--provider anthropic|openai|
openai-chat --model M, with ANTHROPIC_API_KEY / OPENAI_API_KEY and optional
--base-url or ANTHROPIC_BASE_URL / OPENAI_BASE_URL).

With no arguments at all, run plays a built-in demo: a scripted model fixes a
bug in a tiny project in a temporary workspace, so you see the whole system —
a parallel batch, an edit, a command the policy refuses — in a few seconds.

While it runs it prints a live transcript on stderr (turns with their
tokens and prompt-cache reads, tools with their own durations, permission
decisions, defenses), then a summary and the trajectory's path. Each result
is shown by its tool's display mode: full (the card and the first line of
the output), summary (the card alone) or hidden (no card; todo_write's list
is shown as a todo panel). A failed call and one that never ran always show
their card and the reason. Ctrl-C aborts: every pending tool call gets an
aborted result, the session is closed, and the trajectory still validates.
If the trajectory cannot be written (a full disk, an I/O error, the runs
directory deleted), nothing starts after the failure — no tool, hook or
model request — the session ends with reason record_failed, and run exits 1
naming the file and the error; a file that got no line is not printed.

The configuration holds permission rules and mode, hooks, MCP servers,
limits, defenses (defenses: {enable: [loop_detection], disable: [...]}) and
prompt caching (cache: {enabled: false} turns off the cache_control
breakpoints sent to Anthropic, on by default; ttl: 5m or 1h); unknown keys
are errors. It comes in two layers:

  trusted    --config FILE; else your own file, when it exists:
             $XDG_CONFIG_HOME/retrace/retrace.yaml or
             ~/.config/retrace/retrace.yaml (macOS: ~/Library/Application
             Support/retrace/retrace.yaml)
  untrusted  retrace.yaml in the workspace, layered over the trusted one

A workspace is someone else's code — a cloned repository can carry a
retrace.yaml — so its file may only restrict: deny and ask rules (added to
yours), disallowed_tools, protected_paths, a stricter mode (plan > default >
accept_edits > bypass; the stricter wins), lower limits, defenses turned
on, and caching turned off or a shorter cache ttl. A workspace file that asks for more — bypass or accept_edits mode, allow
rules, hooks, MCP servers, higher limits, defenses turned off — stops the run
with an error naming each setting's file, line and field. If you trust the workspace, add --trust-workspace (its
file is then layered like yours: its rules and hooks added, its mode and
limits replacing yours), or move those settings into your own file.

--headless refuses everything that would ask a person.

Sandbox. Every process a tool starts (bash) runs in a kernel sandbox, in
every permission mode, bypass included: it may write only the workspace
and a private temporary directory, may not read ~/.ssh, ~/.aws,
~/.config/gcloud, ~/.netrc, ~/.npmrc or .env files outside the workspace,
has no network, no capabilities, and a process limit (docs/sandbox.md).
sandbox: {mode: read-only} writes nothing but the temporary directory.
Turning it off — sandbox: {mode: off} in your own file, or --no-sandbox —
is recorded in session_start and said in the transcript; a workspace's
file may not turn it off. Where the kernel has no Landlock, no tool
process runs and the run says why.

Follow-ups. -i (--interactive) makes the run a conversation: each time the
model finishes its turn, the next prompt is read from stdin (one a line,
blank lines skipped) until stdin ends; without a PROMPT argument the first
prompt is read too. --continue SESSION (a session id in the runs directory,
or a trajectory file) carries a recorded session on: its conversation is
rebuilt from its trajectory, and PROMPT follows it, in the same workspace
(the recorded one; --workspace may only name it again). The continued
session is a new trajectory next to the old one, which stays as it was:
its session_start names the old session in continues, and it takes a
workspace snapshot of its own, so that retrace replay replays it. Either
way the prompts after the first are marked with user_prompt events, and
--max-turns bounds the turns of each prompt. A session that is unknown,
still running or torn is refused, and nothing is written.

Context. The loop compacts the history before a request once the context
passes compact_threshold (default 0.8) of the model's window: the usage
the API reported for the last reply, plus an estimate of what was added
since. Windows of common Anthropic and OpenAI models are built in; others
come from the configuration (models: {NAME: {context_window: N}}, or
limits.context_window), else a 200000-token window is assumed and a
warning says so. limits.compaction: summarize asks the model for a summary
of the older turns when dropping old tool outputs is not enough.

--tag KEY=VALUE (repeatable) labels the run: session_start records the
labels in tags, with the harness version and, for a build from a git
checkout, its revision, so that query (sessions.tags) and diff can tell a
before from an after. Keys are 1 to 64 of A-Z a-z 0-9 _ . : -; values may
also hold / + @ and no blank.

Exit codes: 0 the agent finished its turn, 4 it stopped before finishing
(max turns, budget, a defense, a refusal, an abort), 1 the model or retrace
failed, 2 bad flags, config or script.`,
		Example: `  retrace run
  retrace run --script turns.yaml --workspace ./repo "Fix the failing test"
  retrace run --script turns.yaml --tag prompt=v2 --tag branch=fix/flaky "Fix the failing test"
  retrace run --script turns.yaml --workspace ./my-own-repo --trust-workspace "Fix it"
  retrace run --script turns.yaml --continue 20261202-061500.123-0a1b2c3d "Now add a test"
  retrace run -i --provider anthropic --model claude-sonnet-4-5 < prompts.txt
  retrace run --provider anthropic --model claude-sonnet-4-5 --headless "Summarise README.md"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usage(fmt.Errorf("give the task as one argument (quote it); got %d arguments", len(args)))
			}
			if opts.batch && !opts.stream {
				return usage(errors.New("--batch-tools only changes a streamed session: add --stream"))
			}
			if cmd.Flags().Changed("max-turns") && opts.maxTurns < 1 {
				// 0 is the flag's unset value; given, it and a negative
				// limit would silently mean the default.
				return usage(fmt.Errorf("--max-turns %d: give a number of turns, at least 1 (or leave it out for the config's limit, else 50)", opts.maxTurns))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.prompt = args[0]
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runRun(ctx, sys, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.script, "script", "", "scripted model: a YAML file of turns (the mock LLM's format)")
	f.StringVar(&opts.provider, "provider", "", "real model provider: anthropic, openai (Responses API) or openai-chat")
	f.StringVar(&opts.model, "model", "", "model name for --provider")
	f.StringVar(&opts.baseURL, "base-url", "", "API endpoint for --provider (default from ANTHROPIC_BASE_URL / OPENAI_BASE_URL)")
	f.StringVar(&opts.workspace, "workspace", "", "directory the tools work in (default: the current directory)")
	f.StringVar(&opts.config, "config", "", "your configuration file, trusted; replaces the one in your user config directory")
	f.BoolVar(&opts.trustWorkspace, "trust-workspace", false, "let the workspace's retrace.yaml widen permissions and run hooks and MCP servers")
	f.BoolVar(&opts.headless, "headless", false, "never ask a person: every call that needs confirmation is refused")
	f.BoolVar(&opts.noSandbox, "no-sandbox", false, "run tool processes without the kernel sandbox (recorded in session_start and said in the transcript)")
	f.StringVar(&opts.runs, "runs", "", "directory to record the trajectory in (default $RETRACE_DIR or .retrace/runs)")
	f.IntVar(&opts.maxTurns, "max-turns", 0, "stop after this many model turns (default: the config's limit, else 50)")
	f.BoolVar(&opts.stream, "stream", false, "ask the model for streamed replies; each tool call starts as soon as its tool_use is complete")
	f.BoolVar(&opts.batch, "batch-tools", false, "with --stream, start the tool calls only once the whole reply has arrived (for comparison)")
	f.StringVar(&opts.continueSession, "continue", "", "carry a recorded session on: a session id in the runs directory, or a trajectory file")
	f.BoolVarP(&opts.interactive, "interactive", "i", false, "read follow-up prompts from stdin, one a line, until it ends")
	f.Var(&opts.labels, "tag", "run label KEY=VALUE recorded in session_start.tags, to tell runs apart in query and diff (repeatable)")
	return cmd
}

func runRun(ctx context.Context, sys *IO, opts *runOptions) error {
	var demo *scenarios.Scenario
	in := bufio.NewReader(sys.In)
	prompts := &promptReader{in: in, out: sys.Err}
	if opts.script == "" && opts.provider == "" && opts.prompt == "" && !opts.interactive && opts.continueSession == "" {
		var err error
		if demo, err = scenarios.BuiltinScenario(demoScenario); err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "retrace-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if err := demo.WriteWorkspace(dir); err != nil {
			return err
		}
		opts.workspace, opts.prompt, opts.headless = dir, demo.Prompt, true
		fmt.Fprintf(sys.Err, "retrace demo: a scripted model fixes a bug in a temporary workspace (%s)\n", dir)
		fmt.Fprintf(sys.Err, "  (the scenario %s; retrace eval --run '^%s$' checks what it must do)\n\n", demo.File, demo.Name)
	}
	if (opts.script == "") == (opts.provider == "") && demo == nil {
		return usage(errors.New("give exactly one model: --script FILE or --provider anthropic|openai|openai-chat"))
	}
	runs := opts.runs
	if runs == "" {
		runs = runsDir(sys)
	}
	workspace := opts.workspace
	var cont *harness.Continuation
	if opts.continueSession != "" {
		c, err := loadContinuation(runs, opts.continueSession)
		if err != nil {
			return err
		}
		if workspace != "" && !sameDir(workspace, c.Workspace) {
			return invalid(fmt.Errorf("--continue %s: the session ran in %s; a continued session runs in the same workspace (leave out --workspace, or give that one)", c.Session, c.Workspace))
		}
		if _, err := os.Stat(c.Workspace); err != nil {
			return invalid(fmt.Errorf("--continue %s: its workspace %s is gone: %w", c.Session, c.Workspace, err))
		}
		if opts.runs != "" && !sameDir(opts.runs, c.Dir) {
			return invalid(fmt.Errorf("--continue %s: the continued session is recorded next to the one it continues, in %s; leave out --runs", c.Session, c.Dir))
		}
		workspace, runs, cont = c.Workspace, c.Dir, &c
	}
	if opts.prompt == "" && opts.interactive {
		if p, ok := prompts.next(ctx); ok {
			opts.prompt = p
		}
	}
	if opts.prompt == "" {
		return usage(errors.New("give the task as an argument, e.g. retrace run --script turns.yaml \"Fix the failing test\" (with -i, or as the first line of stdin)"))
	}
	if workspace == "" {
		workspace = "."
	}
	resolved, err := loadRunConfig(sys, opts, workspace, demo)
	if err != nil {
		return err
	}
	if opts.noSandbox {
		resolved.Config.Sandbox.Mode = sandbox.ModeOff
		resolved.Sources["sandbox.mode"] = "--no-sandbox"
	}
	cfg, cfgName := resolved.Config, resolved.Name()
	provider, err := runProvider(sys, opts, demo)
	if err != nil {
		return err
	}
	if opts.maxTurns > 0 {
		cfg.Limits.MaxTurns = opts.maxTurns
		resolved.Sources["limits.max_turns"] = "--max-turns"
	}
	if cfg.Limits.MaxTurns == 0 {
		cfg.Limits.MaxTurns = defaultMaxTurns
	}
	maxConcurrent := 0
	if v := sys.Getenv("RETRACE_TOOL_MAX_CONCURRENT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return usage(fmt.Errorf("RETRACE_TOOL_MAX_CONCURRENT=%q: want a whole number of parallel tool calls, at least 1 (unset for the default, 10)", v))
		}
		maxConcurrent = n
	}
	spec := harness.Spec{
		Workspace: workspace, Config: cfg, ConfigName: cfgName, ConfigSources: resolved.Sources, Key: userKey(sys),
		Provider: provider, Model: opts.model, Stream: opts.stream, BatchTools: opts.batch,
		System: runSystemPrompt, Prompt: opts.prompt,
		MCPGrace: mcpGrace, Runs: runs, Clock: sys.Now,
		Snapshot:      &recorder.SnapshotOptions{Skip: []string{runs}},
		MaxConcurrent: maxConcurrent, HarnessVersion: "retrace " + currentVersion().Version,
		HarnessRevision: harness.Version().Revision, Tags: opts.labels.labels,
		Warn: func(msg string) { fmt.Fprintf(sys.Err, "warning: %s\n", msg) },
	}
	if !opts.headless {
		spec.Prompter = &harness.TerminalPrompter{In: in, Out: sys.Err, Describe: inputSummary}
	}
	if opts.interactive {
		spec.NextPrompt = prompts.next
	}
	if cont != nil {
		spec.History, spec.Continues = cont.History, cont.Session
	}
	if opts.provider != "" {
		warnUnknownModel(sys, opts.model, cfg)
	}
	var live *liveTranscript
	spec.Observe = func(rec *recorder.Recorder) trajectory.Sink {
		live = newLiveTranscript(sys.Err, rec)
		return live
	}
	sess, err := harness.Build(ctx, spec)
	if errors.Is(err, harness.ErrSpec) {
		return invalid(err)
	}
	if err != nil {
		return err
	}
	defer sess.Close()
	stopSync := recorder.SyncOnSignal(sess.Recorder, os.Interrupt, syscall.SIGTERM)
	defer stopSync()
	res, err := sess.Run(ctx)
	stats, cerr := sess.Close()
	if err != nil {
		return err
	}
	path := sess.Recorder.Path()
	if stats.Events == 0 {
		// Not even session_start reached the file, which then never
		// took its name: there is no trajectory to point at.
		path = ""
	}
	live.summary(res, sess.Recorder.SessionID(), path, stats)
	if res.Reason == trajectory.EndRecordFailed {
		return res.Err
	}
	if cerr != nil {
		return fmt.Errorf("the trajectory %s may be incomplete: %w", sess.Recorder.Path(), cerr)
	}
	switch res.Reason {
	case trajectory.EndTurn, trajectory.EndStopSequence:
		return nil
	case trajectory.EndError:
		return fmt.Errorf("the session ended with an error (%s): %v", res.ErrorCode, res.Err)
	}
	return &exitError{code: ExitInconclusive, err: errReported}
}

// warnUnknownModel says when the loop will compact against an assumed
// window: the model is in no table and the configuration gives none.
func warnUnknownModel(sys *IO, model string, cfg config.Config) {
	if cfg.Limits.ContextWindow > 0 || cfg.Limits.ContextTokens > 0 {
		return
	}
	if _, _, known := agent.LookupModel(model, cfg.Models); !known {
		fmt.Fprintf(sys.Err, "warning: retrace does not know the context window of model %s: compaction assumes %d tokens; give it in your retrace.yaml (models: {%s: {context_window: N}})\n",
			model, agent.DefaultContextWindow, model)
	}
}

// runSystemPrompt is the base system prompt of retrace run's agent.
const runSystemPrompt = "You are a careful software engineering agent working in the user's workspace. Use the tools to inspect before you change, and say what you did."

// mcpGrace is how long a session waits for its MCP servers before it
// starts without the slow ones (see harness.Spec.MCPGrace).
const mcpGrace = 2 * time.Second

// defaultMaxTurns is the turn limit of a session whose configuration sets
// none; it is also what a workspace's max_turns is compared with.
const defaultMaxTurns = 50

// loadRunConfig layers the session's configuration: --config, else the
// user's own file, as the trusted base, and the workspace's retrace.yaml
// over it, restrict-only unless --trust-workspace (see config.Resolve).
// The demo's policy ships in the binary, in its scenario: it is the
// trusted base, and the user's own file does not change the demo.
func loadRunConfig(sys *IO, opts *runOptions, workspace string, demo *scenarios.Scenario) (config.Resolved, error) {
	src := config.Sources{
		Explicit:       opts.config,
		Workspace:      filepath.Join(workspace, config.FileName),
		TrustWorkspace: opts.trustWorkspace,
		Defaults:       config.Config{Limits: agent.Limits{MaxTurns: defaultMaxTurns}},
	}
	if demo != nil {
		src.Defaults = config.Overlay(src.Defaults, demo.Config)
		src.DefaultsName = demo.File + " (config)"
	} else if dir := userConfigDir(sys.Getenv); dir != "" {
		src.User = config.UserFile(dir)
	}
	res, err := config.Resolve(src)
	if err != nil {
		return res, invalid(err)
	}
	return res, nil
}

// userKey is the key that signs the user's recordings (recorder.UserKey),
// kept in the user's configuration directory; retrace run, eval --out and
// replay share it. Without one the recordings are unsigned, and a replay
// treats them as someone else's: that is said, and nothing else changes.
func userKey(sys *IO) *recorder.Key {
	dir := userConfigDir(sys.Getenv)
	if dir == "" {
		return nil
	}
	k, err := recorder.UserKey(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		// No configuration directory of one's own (a container, a CI
		// runner's HOME=/): nothing to sign with, nothing to say.
		return nil
	}
	if err != nil {
		fmt.Fprintf(sys.Err, "warning: %v; the recordings are not signed as yours, so a replay applies only the settings it applies to anyone's\n", err)
		return nil
	}
	return k
}

// userConfigDir is os.UserConfigDir read through the injected environment,
// so that tests choose it and never read the real one; "" when the
// environment names none.
func userConfigDir(getenv func(string) string) string {
	switch runtime.GOOS {
	case "windows":
		return getenv("AppData")
	case "darwin", "ios":
		if home := getenv("HOME"); home != "" {
			return filepath.Join(home, "Library", "Application Support")
		}
	case "plan9":
		if home := getenv("home"); home != "" {
			return filepath.Join(home, "lib")
		}
	default:
		if dir := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
			return dir
		}
		if home := getenv("HOME"); home != "" {
			return filepath.Join(home, ".config")
		}
	}
	return ""
}

// runProvider builds the model (harness.NewProvider, as eval and replay
// do): the demo scenario's script, a script file, or a real provider
// configured from the environment.
func runProvider(sys *IO, opts *runOptions, demo *scenarios.Scenario) (llm.Provider, error) {
	if demo != nil {
		return modelError(harness.NewProvider(harness.Model{Script: demo.Script, ScriptName: demo.File}))
	}
	if opts.script != "" {
		return modelError(harness.NewProvider(harness.Model{ScriptFile: opts.script}))
	}
	return liveProvider(sys.Getenv, opts.provider, opts.model, opts.baseURL)
}

// liveProvider builds a real provider, name, for model, its key and
// endpoint read through getenv; a non-empty baseURL replaces the endpoint
// (harness.Model.Live). retrace run --provider and retrace eval --provider
// share it, so that both talk to a model the same way.
func liveProvider(getenv func(string) string, name, model, baseURL string) (llm.Provider, error) {
	p, err := harness.NewProvider(harness.Model{Live: name, Name: model, BaseURL: baseURL, Getenv: getenv})
	if errors.Is(err, harness.ErrSpec) {
		return nil, usage(err)
	}
	return p, err
}

// modelError maps a model the user gave that cannot be used to the
// invalid-input exit.
func modelError(p llm.Provider, err error) (llm.Provider, error) {
	if errors.Is(err, harness.ErrSpec) {
		return nil, invalid(err)
	}
	return p, err
}
