package mockllm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

func TestAnExternalAgentsSessionThroughTheServerIsAValidTrajectory(t *testing.T) {
	script, err := mockllm.LoadScript("testdata/read_then_answer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec := recorder.New(&buf, recorder.Options{})
	tr := mockllm.NewTranscript(rec)
	srv := mockllm.NewServer(script, mockllm.Options{OnAccept: tr.Accept, OnAnswer: tr.Answer})
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	prov, err := llm.NewAnthropic(llm.Options{Model: "mock-1", APIKey: "test", BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	read := []llm.ToolDef{{Name: "read", Description: "Reads a file.", Schema: []byte(`{"type":"object","properties":{"file_path":{"type":"string"}}}`)}}
	msgs := []trajectory.Message{{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "What does the README say?"}}}}
	resp, err := prov.Stream(context.Background(), llm.Request{System: "You are terse.", Tools: read, Messages: msgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	use := resp.ToolUses()[0]
	msgs = append(msgs, trajectory.Message{Role: trajectory.RoleAssistant, Content: resp.Content},
		trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockToolResult, ToolUseID: use.ID, Content: "# retrace"}}})
	if _, err := prov.Complete(context.Background(), llm.Request{System: "You are terse.", Tools: read, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	if !tr.Close() {
		t.Fatal("a conversation that ended its turn must get a session_end")
	}
	if _, err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := trajectory.ValidateStream(bytes.NewReader(buf.Bytes()), "external.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Error(p)
	}
	counts := map[trajectory.EventType]int{}
	dec := trajectory.NewDecoder(bytes.NewReader(buf.Bytes()), "external.jsonl")
	for {
		ev, err := dec.Next()
		if err != nil {
			break
		}
		counts[ev.Type()]++
		if r, ok := ev.Payload.(*trajectory.ToolResult); ok && (r.Tool != "read" || r.Text != "# retrace") {
			t.Errorf("tool_result %+v", r)
		}
		// A recording is v 2: the second request keeps the first's one
		// message and records the two added (linear in the turns).
		if r, ok := ev.Payload.(*trajectory.ModelRequest); ok && counts[ev.Type()] == 2 &&
			(ev.V != trajectory.Version || r.MessagesKept != 1 || len(r.MessageHashes) != 2 || r.PrefixHash == "") {
			t.Errorf("second model_request v %d, kept %d, %d hashes, prefix %q; want v 2 keeping 1 with 2 new", ev.V, r.MessagesKept, len(r.MessageHashes), r.PrefixHash)
		}
	}
	want := map[trajectory.EventType]int{trajectory.TypeSessionStart: 1, trajectory.TypeModelRequest: 2, trajectory.TypeModelResponse: 2,
		trajectory.TypeToolResult: 1, trajectory.TypeSessionEnd: 1}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%d %s events, want %d (all: %v)", counts[k], k, n, counts)
		}
	}
}

func TestTheTranscriptWritesEachEventWhenItHappensAndRecordsRetriesAsAttempts(t *testing.T) {
	script, err := mockllm.LoadScript("testdata/faults.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := recorder.Create(t.TempDir(), recorder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	tr := mockllm.NewTranscript(rec)
	// onDisk reads the event types in the file while the recorder is open.
	onDisk := func() []trajectory.EventType {
		t.Helper()
		data, err := os.ReadFile(rec.Path())
		if err != nil {
			t.Fatal(err)
		}
		var types []trajectory.EventType
		dec := trajectory.NewDecoder(bytes.NewReader(data), rec.Path())
		for {
			ev, err := dec.Next()
			if err != nil {
				return types
			}
			types = append(types, ev.Type())
		}
	}
	var atAnswer []trajectory.EventType
	srv := mockllm.NewServer(script, mockllm.Options{OnAccept: tr.Accept, OnAnswer: func(l mockllm.Logged) error {
		err := tr.Answer(l)
		atAnswer = onDisk()
		return err
	}})
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	prov, err := llm.NewAnthropic(llm.Options{Model: "mock-1", APIKey: "test", BaseURL: url, MaxRetries: 3})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []trajectory.Message{{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "hi"}}}}
	if _, err := prov.Complete(context.Background(), llm.Request{Messages: msgs}); err != nil {
		t.Fatalf("the client should retry past two 529s: %v", err)
	}
	want := []trajectory.EventType{trajectory.TypeSessionStart, trajectory.TypeModelRequest,
		trajectory.TypeModelError, trajectory.TypeModelError, trajectory.TypeModelResponse}
	if !slices.Equal(atAnswer, want) {
		t.Fatalf("on disk before the reply's last byte was sent: %v, want %v", atAnswer, want)
	}
	events, err := trajectory.ReadFile(rec.Path())
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{2, 3} {
		me, ok := events[n].Payload.(*trajectory.ModelError)
		if !ok || me.StatusCode != 529 || me.ErrorKind != trajectory.ModelOverloaded || me.Attempt != i+1 {
			t.Fatalf("event %d is %+v, want attempt %d overloaded with 529", n, events[n].Payload, i+1)
		}
	}
}

