package scenarios

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/retrace-dev/retrace/harness"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/results"
	"github.com/retrace-dev/retrace/trajectory"
)

// ErrAgentMissing is wrapped by the error of MissingAgent and of a run
// whose agent CLI is not installed.
var ErrAgentMissing = errors.New("the agent CLI is not installed")

// ErrNoIsolation is wrapped by the error of a run that requires a
// network namespace (agent.isolation: required, Options.RequireIsolation)
// on a platform that gives none.
var ErrNoIsolation = errors.New("no network namespace for the agent")

// MissingAgent returns an error wrapping ErrAgentMissing when s runs an
// agent CLI that is not on PATH, saying which and how to get it; nil for
// any other scenario. retrace eval skips such scenarios with the reason,
// unless --require-agents.
func MissingAgent(s *Scenario) error {
	if s.Agent == nil {
		return nil
	}
	bin := profileOf(s.Agent).bin
	if _, err := exec.LookPath(bin); err != nil {
		hint := cmp.Or(profileOf(s.Agent).install, "install it or put it on PATH")
		return fmt.Errorf("%w: scenario %s runs %s, and %s is not on PATH (%s)", ErrAgentMissing, s.Name, agentName(s.Agent), bin, hint)
	}
	return nil
}

// AgentProgram returns the program s's agent CLI runs (claude, codex,
// the command's first word); "" for a scenario of retrace's own runtime.
func AgentProgram(s *Scenario) string {
	if s.Agent == nil {
		return ""
	}
	return profileOf(s.Agent).bin
}

// agentFiles are the files a run of an agent leaves beside its
// recording, for the reader who wants to know what the agent said.
const (
	agentOut = "agent.out"
	agentErr = "agent.err"
)

