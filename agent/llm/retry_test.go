package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/retrace-dev/retrace/trajectory"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"no header means no server wait", nil, 0},
		{"whole seconds are read as seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{"an HTTP date is read as the time left until it", map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second},
		{"an HTTP date in the past means no wait", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{"retry-after-ms wins over Retry-After", map[string]string{"Retry-After": "3", "retry-after-ms": "250"}, 250 * time.Millisecond},
		{"a wait longer than a minute is capped at a minute", map[string]string{"Retry-After": "86400"}, maxRetryAfter},
		{"a huge number does not overflow", map[string]string{"Retry-After": "1e300"}, maxRetryAfter},
		{"garbage is ignored", map[string]string{"Retry-After": "soon"}, 0},
		{"NaN is ignored", map[string]string{"Retry-After": "NaN"}, 0},
		{"a negative wait is ignored", map[string]string{"Retry-After": "-5"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			if got := parseRetryAfter(h, now); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBackoffGrowsWithJitterAndStaysUnderTheCap(t *testing.T) {
	r := newRetrier(Options{})
	for n := 1; n <= 8; n++ {
		full := min(backoffBase<<(n-1), backoffCap)
		for range 50 {
			d := r.backoff(n, 0)
			if d < full/2 || d > full {
				t.Fatalf("attempt %d: backoff %v outside [%v, %v]", n, d, full/2, full)
			}
		}
	}
	if d := r.backoff(1, 2*time.Second); d != 2*time.Second {
		t.Errorf("with a server wait the backoff is %v, want exactly the server's 2s", d)
	}
}

func TestOptionsFromEnv(t *testing.T) {
	env := map[string]string{
		"ANTHROPIC_API_KEY": "ak", "ANTHROPIC_BASE_URL": "http://127.0.0.1:1/a",
		"OPENAI_API_KEY": "ok", "OPENAI_BASE_URL": "http://127.0.0.1:1/o",
	}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		name, provider string
		want           Options
	}{
		{"anthropic reads the ANTHROPIC_ variables", "anthropic", Options{APIKey: "ak", BaseURL: "http://127.0.0.1:1/a"}},
		{"openai reads the OPENAI_ variables", "openai", Options{APIKey: "ok", BaseURL: "http://127.0.0.1:1/o"}},
		{"openai-responses reads the OPENAI_ variables too", "openai-responses", Options{APIKey: "ok", BaseURL: "http://127.0.0.1:1/o"}},
		{"an unknown provider reads nothing", "mock", Options{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := OptionsFromEnv(tc.provider, getenv)
			if got.APIKey != tc.want.APIKey || got.BaseURL != tc.want.BaseURL {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestToolSchemaHookRewritesAndKeepsKeyOrder(t *testing.T) {
	// The dialect decides the bytes; the provider must not reorder nested keys.
	schema := json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer"}},"$schema":"x"}`)
	rewrite := func(s json.RawMessage) (json.RawMessage, error) {
		return bytes.Replace(s, []byte(`,"$schema":"x"`), []byte(`,"additionalProperties":false`), 1), nil
	}
	req := helloRequest
	req.Tools = []ToolDef{{Name: "t", Schema: schema}}
	for _, p := range []struct {
		name string
		make func(url string) Provider
		body string
	}{
		{"anthropic", func(u string) Provider { return newTestAnthropic(t, u, Options{ToolSchema: rewrite}) }, anthTextJSON(`"end_turn"`)},
		{"chat", func(u string) Provider { return newTestChat(t, u, Options{ToolSchema: rewrite}) }, chatTextJSON(`"stop"`)},
		{"responses", func(u string) Provider { return newTestResponses(t, u, Options{ToolSchema: rewrite}) }, respObject(`"completed"`, "", respMessageItem)},
	} {
		t.Run("the "+p.name+" provider sends the rewritten schema with its nested keys in order", func(t *testing.T) {
			api := newFakeAPI(t, reply{body: p.body})
			if _, err := p.make(api.URL()).Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			raw := string(api.rawBody(0))
			if strings.Contains(raw, "$schema") || !strings.Contains(raw, `"additionalProperties":false`) {
				t.Errorf("body %s: want the rewritten schema", raw)
			}
			if z, a := strings.Index(raw, `"zeta"`), strings.Index(raw, `"alpha"`); z < 0 || a < 0 || z > a {
				t.Errorf("body %s: want zeta before alpha as the dialect wrote them", raw)
			}
		})
	}
}

func TestProvidersReadNoEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/nowhere")
	t.Setenv("OPENAI_API_KEY", "from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/nowhere")
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"))
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/messages") {
			io.WriteString(w, anthTextJSON(`"end_turn"`))
		} else {
			io.WriteString(w, chatTextJSON(`"stop"`))
		}
	}))
	defer srv.Close()
	a, _ := NewAnthropic(Options{BaseURL: srv.URL, APIKey: "given"})
	c, _ := NewOpenAIChat(Options{BaseURL: srv.URL, APIKey: "given"})
	for _, p := range []Provider{a, c} {
		if _, err := p.Complete(context.Background(), helloRequest); err != nil {
			t.Fatalf("%s: %v (did it go to the environment's base URL?)", p.Name(), err)
		}
	}
	for _, h := range auth {
		if strings.Contains(h, "from-env") || !strings.Contains(h, "given") {
			t.Errorf("credential sent = %q, want only the given key", h)
		}
	}
}

func TestClassifyUsesTypesNotText(t *testing.T) {
	a := newAttempt(context.Background(), Options{}, false)
	defer a.finish()
	cases := []struct {
		name string
		err  error
		want trajectory.ModelErrorKind
	}{
		{"an Anthropic 529 is overloaded", &anthropic.Error{StatusCode: 529}, trajectory.ModelOverloaded},
		{"an OpenAI 429 is rate limited", &openai.Error{StatusCode: 429}, trajectory.ModelRateLimited},
		{"an OpenAI 422 is a bad request", &openai.Error{StatusCode: 422}, trajectory.ModelBadRequest},
		{"a wrapped JSON syntax error is an invalid response", errors.Join(errors.New("decoding"), &json.SyntaxError{}), trajectory.ModelInvalidResponse},
		{"an unexpected EOF is a connection failure", io.ErrUnexpectedEOF, trajectory.ModelConnection},
		{"a timeout error that says nothing about time is still a timeout", context.DeadlineExceeded, trajectory.ModelFirstByteTimeout},
		{"an already classified error is kept", &Error{Kind: trajectory.ModelAuth}, trajectory.ModelAuth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(context.Background(), a, tc.err).Kind; got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// BenchmarkAnthropicStreamParse streams a canned three-tool reply through
// the SDK and our assembler from a loopback server.
func BenchmarkAnthropicStreamParse(b *testing.B) {
	events := []string{anthStartJSON}
	for i, path := range []string{"a.ts", "b.ts", "c.ts"} {
		idx := itoa(i)
		events = append(events,
			`{"type":"content_block_start","index":`+idx+`,"content_block":{"type":"tool_use","id":"toolu_0`+idx+`","name":"read","input":{}}}`,
			`{"type":"content_block_delta","index":`+idx+`,"delta":{"type":"input_json_delta","partial_json":"{\"file_pa"}}`,
			`{"type":"content_block_delta","index":`+idx+`,"delta":{"type":"input_json_delta","partial_json":"th\":\"`+path+`\","}}`,
			`{"type":"content_block_delta","index":`+idx+`,"delta":{"type":"input_json_delta","partial_json":"\"limit\":20}"}}`,
			`{"type":"content_block_stop","index":`+idx+`}`,
		)
	}
	events = append(events,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}`,
		`{"type":"message_stop"}`)
	body := sseEvents(events...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}))
	defer srv.Close()
	p := newTestAnthropic(b, srv.URL, Options{})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := p.Stream(context.Background(), helloRequest, nil)
		if err != nil || len(resp.ToolUses()) != 3 {
			b.Fatalf("err %v, %d tool uses", err, len(resp.ToolUses()))
		}
	}
	b.ReportMetric(float64(len(body)), "body_bytes")
}

// FuzzStreamAssemblers feeds arbitrary events to the three stream
// assemblers: they must never panic, never report a tool_use whose input
// is not a JSON object, and never return a tool_use with neither input
// nor partial input.
func FuzzStreamAssemblers(f *testing.F) {
	for _, body := range []string{anthToolsSSE, anthCutSSE, chatToolsSSE, chatCutSSE, respToolsSSE, respCutSSE} {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var datas [][]byte
		for _, line := range strings.Split(body, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				datas = append(datas, []byte(d))
			}
		}
		check := func(name string, reported []trajectory.ContentBlock, resp Response) {
			for _, b := range reported {
				if !isObject(string(b.Input)) {
					t.Fatalf("%s reported tool_use %+v whose input is not an object", name, b)
				}
			}
			for _, b := range resp.Content {
				if b.Type == trajectory.BlockToolUse && len(b.Input) == 0 && b.PartialInput == "" {
					t.Fatalf("%s returned tool_use %+v with no input at all", name, b)
				}
			}
		}
		var got []trajectory.ContentBlock
		emit := func(ev StreamEvent) {
			if ev.ToolUse != nil {
				got = append(got, *ev.ToolUse)
			}
		}
		var as anthropicStream
		for _, d := range datas {
			var ev anthropic.MessageStreamEventUnion
			if json.Unmarshal(d, &ev) == nil {
				as.add(ev, emit)
			}
		}
		check("anthropic", got, as.response())
		got = nil
		var cs chatStream
		for _, d := range datas {
			var ev openai.ChatCompletionChunk
			if json.Unmarshal(d, &ev) == nil {
				cs.add(ev, emit)
			}
		}
		check("chat", got, cs.response(true, emit))
		got = nil
		var rs responsesStream
		for _, d := range datas {
			var ev responses.ResponseStreamEventUnion
			if json.Unmarshal(d, &ev) == nil {
				rs.add(ev, emit)
			}
		}
		check("responses", got, rs.response())
	})
}

// FuzzParseRetryAfter: any header value gives a wait in [0, maxRetryAfter].
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"3", "0.5", "1e300", "NaN", "-1", "Wed, 21 Oct 2015 07:28:00 GMT", ""} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, ra, ms string) {
		h := http.Header{}
		h.Set("Retry-After", ra)
		h.Set("Retry-After-Ms", ms)
		if d := parseRetryAfter(h, time.Unix(0, 0)); d < 0 || d > maxRetryAfter {
			t.Fatalf("Retry-After %q / ms %q gave %v", ra, ms, d)
		}
	})
}
