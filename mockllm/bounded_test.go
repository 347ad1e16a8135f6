package mockllm

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/agent/llm"
	"github.com/retrace-dev/retrace/trajectory"
)

// cutRecorder collects the cuts a server reports.
type cutRecorder struct {
	mu   sync.Mutex
	cuts []Cut
	got  chan struct{}
}

func newCutRecorder() *cutRecorder { return &cutRecorder{got: make(chan struct{}, 16)} }

func (c *cutRecorder) add(cut Cut) {
	c.mu.Lock()
	c.cuts = append(c.cuts, cut)
	c.mu.Unlock()
	c.got <- struct{}{}
}

// wait returns the first cut, failing the test when none comes in time.
func (c *cutRecorder) wait(t *testing.T) Cut {
	t.Helper()
	select {
	case <-c.got:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection was cut within 10s")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cuts[0]
}

const shortTimeout = 300 * time.Millisecond

const partialHeader = "POST /v1/messages HTTP/1.1\r\nHost:"

const anthropicBody = `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"read README"}]}`

func TestSlowAndIdleClientsAreCutAtTheirTimeoutAndReported(t *testing.T) {
	request := func(body string) string {
		return fmt.Sprintf("POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
	cases := []struct {
		name string
		// client talks to the server over conn; it must not close it.
		client   func(t *testing.T, conn net.Conn)
		timeout  TimeoutKind
		received int64
		says     string
	}{
		{name: "a client that connects and sends nothing is cut at the read-header timeout",
			client:  func(*testing.T, net.Conn) {},
			timeout: TimeoutReadHeader, says: "it connected and sent nothing (read-header timeout)"},
		{name: "a client that sends half its headers is cut at the read-header timeout",
			client:  func(t *testing.T, c net.Conn) { write(t, c, partialHeader) },
			timeout: TimeoutReadHeader, received: int64(len(partialHeader)), says: fmt.Sprintf("its request headers were still incomplete, %d bytes received", len(partialHeader))},
		{name: "a client that sends its body a byte at a time is cut at the read timeout",
			client: func(t *testing.T, c net.Conn) {
				req := request(anthropicBody)
				head := req[:len(req)-len(anthropicBody)]
				write(t, c, head)
				for i := 0; i < 5; i++ {
					write(t, c, anthropicBody[i:i+1])
					time.Sleep(shortTimeout / 4)
				}
			},
			timeout: TimeoutRead, received: 5, says: "its request body was still incomplete, 5 bytes received (read timeout)"},
		{name: "a keep-alive client that sends no second request is cut at the idle timeout",
			client: func(t *testing.T, c net.Conn) {
				write(t, c, request(anthropicBody))
				res, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				if res.StatusCode != 200 {
					t.Fatalf("first request: status %d", res.StatusCode)
				}
			},
			timeout: TimeoutIdle, says: "no new request on its connection (idle timeout)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cuts := newCutRecorder()
			srv := NewServer(loadScript(t, "testdata/repeat.yaml"), Options{ReadHeaderTimeout: shortTimeout,
				ReadTimeout: 2 * shortTimeout, IdleTimeout: shortTimeout, OnCut: cuts.add})
			url, err := srv.Start("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			c.client(t, conn)
			cut := cuts.wait(t)
			if cut.Timeout != c.timeout || cut.Received != c.received || cut.Client != conn.LocalAddr().String() {
				t.Fatalf("cut %+v, want the %s timeout after %d bytes from %s", cut, c.timeout, c.received, conn.LocalAddr())
			}
			if line := cut.String(); !strings.Contains(line, c.says) || !strings.Contains(line, cut.Client) {
				t.Fatalf("log line %q does not say %q with the client address", line, c.says)
			}
			// The connection is closed: reading ends (after any 408 reply).
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			rest, err := io.ReadAll(conn)
			if err != nil {
				t.Fatalf("the connection stays open after the cut: %v (read %q)", err, rest)
			}
			if c.timeout == TimeoutRead && !strings.HasPrefix(string(rest), "HTTP/1.1 408") {
				t.Fatalf("a slow body gets %q, want a 408 reply", rest)
			}
			if st := srv.Stats(); st.Cut != 1 {
				t.Fatalf("stats %+v, want one cut", st)
			}
		})
	}
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatal(err)
	}
}

func TestALongStalledReplyIsNotCutByTheReadTimeout(t *testing.T) {
	script := mustParse(t, "turns:\n  - content: [{text: \"Slow answer.\"}]\n    fault: {stall: 900ms}\n")
	cuts := newCutRecorder()
	srv := NewServer(script, Options{ReadTimeout: shortTimeout, OnCut: cuts.add})
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	res, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || !strings.Contains(string(body), "event: message_stop") {
		t.Fatalf("a reply stalled past the read timeout was cut: %v, %q", err, body)
	}
	if st := srv.Stats(); st.Cut != 0 || st.Answered != 1 {
		t.Fatalf("stats %+v, want one answer and no cut", st)
	}
}

func TestTheServerKeepsOnlyTheLatestRequestsAndCountsTheRest(t *testing.T) {
	cases := []struct {
		name string
		keep int
		want int
	}{
		{"by default it keeps the latest 32 requests", 0, DefaultKeepRequests},
		{"it keeps as many as asked", 3, 3},
		{"a negative number keeps none", -1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := NewServer(loadScript(t, "testdata/repeat.yaml"), Options{KeepRequests: c.keep})
			url, err := srv.Start("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			const sent = 40
			for i := range sent {
				body := fmt.Sprintf(`{"model":"m%d","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, i)
				res, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
			reqs := srv.Requests()
			if len(reqs) != c.want {
				t.Fatalf("kept %d requests, want %d", len(reqs), c.want)
			}
			for i, r := range reqs {
				if want := fmt.Sprintf("m%d", sent-c.want+i); r.Request.Model != want || r.Body != nil || r.BodyBytes == 0 {
					t.Fatalf("request %d: model %s body %d bytes kept (size %d), want %s without its body", i, r.Request.Model, len(r.Body), r.BodyBytes, want)
				}
			}
			if st := srv.Stats(); st.Requests != sent || st.Answered != sent || st.Failed != 0 {
				t.Fatalf("stats %+v, want %d answered requests", st, sent)
			}
		})
	}
}

func TestScriptKeepsABoundedNumberOfProblems(t *testing.T) {
	s := mustParse(t, "turns:\n  - content: [{text: hi}]\n")
	req := &llm.Request{Model: "m", Messages: []trajectory.Message{userText("hi")}}
	for range maxProblems + 51 {
		_, _ = s.Next(t.Context(), req)
	}
	err := s.Verify()
	if err == nil || len(s.problems) != maxProblems || !strings.Contains(err.Error(), "50 more requests failed") {
		t.Fatalf("kept %d problems; Verify: %v", len(s.problems), err)
	}
}