// runAgent plays one repeat of a scenario of an agent CLI: the mock LLM
// serves the scenario's script and records the wire, the agent runs in a
// fresh workspace with the mock as its model and (where the platform
// allows) no other network, its own transcript is imported, and both
// become one session, checked like any run.
func (r *runner) runAgent(ctx context.Context, s *Scenario, index, repeat int) (res results.RunResult) {
	res.Repeat = repeat
	clock := r.opts.clock()
	start := clock()
	defer func() { res.DurationMs = trajectory.Millis(clock().Sub(start)) }()
	if err := MissingAgent(s); err != nil {
		res.Error = err.Error()
		return res
	}
	key := fmt.Sprintf("%d-%s", index, s.Name)
	ws := filepath.Join(r.root, "ws", key, strconv.Itoa(repeat))
	if err := writeWorkspace(ws, s.Files); err != nil {
		res.Error = err.Error()
		return res
	}
	dir := filepath.Join(r.root, "agent", key, strconv.Itoa(repeat))
	home := filepath.Join(dir, "home")
	for _, d := range []string{home, filepath.Join(dir, "wire")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			res.Error = fmt.Sprintf("eval: %v", err)
			return res
		}
	}
	script, err := mockllm.ParseScript(s.Script, s.File)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	tags := map[string]string{harness.ScenarioTag: s.Name, "eval_repeat": strconv.Itoa(repeat), "agent": agentName(s.Agent)}
	if s.Agent.Profile == "" {
		tags["agent"] = "command"
	}
	// The client's version goes into the result and the recording; one
	// other than the profile's tested one is warned of once per eval.
	res.AgentVersion = r.versions.of(ctx, s.Agent, r.opts.agentPath(), filepath.Join(r.root, "agent-version"), r.warnf)
	if res.AgentVersion != "" {
		tags["agent_version"] = res.AgentVersion
	}
	wire := &wireSessions{dir: filepath.Join(dir, "wire"), tags: tags, clock: r.opts.Clock}
	transcript := mockllm.NewTranscriptSessions(wire.open)
	watched := &watchedScript{Script: script}
	srv := mockllm.NewServer(watched, mockllm.Options{KeepRequests: -1, Now: r.opts.Clock,
		OnAccept: transcript.Accept, OnAnswer: transcript.Answer, OnRequest: transcript.Done})

	timeout := cmp.Or(s.Timeout, DefaultTimeout)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	prof := profileOf(s.Agent)
	in := agentInvocation{prompt: s.Prompt, model: script.Model(), home: home}
	// Inside its own namespace the agent finds the mock at agentMockAddr,
	// carried to a Unix socket of the run's; without one, at a loopback
	// port of this process's.
	// A Unix socket's path has at most 107 bytes, so it lives in a short
	// directory of its own rather than in the run's.
	sockDir, err := os.MkdirTemp("", "retrace-agent-")
	if err != nil {
		res.Error = fmt.Sprintf("eval: %v", err)
		return res
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "mock.sock")
	in.mockURL = "http://" + agentMockAddr
	argv := func() []string { return append(prof.argv(in), s.Agent.Args...) }
	cmd, isolated, why := isolatedCommand(rctx, sock, argv())
	if isolated {
		ln, err := net.Listen("unix", sock)
		if err != nil {
			res.Error = fmt.Sprintf("eval: the mock LLM: %v", err)
			return res
		}
		srv.StartOn(ln)
	} else {
		if s.Agent.RequireIsolation || r.opts.RequireIsolation {
			res.Error = fmt.Errorf("%w: %s (scenario %s requires one: agent.isolation: required or --require-isolation)", ErrNoIsolation, why, s.Name).Error()
			return res
		}
		url, err := srv.Start("127.0.0.1:0")
		if err != nil {
			res.Error = fmt.Sprintf("eval: %v", err)
			return res
		}
		in.mockURL = url
		a := argv()
		cmd = exec.CommandContext(rctx, a[0], a[1:]...)
		r.warnf("WARNING: %s runs %s WITHOUT network isolation (%s): it can reach the network; only its model calls go to the mock", s.Name, agentName(s.Agent), why)
	}
	defer srv.Close()
	res.Warnings = append(res.Warnings, r.isolationNote(isolated, why)...)
	if err := prof.setup(in); err != nil {
		res.Error = fmt.Sprintf("eval: prepare the agent's home: %v", err)
		return res
	}
	env := map[string]string{"PATH": r.opts.agentPath(), "HOME": home, "TERM": "dumb", "LANG": "C.UTF-8", "TMPDIR": dir}
	maps.Copy(env, prof.env(in))
	maps.Copy(env, s.Agent.Env)
	for _, k := range slices.Sorted(maps.Keys(env)) {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	cmd.Dir = ws
	out, err := os.Create(filepath.Join(dir, agentOut))
	if err != nil {
		res.Error = fmt.Sprintf("eval: %v", err)
		return res
	}
	defer out.Close()
	errf, err := os.Create(filepath.Join(dir, agentErr))
	if err != nil {
		res.Error = fmt.Sprintf("eval: %v", err)
		return res
	}
	defer errf.Close()
	cmd.Stdout, cmd.Stderr = out, errf
	ownProcessGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	var exit *exec.ExitError
	switch {
	case rctx.Err() != nil:
		res.EndError = fmt.Sprintf("the agent did not finish within %s (limits.timeout)", timeout)
		res.ExitCode = 4
	case errors.As(runErr, &exit):
		res.ExitCode = exit.ExitCode()
		res.EndError = fmt.Sprintf("%s exited with %d%s", agentName(s.Agent), res.ExitCode, stderrTail(filepath.Join(dir, agentErr)))
	case runErr != nil:
		res.Error = fmt.Sprintf("eval: run %s: %v", agentName(s.Agent), runErr)
		return res
	}
	_ = srv.Close()
	transcript.Close()
	main, sides, subs, err := wire.close(mainRule(s.Agent))
	if err != nil {
		res.Error = err.Error()
		return res
	}
	refused := watched.failure(s)
	if main == "" {
		why := ""
		if refused != nil {
			why = ": " + refused.Got
		}
		if res.EndError != "" {
			why += ": " + res.EndError
		}
		res.Error = fmt.Sprintf("%s made no model call the mock answered%s%s", agentName(s.Agent), why, stderrTail(filepath.Join(dir, agentErr)))
		return res
	}
	format, at := prof.transcript(in)
	merged, notes, err := mergeAgentSessions(ctx, mergeInput{wire: main, subagents: subs, sides: sides, format: format, transcript: at,
		stage: filepath.Join(dir, "import"), runs: r.runs})
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Warnings = append(res.Warnings, notes...)
	res.Trajectory, res.Session, res.SideSessions = merged.path, merged.session, merged.sides
	rec, err := readRecording(res.Trajectory)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	if rec.end != nil {
		if end, ok := rec.end.Payload.(*trajectory.SessionEnd); ok {
			res.Reason, res.Turns = end.Reason, end.Turns
		}
	} else {
		res.Reason = trajectory.EndAborted
	}
	// A request the script refused is the first thing to read: what the
	// agent asked that the script did not hold, which is usually why it
	// then exited with an error.
	if refused != nil {
		res.Failures = append(res.Failures, *refused)
	}
	res.Failures = append(res.Failures, checkOutcome(s.Expect.Outcome, rec, res)...)
	res.Failures = append(res.Failures, checkFiles(s, ws, rec)...)
	for _, e := range s.Expect.Events {
		res.Failures = append(res.Failures, checkEvent(e, rec)...)
	}
	for _, r := range s.Expect.Replies {
		res.Failures = append(res.Failures, checkReply(r, rec)...)
	}
	res.Failures = append(res.Failures, checkSequence(s.Expect.Sequence, rec)...)
	res.Failures = append(res.Failures, checkDivergences(s, rec)...)
	if r.opts.AfterRun != nil {
		r.opts.AfterRun(s, repeat, ws, res)
	}
	return res
}

