package mockllm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// cacheTools are two tools whose definitions are long enough (over
// cacheMinTokens together) for the tools alone to be cached.
func cacheTools() []llm.ToolDef {
	desc := strings.Repeat("Reads a file and numbers its lines. ", 70)
	return []llm.ToolDef{
		{Name: "read", Description: desc, Schema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}}}`)},
		{Name: "ls", Description: desc, Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	}
}

// cacheSession is the request of turn n (from 1) of a session that reads
// a file a turn: the history grows by one tool_use and its result.
func cacheSession(n int, cache *llm.Cache) llm.Request {
	req := llm.Request{Model: "mock-1", System: "You are a careful agent. " + strings.Repeat("Inspect before you change. ", 20),
		Tools: cacheTools(), Cache: cache,
		Messages: []trajectory.Message{{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "Read the files."}}}}}
	for i := 1; i < n; i++ {
		id := fmt.Sprintf("toolu_%02d", i)
		req.Messages = append(req.Messages,
			trajectory.Message{Role: trajectory.RoleAssistant, Content: []trajectory.ContentBlock{
				{Type: trajectory.BlockToolUse, ID: id, Name: "read", Input: json.RawMessage(fmt.Sprintf(`{"file_path":"f%d.go"}`, i))}}},
			trajectory.Message{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{
				{Type: trajectory.BlockToolResult, ToolUseID: id, Content: strings.Repeat(fmt.Sprintf("line of file %d\n", i), 40)}}})
	}
	return req
}

// repeatScript answers every request with a text and computes its usage.
func repeatScript(t *testing.T) *Script {
	t.Helper()
	s, err := ParseScript([]byte("model: mock-1\nrepeat: true\nturns:\n  - content: [{text: Done.}]\n"), "repeat.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// usages sends the requests through p in order and returns the usage of
// each reply.
func usages(t *testing.T, p llm.Provider, reqs ...llm.Request) []trajectory.Usage {
	t.Helper()
	var out []trajectory.Usage
	for i, req := range reqs {
		resp, err := p.Complete(context.Background(), req)
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		out = append(out, resp.Usage)
	}
	return out
}

func input(u trajectory.Usage) int64 {
	return u.InputTokens + u.CacheReadTokens + u.CacheCreationTokens
}

func anthropicOverMock(t *testing.T) llm.Provider {
	t.Helper()
	_, url := startServer(t, repeatScript(t))
	p, err := llm.NewAnthropic(llm.Options{BaseURL: url, APIKey: "test-key", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCacheReadsOverTheAnthropicWire sends the requests of a session
// through the real Anthropic client (the official SDK) to the mock's HTTP
// server, so the breakpoints the mock honours are the cache_control
// marks on the wire.
func TestCacheReadsOverTheAnthropicWire(t *testing.T) {
	t.Run("a stable session reads what the previous request wrote and writes only its new tail", func(t *testing.T) {
		u := usages(t, anthropicOverMock(t), cacheSession(1, &llm.Cache{}), cacheSession(2, &llm.Cache{}), cacheSession(3, &llm.Cache{}))
		if u[0].CacheReadTokens != 0 || u[0].CacheCreationTokens < cacheMinTokens {
			t.Errorf("request 1 usage = %+v, want nothing read and the whole prefix written", u[0])
		}
		for i := 1; i < len(u); i++ {
			prevCached := u[i-1].CacheReadTokens + u[i-1].CacheCreationTokens
			if u[i].CacheReadTokens != prevCached {
				t.Errorf("request %d read %d tokens, want the %d request %d cached", i+1, u[i].CacheReadTokens, prevCached, i)
			}
			if u[i].CacheCreationTokens <= 0 || u[i].CacheCreationTokens >= u[i].CacheReadTokens {
				t.Errorf("request %d wrote %d tokens, want only the new turn (less than the %d read)", i+1, u[i].CacheCreationTokens, u[i].CacheReadTokens)
			}
			if u[i].InputTokens <= 0 || u[i].InputTokens > 8 {
				t.Errorf("request %d has %d uncached input tokens, want the few after the last breakpoint", i+1, u[i].InputTokens)
			}
		}
	})
	t.Run("the tool list reordered mid-session reads nothing, because tools come first in the prefix", func(t *testing.T) {
		third := cacheSession(3, &llm.Cache{})
		third.Tools[0], third.Tools[1] = third.Tools[1], third.Tools[0]
		u := usages(t, anthropicOverMock(t), cacheSession(1, &llm.Cache{}), cacheSession(2, &llm.Cache{}), third)
		if u[1].CacheReadTokens == 0 {
			t.Fatalf("request 2 read nothing (%+v); the test needs a warm cache", u[1])
		}
		if u[2].CacheReadTokens != 0 || u[2].CacheCreationTokens != input(u[2])-u[2].InputTokens {
			t.Errorf("request 3 usage = %+v, want nothing read and everything up to the tail written again", u[2])
		}
	})
	t.Run("a timestamp in the system prompt keeps only the tools cached", func(t *testing.T) {
		third := cacheSession(3, &llm.Cache{})
		third.System += " Today is 2026-12-02T05:59:00Z."
		u := usages(t, anthropicOverMock(t), cacheSession(1, &llm.Cache{}), cacheSession(2, &llm.Cache{}), third)
		if u[2].CacheReadTokens <= 0 || u[2].CacheReadTokens >= u[1].CacheReadTokens {
			t.Errorf("request 3 read %d tokens, want the tools' prefix only: more than 0, less than request 2's %d", u[2].CacheReadTokens, u[1].CacheReadTokens)
		}
	})
	t.Run("a request without breakpoints reads and writes nothing", func(t *testing.T) {
		u := usages(t, anthropicOverMock(t), cacheSession(1, nil), cacheSession(2, nil))
		for i, x := range u {
			if x.CacheReadTokens != 0 || x.CacheCreationTokens != 0 {
				t.Errorf("request %d usage = %+v, want no cache at all", i+1, x)
			}
		}
	})
	t.Run("caching does not change the total input the mock counts", func(t *testing.T) {
		on := usages(t, anthropicOverMock(t), cacheSession(1, &llm.Cache{}), cacheSession(2, &llm.Cache{}))
		off := usages(t, anthropicOverMock(t), cacheSession(1, nil), cacheSession(2, nil))
		for i := range on {
			if input(on[i]) != input(off[i]) {
				t.Errorf("request %d: input+read+write = %d with the cache, %d without", i+1, input(on[i]), input(off[i]))
			}
		}
	})
	t.Run("a prefix under the minimum is not cached", func(t *testing.T) {
		short := func(n int) llm.Request {
			r := cacheSession(n, &llm.Cache{})
			r.Tools, r.System = nil, "Be brief."
			r.Messages = r.Messages[:1]
			return r
		}
		u := usages(t, anthropicOverMock(t), short(1), short(1))
		if u[1].CacheReadTokens != 0 || u[1].CacheCreationTokens != 0 {
			t.Errorf("usage = %+v, want a prefix under %d tokens left uncached", u[1], cacheMinTokens)
		}
	})
}

func TestCacheBreakpointLimitIsTheAPIs(t *testing.T) {
	_, url := startServer(t, repeatScript(t))
	cc := `"cache_control":{"type":"ephemeral"}`
	body := `{"model":"mock-1","max_tokens":10,"system":[{"type":"text","text":"a",` + cc + `}],"messages":[{"role":"user","content":[` +
		`{"type":"text","text":"1",` + cc + `},{"type":"text","text":"2",` + cc + `},{"type":"text","text":"3",` + cc + `},{"type":"text","text":"4",` + cc + `}]}]}`
	resp, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Message string } `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error.Message, "A maximum of 4 blocks with cache_control may be provided. Found 5.") {
		t.Errorf("status %d, message %q; want 400 and the API's limit message", resp.StatusCode, e.Error.Message)
	}
}