// wireRecording serves script with a Transcript into an in-memory
// recorder fed from all three hooks, and returns the server's URL and a
// function that closes the transcript and returns its events, checked by
// the validator.
func wireRecording(t *testing.T, script string) (*mockllm.Server, string, func() []trajectory.Event) {
	t.Helper()
	s, err := mockllm.ParseScript([]byte(script), "wire.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	rec := recorder.New(&buf, recorder.Options{})
	tr := mockllm.NewTranscript(rec)
	srv := mockllm.NewServer(s, mockllm.Options{OnAccept: tr.Accept, OnAnswer: tr.Answer, OnRequest: tr.Done})
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, url, func() []trajectory.Event {
		t.Helper()
		_ = srv.Close()
		tr.Close()
		if _, err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		rep, err := trajectory.ValidateStream(bytes.NewReader(buf.Bytes()), "wire.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Problems {
			t.Errorf("the recording does not validate: %v", p)
		}
		var events []trajectory.Event
		dec := trajectory.NewDecoder(bytes.NewReader(buf.Bytes()), "wire.jsonl")
		for {
			ev, err := dec.Next()
			if err != nil {
				return events
			}
			events = append(events, ev)
		}
	}
}

// post sends one Anthropic Messages body and returns the status.
func post(t *testing.T, url, body string) int {
	t.Helper()
	resp, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

const (
	userHi      = `{"role":"user","content":"read both files"}`
	twoUses     = `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_a","name":"Read","input":{"file_path":"a.go"}},{"type":"tool_use","id":"toolu_b","name":"Bash","input":{"command":"ls"}}]}`
	twoResults  = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_a","content":"package a"},{"type":"tool_result","tool_use_id":"toolu_b","content":"exit 2","is_error":true}]}`
	twoUseTurns = `turns:
  - content:
      - tool_use: {id: toolu_a, name: Read, input: {file_path: a.go}}
      - tool_use: {id: toolu_b, name: Bash, input: {command: ls}}
  - content: [{text: Done.}]
`
)

func messagesBody(stream bool, msgs ...string) string {
	return fmt.Sprintf(`{"model":"m","max_tokens":100,"stream":%t,"messages":[%s]}`, stream, strings.Join(msgs, ","))
}

func eventsOf[T trajectory.Payload](events []trajectory.Event) []T {
	var out []T
	for _, ev := range events {
		if p, ok := ev.Payload.(T); ok {
			out = append(out, p)
		}
	}
	return out
}

func TestARecordingDerivesEachCallFromItsToolUseAndToolResult(t *testing.T) {
	_, url, finish := wireRecording(t, twoUseTurns)
	if st := post(t, url, messagesBody(true, userHi)); st != 200 {
		t.Fatalf("first request: %d", st)
	}
	if st := post(t, url, messagesBody(true, userHi, twoUses, twoResults)); st != 200 {
		t.Fatalf("second request: %d", st)
	}
	events := finish()
	calls := eventsOf[*trajectory.ToolCall](events)
	if len(calls) != 2 || calls[0].Tool != "Read" || calls[1].Tool != "Bash" || calls[1].Index != 1 {
		t.Fatalf("tool_calls %+v, want Read then Bash", calls)
	}
	for _, c := range calls {
		if c.Observed != trajectory.ObservedWire || string(c.Input) == "" {
			t.Errorf("tool_call %+v is not marked observed on the wire with its input", c)
		}
	}
	if ok := eventsOf[*trajectory.ToolSuccess](events); len(ok) != 1 || ok[0].ToolUseID != "toolu_a" {
		t.Errorf("tool_success %+v, want one for toolu_a", ok)
	}
	if f := eventsOf[*trajectory.ToolFailure](events); len(f) != 1 || f[0].ToolUseID != "toolu_b" || f[0].FailureKind != trajectory.FailureToolError {
		t.Errorf("tool_failure %+v, want toolu_b as tool_error", f)
	}
	for _, e := range eventsOf[*trajectory.ToolEnd](events) {
		if e.DurationMs != 0 || !e.DurationUnknown || e.Observed != trajectory.ObservedWire {
			t.Errorf("tool_end %+v: a call seen on the wire has no measured run time of its own", e)
		}
	}
	reqs := eventsOf[*trajectory.ModelRequest](events)
	if len(reqs) != 2 || reqs[0].BatchMs != 0 || reqs[1].BatchMs <= 0 {
		t.Errorf("batch_ms of the requests: %v and %v, want none on the first and the batch's wall time on the second", reqs[0].BatchMs, reqs[1].BatchMs)
	}
	for _, r := range eventsOf[*trajectory.ModelResponse](events) {
		if r.DurationMs <= 0 || r.TTFTMs <= 0 || r.TTFTMs > r.DurationMs {
			t.Errorf("model_response timings duration %v ttft %v, want measured, ttft within the duration", r.DurationMs, r.TTFTMs)
		}
	}
	end := eventsOf[*trajectory.SessionEnd](events)
	if len(end) != 1 || end[0].ToolCalls != 2 || end[0].ToolFailures != 1 {
		t.Fatalf("session_end %+v, want 2 calls and 1 failure", end)
	}
}

func TestARecordingKeepsEveryFailedAttempt(t *testing.T) {
	cases := []struct {
		name   string
		script string
		// send drives the client; it returns nothing, the events tell.
		send func(t *testing.T, url string)
		want []trajectory.ModelErrorKind
		// results is how many tool_result events the recording must keep.
		results int
	}{
		{
			name:   "A request the script refuses is a model_request and a bad_request model_error.",
			script: "turns:\n  - expect: {last_user_contains: README}\n    content: [{text: ok}]\n",
			send: func(t *testing.T, url string) {
				if st := post(t, url, messagesBody(false, userHi)); st != 400 {
					t.Fatalf("status %d, want 400", st)
				}
			},
			want: []trajectory.ModelErrorKind{trajectory.ModelBadRequest},
		},
		{
			name:   "A malformed stream is an invalid_response, not a good reply, and the retry that follows is its next attempt.",
			script: "turns:\n  - content: [{text: broken reply}]\n    fault: {malformed_sse: true}\n  - content: [{text: fine}]\n",
			send: func(t *testing.T, url string) {
				post(t, url, messagesBody(true, userHi))
				post(t, url, messagesBody(true, userHi))
			},
			want: []trajectory.ModelErrorKind{trajectory.ModelInvalidResponse},
		},
		{
			name:   "A request that got a 500 keeps the tool results it carried.",
			script: twoUseTurns[:strings.Index(twoUseTurns, "  - content: [{text")] + "  - content: [{text: Done.}]\n    fault: {status: 500}\n",
			send: func(t *testing.T, url string) {
				post(t, url, messagesBody(false, userHi))
				if st := post(t, url, messagesBody(false, userHi, twoUses, twoResults)); st != 500 {
					t.Fatalf("status %d, want the injected 500", st)
				}
			},
			want:    []trajectory.ModelErrorKind{trajectory.ModelServerError},
			results: 2,
		},
		{
			name:   "A request after the last turn is a server_error model_error with its tool results.",
			script: twoUseTurns[:strings.Index(twoUseTurns, "  - content: [{text")],
			send: func(t *testing.T, url string) {
				post(t, url, messagesBody(false, userHi))
				if st := post(t, url, messagesBody(false, userHi, twoUses, twoResults)); st != 500 {
					t.Fatalf("status %d, want 500 out of turns", st)
				}
			},
			want:    []trajectory.ModelErrorKind{trajectory.ModelServerError},
			results: 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, url, finish := wireRecording(t, tc.script)
			tc.send(t, url)
			events := finish()
			var kinds []trajectory.ModelErrorKind
			for _, me := range eventsOf[*trajectory.ModelError](events) {
				kinds = append(kinds, me.ErrorKind)
			}
			if !slices.Equal(kinds, tc.want) {
				t.Fatalf("model_errors %v, want %v", kinds, tc.want)
			}
			if n := len(eventsOf[*trajectory.ToolResult](events)); n != tc.results {
				t.Fatalf("%d tool_results kept, want %d", n, tc.results)
			}
		})
	}
}

func TestARecordingOfAStallTheClientGaveUpOnSaysItWasNeverDelivered(t *testing.T) {
	srv, url, finish := wireRecording(t, "turns:\n  - content: [{text: slow reply}]\n    fault: {stall: 1m}\n")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", strings.NewReader(messagesBody(true, userHi)))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body) // ends when the client gives up
		_ = resp.Body.Close()
	}
	// The server sees the hang-up when the stall returns; wait for it.
	for deadline := time.Now().Add(10 * time.Second); srv.Stats().Requests == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the server never finished the stalled request after the client hung up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	events := finish()
	errs := eventsOf[*trajectory.ModelError](events)
	if len(errs) != 1 || errs[0].ErrorKind != trajectory.ModelAborted || !errs[0].Undelivered {
		t.Fatalf("model_errors %+v, want one aborted, undelivered", errs)
	}
	if n := len(eventsOf[*trajectory.ModelResponse](events)); n != 0 {
		t.Fatalf("%d model_responses recorded for a reply the client never got", n)
	}
}

