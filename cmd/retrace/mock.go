package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
	"github.com/spf13/cobra"
)

type mockServeOptions struct {
	script string
	replay string
	record string
	addr   string
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
		Use:   "serve (--script FILE | --from RUN.jsonl) [--addr 127.0.0.1:0] [--record DIR]",
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

Requests are validated like the real APIs: a tool_use without its
tool_result (or a tool message answering no call) gets HTTP 400 with the
real error body. A request that misses an expectation gets 400 naming the
turn and field; a request after the last turn gets 500 naming the turn.

The first line on stdout is the server's URL. Point the SDKs at it:

  ANTHROPIC_BASE_URL=http://127.0.0.1:PORT
  OPENAI_BASE_URL=http://127.0.0.1:PORT/v1

Each request is logged on stderr, one line each. With --record DIR the
conversation is also written as a trajectory in DIR: the model requests
and responses, and the tool results the agent sends back, so a session of
any agent can be validated, queried and replayed like one of retrace's own.
The server stops on Ctrl-C or SIGTERM and then reports turns that were
never requested.

Exit codes: 0 stopped cleanly, 2 bad flags or an invalid script (printed
as file:line: what is wrong), 1 the server could not start.`,
		Example: `  retrace mock serve --script mockllm/testdata/read_then_answer.yaml
  retrace mock serve --script turns.yaml --addr 127.0.0.1:8089
  retrace mock serve --from .retrace/runs/20261130-090000.jsonl`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runMockServe(ctx, sys, opts)
		},
	}
	serve.Flags().StringVar(&opts.script, "script", "", "YAML script of turns to answer with")
	serve.Flags().StringVar(&opts.replay, "from", "", "recorded trajectory: answer with its model responses, in order, and log where each request differs from the recorded one")
	serve.Flags().StringVar(&opts.addr, "addr", "127.0.0.1:0", "address to listen on (port 0 picks a free port)")
	serve.Flags().StringVar(&opts.record, "record", "", "record the agent's conversation as a trajectory in this directory (model requests and responses, and the tool results the agent sends back)")
	mock.AddCommand(serve)
	return mock
}

// runMockServe serves until ctx is done.
func runMockServe(ctx context.Context, sys *IO, opts *mockServeOptions) error {
	if (opts.script == "") == (opts.replay == "") {
		return usage(errors.New("give exactly one of --script FILE or --from RUN.jsonl"))
	}
	var src mockllm.Source
	var script *mockllm.Script
	var checker *mockllm.RequestChecker
	if opts.script != "" {
		s, err := mockllm.LoadScript(opts.script)
		var se *mockllm.ScriptError
		switch {
		case errors.As(err, &se) || errors.Is(err, fs.ErrNotExist):
			return invalid(err)
		case err != nil:
			return err
		}
		src, script = s, s
	} else {
		events, err := trajectory.ReadFile(opts.replay)
		if err != nil {
			return invalid(err)
		}
		src, checker = mockllm.NewReplay(events), mockllm.NewRequestChecker(events)
	}
	var rec *recorder.Recorder
	var transcript *mockllm.Transcript
	if opts.record != "" {
		r, err := recorder.Create(opts.record, recorder.Options{Clock: sys.Now})
		if err != nil {
			return err
		}
		rec, transcript = r, mockllm.NewTranscript(r)
	}
	var logMu sync.Mutex
	srv := mockllm.NewServer(src, mockllm.Options{Now: sys.Now, OnRequest: func(l mockllm.Logged) {
		if transcript != nil {
			transcript.Add(l)
		}
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintln(sys.Err, mockLogLine(l))
		if checker != nil && l.Request != nil && l.Status == 200 {
			if n, diff := checker.Check(l.Request); diff != "" {
				fmt.Fprintf(sys.Err, "  request %d differs from the recording: %s\n", n, diff)
			}
		}
	}})
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
	fmt.Fprintf(sys.Err, "mock LLM stopped after %s\n", plural(len(srv.Requests()), "request"))
	if rec != nil {
		if !transcript.Close() {
			fmt.Fprintln(sys.Err, "note: the agent stopped in the middle of a turn; the trajectory has no session_end")
		}
		st, err := rec.Close()
		if err != nil {
			return fmt.Errorf("record %s: %w", rec.Path(), err)
		}
		fmt.Fprintf(sys.Err, "trajectory: %s (%s)\n", rec.Path(), st)
	}
	if script != nil {
		if err := script.Verify(); err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintln(sys.Err, "note: "+line)
			}
		}
	}
	return nil
}

// mockLogLine is one request as a line: time, method, path, status, what answered.
func mockLogLine(l mockllm.Logged) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %d %s", l.Time.Format("15:04:05.000"), l.Method, l.Path, l.Status, l.Endpoint)
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
	return b.String()
}
