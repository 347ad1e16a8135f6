package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/terminal"
	"github.com/retrace-dev/retrace/trajectory"
	"github.com/spf13/cobra"
)

type mockServeOptions struct {
	script string
	// replay are the --from files: the sessions of one recording (the
	// main agent's and each subagent's).
	replay []string
	record string
	addr   string
	// mode and route are the --mode and --route names, parsed in runMockServe.
	mode, route string
	strict      bool
	// The server's timeouts; 0 takes mockllm's default (the flags refuse 0).
	readHeaderTimeout, readTimeout, idleTimeout time.Duration
}

func newMockCmd(sys *IO) *cobra.Command {
	mock := &cobra.Command{
		Use:   "mock",
		Short: "Run a mock LLM that speaks the Anthropic and OpenAI APIs",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	opts := &mockServeOptions{}
	serve := &cobra.Command{
		Use:   "serve (--script FILE | --from RUN.jsonl) [--mode ordered|match] [--route none|header|prompt] [--strict] [--addr 127.0.0.1:0] [--record DIR]",
		Short: "Serve a scripted (or replayed) model over HTTP until interrupted",
		Long: `Serve starts an HTTP server that answers like the Anthropic Messages API
(POST /v1/messages, /v1/messages/count_tokens), the OpenAI Chat Completions
API (POST /v1/chat/completions) and the OpenAI Responses API
(POST /v1/responses), in JSON and in SSE streams, with GET /v1/models.

Each request gets the next turn of the script. A script is YAML:

  model: mock-1
  turns:
    - expect: {last_user_contains: README}       # optional checks on the request
      content:
        - text: "I'll read it."
        - tool_use: {id: toolu_1, name: read, input: {file_path: README.md}}
    - expect:
        tool_results: [{tool_use_id: toolu_1, is_error: false}]
      content: [{text: "Done."}]
      fault: {status: 529, retry_after: 1s, times: 1}   # optional: 429/500/529,
        # max_tokens_in_tool_use, missing_stop_reason, stall: 5s, malformed_sse

An agent that runs subagents, or several sessions at once, interleaves
the requests of several conversations. A script can give each its own
turns; a request goes to the first conversation whose match holds, and
gets that conversation's next turn:

  conversations:
    - name: main
      match: {system_contains: "You are Claude Code"}   # or header: VALUE,
      turns: [...]                                     # first_user_contains: TEXT
    - name: explore
      match: {header: explore}    # the X-Retrace-Conversation request header
      turns: [...]

A request that matches no conversation gets 400 naming the matchers.
With the plain turns: format, --route gives each conversation its own
pass over the turns: --route header per X-Retrace-Conversation value,
--route prompt per system prompt and first user message (at most 1024
conversations at once; one more is an error, never a shared turn).

--from RUN.jsonl answers with a recording's model responses. --mode
picks which one answers a request; every mode fails closed (a request
with no recorded answer gets HTTP 500 with x-should-retry: false, never
a made-up answer or a live call):

  ordered  the n-th request gets the n-th recorded response (default);
           with --route prompt, the n-th of its own conversation. Each
           request is compared with the recorded one at its place and
           the first difference is logged.
  match    the response whose recorded request asked the same: the same
           system prompt, tools and messages, after the volatile parts
           (UUIDs, timestamps, dates, clock times, durations, /tmp paths,
           hex ids) are normalised. Interleaving does not matter, so
           concurrent conversations replay in any order. A miss names the
           closest recorded request and the first message that differs.

Requests are validated like the real APIs: a tool_use without its
tool_result (or a tool message answering no call) gets HTTP 400 with the
real error body. A request that misses an expectation gets 400 naming the
turn and field; a request after the last turn gets 500 naming the turn.

The first line on stdout is the server's URL. Point the SDKs at it:

  ANTHROPIC_BASE_URL=http://127.0.0.1:PORT
  OPENAI_BASE_URL=http://127.0.0.1:PORT/v1

Each request is logged on stderr, one line each. With --record DIR the
conversation is also written as a trajectory in DIR: the model requests
and responses (with their measured duration and time to first byte), and
the tool calls, so a session of any agent can be validated, queried and
measured like one of retrace's own. A call is known from the wire: a
tool_use answered by a tool_result in the next request gives tool_call,
tool_success or tool_failure, tool_end and tool_result, marked observed
"wire". The outcome is read by the classifier of the client (by its
User-Agent: Claude Code, Codex, opencode), the one retrace import uses,
else of the wire format (is_error on the Messages API; on the OpenAI
APIs, which carry no error flag, a tool_failure of kind unknown). Its own
run time is on the wire only when the client states it (Codex's wall
time); otherwise tool_end's duration_ms is 0 and the next model_request
carries the batch's wall time as batch_ms, never split among the calls.
Every failed attempt is a model_error: an injected status, a request the
server refused, a malformed reply (invalid_response) and one the client
hung up on (aborted, undelivered). Each conversation (see --route and
conversations:) is its own session in its own file; a subagent's
session_start names the parent session and the tool_use that started it.
Each event is written to the file when it happens: a request when it is
accepted, a reply just before its last bytes are sent, so even if the
server is killed the file holds every reply a client received. The file
is created with the first model call; a server that answered none leaves
no file.

The server keeps counters and the latest few requests, not the whole
history, so it can serve for days. A client that connects and sends
nothing, sends its request too slowly or leaves its connection idle is cut
when a timeout runs out, with a log line naming the client and the
timeout.

The server stops on Ctrl-C or SIGTERM and then reports, per
conversation, turns (or recorded responses) never requested and every
request it could not answer. With --strict any of those makes it exit 3.

Exit codes: 0 stopped cleanly, 2 bad flags or an invalid script (printed
as file:line: what is wrong), 1 the server could not start, 3 with
--strict: an expectation failed, a request missed, or turns were unused.`,
		Example: `  retrace mock serve --script mockllm/testdata/read_then_answer.yaml
  retrace mock serve --script turns.yaml --addr 127.0.0.1:8089
  retrace mock serve --from .retrace/runs/20261130-090000.jsonl
  retrace mock serve --from run.jsonl --mode match --strict
  retrace mock serve --script turns.yaml --route header`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, t := range []struct {
				flag string
				d    time.Duration
			}{{"--read-header-timeout", opts.readHeaderTimeout}, {"--read-timeout", opts.readTimeout}, {"--idle-timeout", opts.idleTimeout}} {
				if t.d <= 0 {
					return usage(fmt.Errorf("%s %s: give a positive duration such as 30s (without the timeout a slow or idle client would hold its connection forever)", t.flag, t.d))
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runMockServe(ctx, sys, opts)
		},
	}
	serve.Flags().StringVar(&opts.script, "script", "", "YAML script of turns to answer with")
	serve.Flags().StringArrayVar(&opts.replay, "from", nil, "recorded trajectory: answer with its model responses (see --mode), and log where each request differs from the recorded one; repeat it to serve the sessions of one recording together (a main agent's and its subagents')")
	serve.Flags().StringVar(&opts.mode, "mode", "ordered", "with --from, which recorded response answers a request: ordered (the next one) or match (the one whose recorded request asked the same, after normalisation)")
	serve.Flags().StringVar(&opts.route, "route", "none", "group requests into conversations, each with its own turns: none, header (the X-Retrace-Conversation header; --script only) or prompt (system prompt and first user message)")
	serve.Flags().BoolVar(&opts.strict, "strict", false, "exit 3 at shutdown when a request missed an expectation or a recorded answer, or turns were left unused")
	serve.Flags().StringVar(&opts.addr, "addr", "127.0.0.1:0", "address to listen on (port 0 picks a free port)")
	serve.Flags().StringVar(&opts.record, "record", "", "record each conversation as a trajectory in this directory: model calls and their failed attempts, and the tool calls seen on the wire")
	serve.Flags().DurationVar(&opts.readHeaderTimeout, "read-header-timeout", mockllm.DefaultReadHeaderTimeout, "cut a client that has not sent a request's headers this long after connecting or starting the request")
	serve.Flags().DurationVar(&opts.readTimeout, "read-timeout", mockllm.DefaultReadTimeout, "cut a client that has not sent a whole request, headers and body, in this time (replies are not limited)")
	serve.Flags().DurationVar(&opts.idleTimeout, "idle-timeout", mockllm.DefaultIdleTimeout, "close a keep-alive connection that waits this long for its next request")
	mock.AddCommand(serve)
	return mock
}

// runMockServe serves until ctx is done.
func runMockServe(ctx context.Context, sys *IO, opts *mockServeOptions) error {
	if (opts.script == "") == (len(opts.replay) == 0) {
		return usage(errors.New("give exactly one of --script FILE or --from RUN.jsonl"))
	}
	mode, err := mockllm.ParseMode(cmpOrStr(opts.mode, "ordered"))
	if err != nil {
		return usage(fmt.Errorf("--mode: %w", err))
	}
	route, err := mockllm.ParseRoute(cmpOrStr(opts.route, "none"))
	if err != nil {
		return usage(fmt.Errorf("--route: %w", err))
	}
	var src mockllm.Source
	// verify reports, at shutdown, what the source could not answer and
	// what it had left unused.
	var verify func() error
	var checker *mockllm.RequestChecker
	if opts.script != "" {
		if mode != mockllm.ModeOrdered {
			return usage(fmt.Errorf("--mode %s needs --from: a script has no recorded requests to match; its turns' expect: checks the requests", mode))
		}
		s, err := mockllm.LoadScriptWith(opts.script, mockllm.ScriptOptions{Route: route})
		var se *mockllm.ScriptError
		switch {
		case errors.As(err, &se) || errors.Is(err, fs.ErrNotExist):
			return invalid(err)
		case err != nil:
			return err
		}
		src, verify = s, s.Verify
	} else {
		var events []trajectory.Event
		for _, path := range opts.replay {
			evs, err := trajectory.ReadFile(path)
			if err != nil {
				return invalid(err)
			}
			events = append(events, evs...)
		}
		r, err := mockllm.NewReplayWith(events, mockllm.ReplayOptions{Mode: mode, Route: route})
		switch {
		case errors.Is(err, mockllm.ErrMispaired):
			return invalid(fmt.Errorf("--from %s: %w", strings.Join(opts.replay, " "), err))
		case err != nil:
			return usage(fmt.Errorf("--from %s: %w", strings.Join(opts.replay, " "), err))
		}
		src, verify = r, r.Verify
		if mode == mockllm.ModeOrdered && route == mockllm.RouteNone {
			checker = mockllm.NewRequestChecker(events)
		}
	}
	var recs *recordings
	var transcript *mockllm.Transcript
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(sys.Err, format, args...)
	}
	if opts.record != "" {
		if _, err := newLazyRecorder(opts.record, recorder.Options{Clock: sys.Now}); err != nil {
			return err
		}
		recs = &recordings{dir: opts.record, opts: recorder.Options{Clock: sys.Now},
			onErr: func(err error) { logf("retrace: --record: %v; the conversation is not recorded\n", err) }}
		transcript = mockllm.NewTranscriptSessions(recs.open)
	}
	sopts := mockllm.Options{Now: sys.Now, KeepRequests: -1,
		ReadHeaderTimeout: opts.readHeaderTimeout, ReadTimeout: opts.readTimeout, IdleTimeout: opts.idleTimeout,
		OnRequest: func(l mockllm.Logged) {
			logMu.Lock()
			defer logMu.Unlock()
			fmt.Fprintln(sys.Err, mockLogLine(l))
			if transcript != nil {
				transcript.Done(l)
			}
			if checker != nil && l.Request != nil && l.Status == 200 {
				if n, diff := checker.Check(l.Request); diff != "" {
					fmt.Fprintf(sys.Err, "  request %d differs from the recording: %s\n", n, diff)
				}
			}
		},
		OnCut: func(c mockllm.Cut) {
			logf("%s %s; see --%s-timeout\n", c.Time.Format("15:04:05.000"), c, c.Timeout)
		},
	}
	if transcript != nil {
		// A call whose recording fails is answered with an error, and
		// the failure is logged as it happens, not only at shutdown.
		recorded := func(record func(mockllm.Logged) error) func(mockllm.Logged) error {
			return func(l mockllm.Logged) error {
				err := record(l)
				if err != nil {
					logf("retrace: --record: %v; the client gets an error instead of a reply that cannot be recorded\n", err)
				}
				return err
			}
		}
		sopts.OnAccept, sopts.OnAnswer = recorded(transcript.Accept), recorded(transcript.Answer)
	}
	srv := mockllm.NewServer(src, sopts)
	url, err := srv.Start(opts.addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(sys.Out, "mock LLM listening on %s\n", url)
	fmt.Fprintf(sys.Out, "  export ANTHROPIC_BASE_URL=%s\n  export OPENAI_BASE_URL=%s/v1\n", url, url)
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		return fmt.Errorf("stop mock LLM: %w", err)
	}
	logMu.Lock()
	defer logMu.Unlock()
	st := srv.Stats()
	fmt.Fprintf(sys.Err, "mock LLM stopped after %s (%d answered, %d failed", plural(int(st.Requests), "request"), st.Answered, st.Failed)
	if st.Cut > 0 {
		fmt.Fprintf(sys.Err, "; %s cut by a timeout", plural(int(st.Cut), "connection"))
	}
	fmt.Fprintln(sys.Err, ")")
	if recs != nil {
		if err := closeRecording(sys, recs, transcript); err != nil {
			return err
		}
	}
	if err := verify(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(sys.Err, "note: "+line)
		}
		if opts.strict {
			fmt.Fprintln(sys.Err, "retrace: --strict: the session did not go as scripted (see the notes above)")
			return &exitError{code: ExitGate, err: errReported}
		}
	}
	return nil
}

func cmpOrStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// closeRecording ends the recorded sessions and says where they are.
func closeRecording(sys *IO, recs *recordings, transcript *mockllm.Transcript) error {
	list := recs.all()
	started := 0
	for _, rec := range list {
		if rec.started() {
			started++
		}
	}
	if started == 0 {
		fmt.Fprintf(sys.Err, "trajectory: none written, no model call was answered (--record %s)\n", recs.dir)
		return nil
	}
	if !transcript.Close() {
		fmt.Fprintln(sys.Err, "note: the agent stopped in the middle of a turn; a trajectory has no session_end")
	}
	var errs []error
	for _, rec := range list {
		if !rec.started() {
			continue
		}
		st, err := rec.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("record in %s: %w", rec.dir, err))
			continue
		}
		fmt.Fprintf(sys.Err, "trajectory: %s (%s)\n", rec.Path(), st)
	}
	return errors.Join(errs...)
}

// recordings are the trajectory files of a --record server: one per
// conversation (the main agent, each subagent), each created with its
// first event. It is safe for concurrent use.
type recordings struct {
	dir   string
	opts  recorder.Options
	onErr func(error)

	mu   sync.Mutex
	list []*lazyRecorder
}

// open returns the sink of a new conversation's session (the
// mockllm.NewTranscriptSessions callback).
func (r *recordings) open(string) trajectory.Sink {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := &lazyRecorder{dir: r.dir, opts: r.opts, onErr: r.onErr}
	r.list = append(r.list, rec)
	return rec
}