func TestASubagentsConversationIsItsOwnSessionLinkedToTheCallThatStartedIt(t *testing.T) {
	t.Run("the subagent starts while the Task call waits for its result", func(t *testing.T) { subagentLinking(t, false) })
	// Claude Code answers a run_in_background Agent/Task call at once, so
	// the call is no longer pending when the subagent's first request
	// comes: it is linked by the answered call whose prompt it carries.
	t.Run("the subagent starts after its background Task call was answered", func(t *testing.T) { subagentLinking(t, true) })
}

func subagentLinking(t *testing.T, background bool) {
	s, err := mockllm.LoadScript("testdata/subagent_conversations.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type session struct {
		name string
		buf  *bytes.Buffer
		rec  *recorder.Recorder
	}
	var sessions []*session
	tr := mockllm.NewTranscriptSessions(func(conv string) trajectory.Sink {
		ss := &session{name: conv, buf: &bytes.Buffer{}}
		ss.rec = recorder.New(ss.buf, recorder.Options{})
		sessions = append(sessions, ss)
		return ss.rec
	})
	srv := mockllm.NewServer(s, mockllm.Options{OnAccept: tr.Accept, OnAnswer: tr.Answer, OnRequest: tr.Done})
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	send := func(system string, msgs ...string) {
		t.Helper()
		body := fmt.Sprintf(`{"model":"m","max_tokens":100,"system":%q,"messages":[%s]}`, system, strings.Join(msgs, ","))
		if st := post(t, url, body); st != 200 {
			t.Fatalf("status %d for %s", st, body)
		}
	}
	const mainSys, subSys = "You are the official CLI for Claude.", "You are a file search specialist."
	mainUser := `{"role":"user","content":"fix the failing test"}`
	task := `{"role":"assistant","content":[{"type":"text","text":"I'll have an agent find the test while I read the code."},{"type":"tool_use","id":"toolu_main_1","name":"Task","input":{"subagent_type":"Explore","description":"Find the test","prompt":"Find where ParseDate is tested","run_in_background":true}}]}`
	subUser := `{"role":"user","content":"Find where ParseDate is tested"}`
	taskDone := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_main_1","content":"started"}]}`
	send(mainSys, mainUser)
	if background {
		send(mainSys, mainUser, task, taskDone)
	}
	send(subSys, subUser)
	grep := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_sub_1","name":"Bash","input":{"command":"grep -rn ParseDate ."}}]}`
	send(subSys, subUser, grep, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_sub_1","content":"parse_test.go:8"}]}`)
	if !background {
		send(mainSys, mainUser, task, taskDone)
	}
	if len(sessions) != 2 {
		t.Fatalf("%d sessions, want the main agent's and the subagent's", len(sessions))
	}
	tr.Close()
	var starts []*trajectory.SessionStart
	for _, ss := range sessions {
		if _, err := ss.rec.Close(); err != nil {
			t.Fatal(err)
		}
		rep, err := trajectory.ValidateStream(bytes.NewReader(ss.buf.Bytes()), ss.name+".jsonl")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Problems {
			t.Errorf("%s: %v", ss.name, p)
		}
		ev, err := trajectory.NewDecoder(bytes.NewReader(ss.buf.Bytes()), ss.name).Next()
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, ev.Payload.(*trajectory.SessionStart))
	}
	if starts[0].ParentSession != "" || starts[0].Tags["conversation"] != "main" {
		t.Errorf("main session_start %+v, want no parent and conversation main", starts[0])
	}
	if starts[1].ParentSession != sessions[0].rec.SessionID() || starts[1].ParentToolUseID != "toolu_main_1" {
		t.Errorf("subagent session_start links %q/%q, want %q/toolu_main_1", starts[1].ParentSession, starts[1].ParentToolUseID, sessions[0].rec.SessionID())
	}
}

