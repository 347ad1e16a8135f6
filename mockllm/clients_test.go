package mockllm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// capture is a request a real client sent, kept under testdata/wire (see
// its README): the method, path, the headers that change what the API
// accepts, and the body.
type capture struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

func loadCapture(t *testing.T, name string) capture {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "wire", name))
	if err != nil {
		t.Fatal(err)
	}
	var c capture
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c
}

// oneTurn is a script that answers every request with a short text.
func oneTurn(t *testing.T) *Script {
	t.Helper()
	s, err := ParseScript([]byte("model: mock-1\nrepeat: true\nturns:\n  - content: [{text: Done.}]\n"), "one.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestClaudeCodeRequestsThroughSDKAndMock sends the requests Claude Code
// 2.1.328 really sent (a first request with its role "system" message and
// betas, and one carrying two tool results) through the SDK's beta wire
// types and to the mock, and checks the mock answers them as the API does.
func TestClaudeCodeRequestsThroughSDKAndMock(t *testing.T) {
	for _, name := range []string{"claude-code-first.json", "claude-code-tool-results.json"} {
		t.Run(name, func(t *testing.T) {
			c := loadCapture(t, name)
			var params anthropic.BetaMessageNewParams
			if err := json.Unmarshal(c.Body, &params); err != nil {
				t.Fatalf("the SDK's BetaMessageNewParams does not decode the captured body: %v", err)
			}
			if len(params.Messages) == 0 || len(params.Tools) == 0 {
				t.Fatalf("the SDK decoded %d messages and %d tools from the capture, want some of each", len(params.Messages), len(params.Tools))
			}
			srv, url := startServer(t, oneTurn(t))
			client := anthropicClient(url)
			stream := client.Beta.Messages.NewStreaming(context.Background(), anthropic.BetaMessageNewParams{},
				aoption.WithRequestBody("application/json", []byte(c.Body)),
				aoption.WithHeader("anthropic-beta", c.Headers["anthropic-beta"]))
			var msg anthropic.BetaMessage
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("the mock refused Claude Code's request: %v", err)
			}
			if len(msg.Content) != 1 || msg.Content[0].Text != "Done." {
				t.Fatalf("the SDK assembled %+v, want the scripted text", msg.Content)
			}
			got := srv.Requests()
			last := got[len(got)-1]
			if last.Status != http.StatusOK || last.Endpoint != EndpointMessages {
				t.Fatalf("the mock logged %d on %s, want 200 on %s", last.Status, last.Endpoint, EndpointMessages)
			}
			if !strings.Contains(last.Request.System, "# Environment") {
				t.Fatalf("the role system message did not join the system prompt: %.200q", last.Request.System)
			}
			for _, m := range last.Request.Messages {
				if m.Role != "user" && m.Role != "assistant" {
					t.Fatalf("the neutral request kept a %q message", m.Role)
				}
			}

			count, err := client.Beta.Messages.CountTokens(context.Background(), anthropic.BetaMessageCountTokensParams{},
				aoption.WithRequestBody("application/json", []byte(c.Body)),
				aoption.WithHeader("anthropic-beta", c.Headers["anthropic-beta"]))
			if err != nil {
				t.Fatalf("count_tokens refused Claude Code's request: %v", err)
			}
			if count.InputTokens <= 0 {
				t.Fatalf("count_tokens counted %d tokens", count.InputTokens)
			}
		})
	}
}

// TestClaudeCodeRequestsStayStrict checks that the captured requests,
// changed the ways the real API refuses, are refused with its error.
func TestClaudeCodeRequestsStayStrict(t *testing.T) {
	first := loadCapture(t, "claude-code-first.json")
	results := loadCapture(t, "claude-code-tool-results.json")
	dropLastResult := func(body json.RawMessage) json.RawMessage {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		msgs := m["messages"].([]any)
		m["messages"] = msgs[:len(msgs)-1]
		out, _ := json.Marshal(m)
		return out
	}
	imageInSystem := func(body json.RawMessage) json.RawMessage {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		msgs := m["messages"].([]any)
		msgs[1].(map[string]any)["content"] = []any{map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": "https://example.com/a.png"}}}
		out, _ := json.Marshal(m)
		return out
	}
	cases := []struct {
		name    string
		body    json.RawMessage
		betas   string
		wantMsg string
	}{
		{"A role system message without the beta that allows it is refused like the API refuses it.",
			first.Body, "claude-code-20250219,interleaved-thinking-2025-05-14", "messages.1.role: Input should be 'user' or 'assistant'"},
		{"A role system message holds only text, with the betas as without.",
			imageInSystem(first.Body), first.Headers["anthropic-beta"], "messages.1.content.0.type: a system message holds only text blocks"},
		{"A tool_use whose tool_result is missing is refused even with the betas.",
			dropLastResult(results.Body), results.Headers["anthropic-beta"], "`tool_use` ids were found without `tool_result` blocks"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, url := startServer(t, oneTurn(t))
			client := anthropicClient(url)
			_, err := client.Beta.Messages.New(context.Background(), anthropic.BetaMessageNewParams{},
				aoption.WithRequestBody("application/json", []byte(tc.body)), aoption.WithHeader("anthropic-beta", tc.betas))
			var ae *anthropic.Error
			if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || !strings.Contains(ae.Error(), tc.wantMsg) {
				t.Fatalf("got %v, want a 400 saying %q", err, tc.wantMsg)
			}
		})
	}
}

// TestCodexRequestsThroughSDKAndMock sends the Responses requests Codex
// 0.171.0 really sent (its first, and one carrying two function call
// outputs) through the SDK's wire types and to the mock.
func TestCodexRequestsThroughSDKAndMock(t *testing.T) {
	for _, name := range []string{"codex-first.json", "codex-tool-outputs.json"} {
		t.Run(name, func(t *testing.T) {
			c := loadCapture(t, name)
			var params responses.ResponseNewParams
			if err := json.Unmarshal(c.Body, &params); err != nil {
				t.Fatalf("the SDK's ResponseNewParams does not decode the captured body: %v", err)
			}
			if len(params.Input.OfInputItemList) == 0 || len(params.Tools) == 0 {
				t.Fatalf("the SDK decoded %d input items and %d tools, want some of each", len(params.Input.OfInputItemList), len(params.Tools))
			}
			srv, url := startServer(t, oneTurn(t))
			client := openai.NewClient(ooption.WithBaseURL(url+"/v1"), ooption.WithAPIKey("test-key"), ooption.WithMaxRetries(0))
			stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{},
				ooption.WithRequestBody("application/json", bytes.Clone(c.Body)))
			var done *responses.Response
			for stream.Next() {
				if ev := stream.Current(); ev.Type == "response.completed" {
					r := ev.AsResponseCompleted().Response
					done = &r
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("the mock refused Codex's request: %v", err)
			}
			if done == nil || done.OutputText() != "Done." {
				t.Fatalf("the stream completed with %+v, want the scripted text", done)
			}
			got := srv.Requests()
			if last := got[len(got)-1]; last.Status != http.StatusOK || !strings.Contains(last.Request.System, "You are Codex") {
				t.Fatalf("the mock logged %d with system %.100q, want 200 and the developer messages as the system prompt", last.Status, last.Request.System)
			}
		})
	}
}

// TestClaudeCodeHelloCheck checks that Claude Code's reachability check
// gets the 200 the API gives it.
func TestClaudeCodeHelloCheck(t *testing.T) {
	srv, url := startServer(t, oneTurn(t))
	req, err := http.NewRequest(http.MethodHead, url+"/api/hello", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD /api/hello: %d, want 200", resp.StatusCode)
	}
	if got := srv.Requests(); got[len(got)-1].Endpoint != EndpointHello {
		t.Fatalf("logged as %q, want %q", got[len(got)-1].Endpoint, EndpointHello)
	}
}