// all returns the recorders opened so far.
func (r *recordings) all() []*lazyRecorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.list)
}

// lazyRecorder is a trajectory.Sink that creates its recorder.Recorder
// with the first event, so that a server that answered nothing leaves no
// file (an empty one would not validate). It is safe for concurrent use.
type lazyRecorder struct {
	dir  string
	opts recorder.Options

	// onErr reports, once, that the file could not be created.
	onErr func(error)

	mu  sync.Mutex
	rec *recorder.Recorder
	err error // why the file could not be created; events are then dropped
}

// newLazyRecorder checks now that dir can take the trajectory file, so a
// bad --record fails at start rather than at the first request.
func newLazyRecorder(dir string, opts recorder.Options) (*lazyRecorder, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("--record: cannot create %s: %w", dir, err)
	}
	probe, err := os.CreateTemp(dir, ".retrace-probe-*")
	if err != nil {
		return nil, fmt.Errorf("--record: cannot write in %s: %w (record to a writable directory)", dir, err)
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name())
	return &lazyRecorder{dir: dir, opts: opts}, nil
}

// Emit implements trajectory.Sink.
func (l *lazyRecorder) Emit(turn int, p trajectory.Payload) {
	l.mu.Lock()
	var failed error
	if l.rec == nil && l.err == nil {
		l.rec, l.err = recorder.Create(l.dir, l.opts)
		failed = l.err
	}
	rec := l.rec
	l.mu.Unlock()
	if failed != nil && l.onErr != nil {
		l.onErr(failed)
	}
	if rec != nil {
		rec.Emit(turn, p)
	}
}