// isolationNote says, in the run's result, how the agent was confined.
func (r *runner) isolationNote(isolated bool, why string) []string {
	if isolated {
		return nil
	}
	return []string{"the agent ran without network isolation: " + why}
}

// warnf reports a warning through Options.Warn, when set.
func (r *runner) warnf(format string, args ...any) {
	if r.opts.Warn != nil {
		r.opts.Warn(fmt.Sprintf(format, args...))
	}
}

// agentPath is the PATH agent processes get: Options.AgentPath, else this
// process's.
func (o Options) agentPath() string {
	if o.AgentPath != "" {
		return o.AgentPath
	}
	return os.Getenv("PATH")
}

// wireSessions are the wire recordings of one agent run, one a
// conversation (the agent's, each subagent's), each created with its
// first event and tagged as the scenario's. It is safe for concurrent use.
type wireSessions struct {
	dir   string
	tags  map[string]string
	clock func() time.Time

	mu   sync.Mutex
	list []*wireSink
}

// open is the mockllm.NewTranscriptSessions callback.
func (w *wireSessions) open(conversation string) trajectory.Sink {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &wireSink{w: w, conversation: conversation}
	w.list = append(w.list, s)
	return s
}

// close closes every recording and returns the main session's file,
// picked by rule (see MainFirst and the others) among the conversations
// that are no subagent's, the other such conversations' (sides), and the
// subagents'. A rule that picks none (route: of a conversation that
// never started) is an error naming the conversations there were.
func (w *wireSessions) close(rule string) (main string, sides, subs []string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	var tops []*wireSink
	for _, s := range w.list {
		s.mu.Lock()
		rec, serr, sub := s.rec, s.err, s.subagent
		s.mu.Unlock()
		if serr != nil {
			errs = append(errs, serr)
		}
		if rec == nil {
			continue
		}
		if _, err := rec.Close(); err != nil {
			errs = append(errs, err)
		}
		if sub {
			subs = append(subs, rec.Path())
			continue
		}
		tops = append(tops, s)
	}
	if err := errors.Join(errs...); err != nil {
		return "", nil, nil, fmt.Errorf("eval: record the agent's model calls: %w", err)
	}
	if len(tops) == 0 {
		return "", nil, subs, nil
	}
	pick, err := pickMain(tops, rule)
	if err != nil {
		return "", nil, nil, err
	}
	for i, s := range tops {
		if i == pick {
			main = s.rec.Path()
		} else {
			sides = append(sides, s.rec.Path())
		}
	}
	return main, sides, subs, nil
}

