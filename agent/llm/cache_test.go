package llm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// cacheRequest is a request of an agent session at its third turn: two
// tools, a system prompt, and a tail of tool results.
func cacheRequest(c *Cache) Request {
	return Request{
		System: "You are terse.",
		Tools: []ToolDef{
			{Name: "read", Description: "Read a file.", Schema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}}}`)},
			{Name: "ls", Description: "List a directory.", Schema: json.RawMessage(`{"type":"object","properties":{}}`)},
		},
		Messages: []trajectory.Message{
			{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: "read a"}}},
			{Role: trajectory.RoleAssistant, Content: []trajectory.ContentBlock{
				{Type: trajectory.BlockToolUse, ID: "toolu_01", Name: "read", Input: json.RawMessage(`{"file_path":"a"}`)}}},
			{Role: trajectory.RoleUser, Content: []trajectory.ContentBlock{
				{Type: trajectory.BlockToolResult, ToolUseID: "toolu_01", Content: "a says hi"},
				// An empty text block is left off the wire; the tail
				// breakpoint must land on the block before it.
				{Type: trajectory.BlockText, Text: ""}}},
		},
		Cache: c,
	}
}

// cacheControls lists the paths of the request body that carry a
// cache_control, and their ttl ("" when the API default is left).
func cacheControls(body map[string]any) map[string]string {
	out := map[string]string{}
	mark := func(path string, v any) {
		m, _ := v.(map[string]any)
		if cc, ok := m["cache_control"].(map[string]any); ok {
			ttl, _ := cc["ttl"].(string)
			if cc["type"] != "ephemeral" {
				ttl = "type " + ttl
			}
			out[path] = ttl
		}
	}
	for i, t := range asList(body["tools"]) {
		mark("tools."+itoa(i), t)
	}
	for i, s := range asList(body["system"]) {
		mark("system."+itoa(i), s)
	}
	for i, m := range asList(body["messages"]) {
		mm, _ := m.(map[string]any)
		for j, b := range asList(mm["content"]) {
			mark("messages."+itoa(i)+"."+itoa(j), b)
		}
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

func TestAnthropicCacheBreakpoints(t *testing.T) {
	cases := []struct {
		name  string
		cache *Cache
		want  map[string]string
	}{
		{"no cache sends no breakpoint at all", nil, map[string]string{}},
		{"the default placement marks the last tool, the system prompt, the previous user message and the tail", &Cache{},
			map[string]string{"tools.1": "", "system.0": "", "messages.0.0": "", "messages.2.0": ""}},
		{"a one-hour ttl is sent on every breakpoint", &Cache{TTL: CacheTTL1h},
			map[string]string{"tools.1": "1h", "system.0": "1h", "messages.0.0": "1h", "messages.2.0": "1h"}},
		{"explicit points are sent where they say, by block", &Cache{Points: []CachePoint{{Part: CacheMessages, Index: 1, Block: 0}}},
			map[string]string{"messages.1.0": ""}},
		{"an automatic cache (OpenAI's) sends no breakpoint", &Cache{Automatic: true}, map[string]string{}},
	}
	for _, c := range cases {
		for _, m := range modes {
			t.Run(c.name+"/"+m.name, func(t *testing.T) {
				rep := reply{body: anthTextJSON(`"end_turn"`)}
				if m.stream {
					rep = reply{body: anthTextSSE(`"end_turn"`), sse: true}
				}
				api := newFakeAPI(t, rep)
				p := newTestAnthropic(t, api.URL(), Options{})
				if _, _, err := call(t, p, m.stream, context.Background(), cacheRequest(c.cache)); err != nil {
					t.Fatal(err)
				}
				got := cacheControls(api.body(0))
				if len(got) != len(c.want) {
					t.Fatalf("cache_control on %v, want on %v", got, c.want)
				}
				for k, v := range c.want {
					if g, ok := got[k]; !ok || g != v {
						t.Errorf("cache_control at %s = %q (present %t), want %q; all: %v", k, g, ok, v, got)
					}
				}
			})
		}
	}
}

func TestAnthropicCacheBreakpointsRefused(t *testing.T) {
	cases := []struct {
		name  string
		cache *Cache
		want  string
	}{
		{"more than four breakpoints are refused before sending", &Cache{Points: []CachePoint{
			{Part: CacheSystem}, {Part: CacheSystem}, {Part: CacheSystem}, {Part: CacheSystem}, {Part: CacheSystem}}}, "at most 4"},
		{"an unknown ttl is refused", &Cache{TTL: "10m"}, `ttl "10m"`},
		{"a point past the messages is refused", &Cache{Points: []CachePoint{{Part: CacheMessages, Index: 9, Block: -1}}}, "has 3 messages"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			api := newFakeAPI(t)
			p := newTestAnthropic(t, api.URL(), Options{})
			_, err := p.Complete(context.Background(), cacheRequest(c.cache))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
}

func TestDefaultCachePoints(t *testing.T) {
	t.Run("a first request marks tools, system and its one message", func(t *testing.T) {
		req := cacheRequest(nil)
		req.Messages = req.Messages[:1]
		got := DefaultCachePoints(&req)
		want := []CachePoint{{Part: CacheTools, Index: 1}, {Part: CacheSystem}, {Part: CacheMessages, Index: 0, Block: -1}}
		if len(got) != len(want) {
			t.Fatalf("points = %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("point %d = %v, want %v", i, got[i], want[i])
			}
		}
	})
	t.Run("a request without tools or system marks only messages", func(t *testing.T) {
		req := Request{Messages: []trajectory.Message{{Role: trajectory.RoleUser}}}
		if got := DefaultCachePoints(&req); len(got) != 1 || got[0].Part != CacheMessages {
			t.Errorf("points = %v, want the tail only", got)
		}
	})
}