// Flush writes the emitted events to the file.
func (l *lazyRecorder) Flush() error {
	l.mu.Lock()
	rec, err := l.rec, l.err
	l.mu.Unlock()
	if rec == nil {
		return err
	}
	return rec.Flush()
}

// SessionID returns the session id of the file, "" before the first
// event; a subagent's session_start links to it.
func (l *lazyRecorder) SessionID() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rec == nil {
		return ""
	}
	return l.rec.SessionID()
}

// started reports whether a file was created or its creation failed.
func (l *lazyRecorder) started() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec != nil || l.err != nil
}

// Path returns the trajectory file's path, "" before the first event.
func (l *lazyRecorder) Path() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rec == nil {
		return ""
	}
	return l.rec.Path()
}

// Close closes the recorder, or returns why there was none.
func (l *lazyRecorder) Close() (recorder.Stats, error) {
	l.mu.Lock()
	rec, err := l.rec, l.err
	l.mu.Unlock()
	if rec == nil {
		return recorder.Stats{}, err
	}
	return rec.Close()
}

// mockLogLine is one request as a line: time, method, path, status, what
// answered. The client wrote the path (decoded from its percent escapes),
// the conversation and the model name, so the line is escaped for the
// terminal.
func mockLogLine(l mockllm.Logged) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %d %s", l.Time.Format("15:04:05.000"), l.Method, l.Path, l.Status, l.Endpoint)
	if l.Conversation != "" {
		fmt.Fprintf(&b, " conversation=%s", l.Conversation)
	}
	if l.Turn > 0 {
		fmt.Fprintf(&b, " turn=%d", l.Turn)
	}
	if l.Stream {
		b.WriteString(" stream")
	}
	if l.Request != nil {
		fmt.Fprintf(&b, " model=%s messages=%d tools=%d", l.Request.Model, len(l.Request.Messages), len(l.Request.Tools))
	}
	if l.Error != "" {
		fmt.Fprintf(&b, " error=%q", l.Error)
	}
	return terminal.Line(b.String())
}
