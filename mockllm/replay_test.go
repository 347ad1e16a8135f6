package mockllm

import (
	"context"
	"errors"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

const basicRun = "../trajectory/testdata/valid/basic.jsonl"

func TestReplayAnswersWithTheRecordedResponsesInOrderThenFailsClosed(t *testing.T) {
	r, err := LoadReplay(basicRun)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := r.Complete(ctx, llm.Request{})
	if err != nil || len(first.ToolUses()) != 1 || first.ToolUses()[0].ID != "toolu_01" || first.Usage.InputTokens != 1200 {
		t.Fatalf("first %+v %v", first, err)
	}
	var texts []string
	second, err := r.Stream(ctx, llm.Request{}, func(ev llm.StreamEvent) { texts = append(texts, ev.TextDelta) })
	if err != nil || second.StopReason != trajectory.StopEndTurn || len(texts) != 1 {
		t.Fatalf("second %+v %v %q", second, err, texts)
	}
	_, err = r.Complete(ctx, llm.Request{})
	var le *llm.Error
	if !errors.Is(err, llm.ErrReplayMiss) || !errors.As(err, &le) || le.Kind != trajectory.ModelReplayMiss || le.Retryable() {
		t.Fatalf("got %v, want a non-retryable replay miss", err)
	}
}

func TestReplayServesTheRecordingOverHTTP(t *testing.T) {
	r, err := LoadReplay(basicRun)
	if err != nil {
		t.Fatal(err)
	}
	_, url := startServer(t, r)
	c := anthropicClient(url)
	msg, _ := anthropicTurn(t, c, true, anthropic.MessageNewParams{Model: "m", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("read"))}})
	if msg.StopReason != anthropic.StopReasonToolUse || string(msg.Content[1].Input) != `{"file_path":"README.md"}` {
		t.Fatalf("replayed %+v", msg)
	}
}

func TestLoadReplayRefusesADamagedFile(t *testing.T) {
	_, err := LoadReplay("testdata/read_then_answer.yaml")
	var le *trajectory.LineError
	if !errors.As(err, &le) {
		t.Fatalf("got %v, want a *trajectory.LineError for a file that is not a trajectory", err)
	}
}
