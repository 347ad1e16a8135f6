package mockllm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/trajectory"
)

// The agent-side providers against the mock server's faults: the full loop
// of the model layer, both sides ours, over real HTTP on loopback.
func TestTheAgentSideProvidersSurviveTheMockServersFaults(t *testing.T) {
	type provider struct {
		name string
		new  func(llm.Options) (llm.Provider, error)
		base func(url string) string
	}
	providers := []provider{
		{"anthropic", func(o llm.Options) (llm.Provider, error) { return llm.NewAnthropic(o) }, func(u string) string { return u }},
		{"openai-chat", func(o llm.Options) (llm.Provider, error) { return llm.NewOpenAIChat(o) }, func(u string) string { return u + "/v1" }},
		{"openai-responses", func(o llm.Options) (llm.Provider, error) { return llm.NewOpenAIResponses(o) }, func(u string) string { return u + "/v1" }},
	}
	for _, p := range providers {
		for _, stream := range []bool{false, true} {
			name := p.name
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				script, err := mockllm.LoadScript("testdata/faults.yaml")
				if err != nil {
					t.Fatal(err)
				}
				srv := mockllm.NewServer(script, mockllm.Options{})
				url, err := srv.Start("127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer srv.Close()
				var retries []llm.ModelErrorEvent
				newProv := func(maxRetries int) llm.Provider {
					prov, err := p.new(llm.Options{Model: "mock-1", APIKey: "test", BaseURL: p.base(url), MaxRetries: maxRetries,
						IdleTimeout: 300 * time.Millisecond, FirstByteTimeout: 300 * time.Millisecond,
						OnRetry: func(e llm.ModelErrorEvent) { retries = append(retries, e) }})
					if err != nil {
						t.Fatal(err)
					}
					return prov
				}
				prov := newProv(0)
				call := func() (llm.Response, error) {
					req := llm.Request{Model: "mock-1", Messages: []trajectory.Message{{Role: trajectory.RoleUser,
						Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "go"}}}}, MaxTokens: 1000}
					if stream {
						return prov.Stream(context.Background(), req, nil)
					}
					return prov.Complete(context.Background(), req)
				}

				// Turn 1: two 529s, then success through our own retries.
				resp, err := call()
				if err != nil || len(retries) != 2 || retries[0].Err.Kind != trajectory.ModelOverloaded || !retries[0].WillRetry {
					t.Fatalf("turn 1: err %v, retries %+v; want two recorded overloaded retries then success", err, retries)
				}
				// Turn 2: a tool_use cut by max_tokens is reported as truncated, never as input.
				if resp, err = call(); err != nil || !resp.TruncatedToolUse() || resp.StopReason != trajectory.StopMaxTokens {
					t.Fatalf("turn 2: err %v, truncated %v, stop %s", err, resp.TruncatedToolUse(), resp.StopReason)
				}
				// Turn 3: a missing stop reason is a condition of its own, never "done".
				if resp, err = call(); err != nil || resp.StopReason != trajectory.StopMissing {
					t.Fatalf("turn 3: err %v, stop %s; want missing", err, resp.StopReason)
				}
				// Turn 4: a stall longer than the client's timeout is a timeout, not
				// a hang. Without retries: a retry would be answered by the next turn.
				prov = newProv(-1)
				_, err = call()
				var me *llm.Error
				if !errors.As(err, &me) || (me.Kind != trajectory.ModelIdleTimeout && me.Kind != trajectory.ModelFirstByteTimeout) {
					t.Fatalf("turn 4: err %v; want an idle or first-byte timeout", err)
				}
			})
		}
	}
}