func TestARecordingTellsAClientsRefusalFromAToolError(t *testing.T) {
	const denied = `touch in '/work/project/made-by-test' needs approval. The path is inside the working directories for this session ('/work/project'), and Claude Code asks before a shell command creates, changes or removes files there.`
	const write = `Claude requested permissions to write to /work/project/out.txt, but you haven't granted it yet.`
	cases := []struct {
		name, agent, text string
		want              trajectory.FailureKind
		code              string
	}{
		{"Claude Code's refusal of a call its rules did not allow is permission_denied.", "claude-cli/2.1.328 (external, sdk-cli)", denied, trajectory.FailurePermissionDenied, ""},
		{"Claude Code's refusal of a Write nobody granted is permission_denied.", "claude-cli/2.1.328 (external, sdk-cli)", write, trajectory.FailurePermissionDenied, ""},
		{"Claude Code's failed command is a tool_error with its exit code.", "claude-cli/2.1.328 (external, sdk-cli)", "Exit code 1\ncat: missing.txt: No such file or directory", trajectory.FailureToolError, "exit:1"},
		{"Claude Code's unknown tool is not_found.", "claude-cli/2.1.328 (external, sdk-cli)", "<tool_use_error>Error: No such tool available: Frobnicate</tool_use_error>", trajectory.FailureNotFound, ""},
		{"A tool's own error is tool_error, whatever it says about approval.", "claude-cli/2.1.328 (external, sdk-cli)", "error: needs approval. from the server", trajectory.FailureToolError, ""},
		{"Another client's words are not Claude Code's: its error is a tool_error.", "my-agent/1.0", denied, trajectory.FailureToolError, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, url, finish := wireRecording(t, "turns:\n  - content:\n      - tool_use: {id: toolu_d, name: Bash, input: {command: touch made-by-test}}\n  - content: [{text: Done.}]\n")
			use := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_d","name":"Bash","input":{"command":"touch made-by-test"}}]}`
			result, _ := json.Marshal(map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_d", "content": tc.text, "is_error": true}}})
			postAs(t, url, tc.agent, messagesBody(false, userHi))
			if st := postAs(t, url, tc.agent, messagesBody(false, userHi, use, string(result))); st != 200 {
				t.Fatalf("status %d", st)
			}
			f := eventsOf[*trajectory.ToolFailure](finish())
			if len(f) != 1 || f[0].FailureKind != tc.want || f[0].ErrorCode != tc.code {
				t.Fatalf("tool_failures %+v, want one %s with error code %q", f, tc.want, tc.code)
			}
		})
	}
}

// postAs posts a Messages API body as the client with the User-Agent agent.
func postAs(t *testing.T, url, agent, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", agent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}