// pickMain returns the index in tops, the conversations in the order
// they started, of the one rule names.
func pickMain(tops []*wireSink, rule string) (int, error) {
	switch rule {
	case MainLast:
		return len(tops) - 1, nil
	case MainLongest:
		best, bestSize := 0, int64(-1)
		for i, s := range tops {
			size := int64(0)
			if fi, err := os.Stat(s.rec.Path()); err == nil {
				size = fi.Size()
			}
			if i == 0 || s.requests > tops[best].requests || s.requests == tops[best].requests && size >= bestSize {
				best, bestSize = i, size
			}
		}
		return best, nil
	}
	if name, ok := strings.CutPrefix(rule, MainRoute); ok {
		var names []string
		for i, s := range tops {
			if s.conversation == name {
				return i, nil
			}
			names = append(names, strconv.Quote(s.conversation))
		}
		return 0, fmt.Errorf("agent.main %q: the agent's requests started no conversation %q (they started %s)", rule, name, strings.Join(names, ", "))
	}
	return 0, nil
}

// wireSink is the sink of one conversation: it creates its recorder with
// the first event, so that a conversation that never started leaves no
// file, and adds the scenario's tags to its session_start.
type wireSink struct {
	w *wireSessions

	// conversation is the script's conversation the sink records.
	conversation string

	mu       sync.Mutex
	rec      *recorder.Recorder
	err      error
	subagent bool
	// requests counts the conversation's model requests (MainLongest).
	requests int
}

// Emit implements trajectory.Sink.
func (s *wireSink) Emit(turn int, p trajectory.Payload) {
	s.mu.Lock()
	if s.rec == nil && s.err == nil {
		s.rec, s.err = recorder.Create(s.w.dir, recorder.Options{Clock: s.w.clock})
	}
	rec := s.rec
	if st, ok := p.(*trajectory.SessionStart); ok {
		st.Tags = maps.Clone(st.Tags)
		if st.Tags == nil {
			st.Tags = map[string]string{}
		}
		maps.Copy(st.Tags, s.w.tags)
		s.subagent = st.ParentSession != ""
	}
	if _, ok := p.(*trajectory.ModelRequest); ok {
		s.requests++
	}
	s.mu.Unlock()
	if rec != nil {
		rec.Emit(turn, p)
	}
}

// Flush writes the emitted events to the file.
func (s *wireSink) Flush() error {
	s.mu.Lock()
	rec := s.rec
	s.mu.Unlock()
	if rec == nil {
		return nil
	}
	return rec.Flush()
}

// SessionID returns the session's id, "" before its first event; a
// subagent's session_start links to it.
func (s *wireSink) SessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil {
		return ""
	}
	return s.rec.SessionID()
}

// maxStderrTail is how much of an agent's standard error a run's error
// quotes: its end, where a CLI says why it stopped.
const maxStderrTail = 1024

// stderrTail returns the end of the agent's standard error in file, to
// quote in a run's error (the file itself goes with the run's temporary
// directory); "" when it wrote nothing there.
func stderrTail(file string) string {
	data, err := os.ReadFile(file)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return ""
	}
	if len(data) > maxStderrTail {
		data = append([]byte("..."), data[len(data)-maxStderrTail:]...)
	}
	return "; its stderr ends: " + strings.TrimSpace(string(data))
}
