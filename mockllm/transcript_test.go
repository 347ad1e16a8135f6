package mockllm_test

import (
	"bytes"
	"context"
	"os"
	"slices"
	"testing"

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
	srv := mockllm.NewServer(script, mockllm.Options{OnAccept: tr.Accept, OnAnswer: func(l mockllm.Logged) {
		tr.Answer(l)
		atAnswer = onDisk()
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
