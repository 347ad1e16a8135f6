package mockllm

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkServerStreamedResponses measures whole streamed Anthropic
// replies over loopback with one reused client, as an agent loop drives it.
func BenchmarkServerStreamedResponses(b *testing.B) {
	_, url := startServer(b, loadScript(b, "testdata/repeat.yaml"))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	body := []byte(`{"model":"m","max_tokens":1024,"stream":true,"tools":[{"name":"read","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"read the README"}]}`)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		res, err := client.Post(url+"/v1/messages", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(res.Body)
		stopped := false
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "event: message_stop") {
				stopped = true
			}
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if !stopped {
			b.Fatal("stream ended without message_stop")
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "responses/s")
}

// FuzzDecodeRequests feeds outside bodies to the three request decoders:
// they must answer with a request or an API error, never panic.
func FuzzDecodeRequests(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"r","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"x"}]}]}]}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"r","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"x"}]}`))
	f.Add([]byte(`{"model":"m","input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c","name":"r","arguments":"{"},{"type":"function_call_output","call_id":"c","output":"x"}]}`))
	f.Add([]byte(`{"model":"m","system":[{"type":"text","text":"s"}],"input":"x","max_tokens":1,"messages":[{"role":"user","content":[]}]}`))
	f.Add([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"},{"role":"system","content":[{"type":"text","text":"env"}]},{"role":"system","content":"more"}]}`))
	cc := `"cache_control":{"type":"ephemeral","ttl":"1h"}`
	f.Add([]byte(`{"model":"m","max_tokens":5,"tools":[{"name":"r","input_schema":{"type":"object"},` + cc + `}],"system":[{"type":"text","text":"s",` + cc + `}],"messages":[{"role":"user","content":[{"type":"image","source":{}},{"type":"text","text":"hi",` + cc + `}]}]}`))
	dialects := []dialect{anthropicDialect{}, chatDialect{}, responsesDialect{}}
	// With the betas Claude Code sends, role "system" messages decode too.
	betas := http.Header{"Anthropic-Beta": {"claude-code-20250219," + systemBetas[0]}}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, d := range dialects {
			req, _, _, e := d.decode(body, betas)
			if e == nil && req == nil {
				t.Fatalf("%T: no request and no error", d)
			}
			if e != nil && (e.status < 400 || e.msg == "") {
				t.Fatalf("%T: error %+v without a status or message", d, e)
			}
			if e != nil {
				continue
			}
			// The prompt cache takes whatever breakpoints a request
			// carried: twice the same request, the second reads, and the
			// parts always add up to the mock's estimate.
			var pc promptCache
			for range 2 {
				u := pc.usage(req, time.Unix(0, 0))
				if u.InputTokens < 0 || u.CacheReadTokens < 0 || u.CacheCreationTokens < 0 ||
					u.InputTokens+u.CacheReadTokens+u.CacheCreationTokens != estimateTokens(req) {
					t.Fatalf("%T: usage %+v does not add up to the estimate %d", d, u, estimateTokens(req))
				}
			}
		}
	})
}