// TestCacheReadsInProcess checks the in-process script: with no wire, a
// request's Cache without points means the default placement the
// Anthropic client would send.
func TestCacheReadsInProcess(t *testing.T) {
	s := repeatScript(t)
	u := usages(t, s, cacheSession(1, &llm.Cache{}), cacheSession(2, &llm.Cache{}))
	if u[1].CacheReadTokens != u[0].CacheCreationTokens || u[1].CacheReadTokens == 0 {
		t.Errorf("usage = %+v, want request 2 to read what request 1 wrote", u)
	}
	if input(u[1]) != estimateTokens(ptr(cacheSession(2, nil))) {
		t.Errorf("input+read+write = %d, want the mock's estimate %d", input(u[1]), estimateTokens(ptr(cacheSession(2, nil))))
	}
}

func ptr[T any](v T) *T { return &v }

func TestCacheReadsOverTheOpenAIWires(t *testing.T) {
	for _, wire := range []string{"chat", "responses"} {
		t.Run("OpenAI "+wire+" caches the shared prefix by itself, from 1024 tokens in steps of 128", func(t *testing.T) {
			_, url := startServer(t, repeatScript(t))
			opts := llm.Options{BaseURL: url + "/v1", APIKey: "test-key", MaxRetries: -1}
			var p llm.Provider
			var err error
			if wire == "chat" {
				p, err = llm.NewOpenAIChat(opts)
			} else {
				p, err = llm.NewOpenAIResponses(opts)
			}
			if err != nil {
				t.Fatal(err)
			}
			// The runtime sends no Cache to OpenAI; it caches anyway.
			u := usages(t, p, cacheSession(1, nil), cacheSession(2, nil), cacheSession(3, nil))
			if u[0].CacheReadTokens != 0 {
				t.Errorf("request 1 read %d, want 0", u[0].CacheReadTokens)
			}
			for i := 1; i < len(u); i++ {
				r := u[i].CacheReadTokens
				if r < cacheMinTokens || (r-cacheMinTokens)%cacheIncrement != 0 || u[i].CacheCreationTokens != 0 {
					t.Errorf("request %d usage = %+v, want a read of 1024 + k·128 tokens and no write reported", i+1, u[i])
				}
				if r > input(u[i-1]) {
					t.Errorf("request %d read %d, more than the %d tokens request %d sent", i+1, r, input(u[i-1]), i)
				}
			}
		})
	}
}

// BenchmarkPromptCacheUsage measures what the prompt cache adds to a
// scripted turn: the usage of the 30th request of a session (about 12k
// estimated tokens, 90 blocks), without a cache (the baseline, the
// estimate alone) and with one warmed by the request before.
func BenchmarkPromptCacheUsage(b *testing.B) {
	prev, req := cacheSession(29, &llm.Cache{}), cacheSession(30, &llm.Cache{})
	now := time.Unix(0, 0)
	b.Run("off", func(b *testing.B) {
		off := req
		off.Cache = nil
		var pc promptCache
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = pc.usage(&off, now)
		}
		b.ReportMetric(float64(estimateTokens(&off)), "tokens/request")
	})
	b.Run("on", func(b *testing.B) {
		var pc promptCache
		pc.usage(&prev, now)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			u := pc.usage(&req, now)
			if u.CacheReadTokens == 0 {
				b.Fatal("the warmed cache read nothing")
			}
		}
		b.ReportMetric(float64(estimateTokens(&req)), "tokens/request")
	})
}
