package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// reply is one scripted answer of fakeAPI.
type reply struct {
	status int
	header map[string]string
	body   string
	// sse sends body as text/event-stream, flushed, instead of JSON.
	sse bool
	// stallBeforeHeaders waits for the client to give up before answering.
	stallBeforeHeaders bool
	// stallAfterBody sends body, then waits for the client to give up.
	stallAfterBody bool
}

// fakeAPI is a real HTTP server on loopback that answers requests with
// the scripted replies in order and keeps the request bodies. It is
// strict: a request beyond the script, or a reply left unused, fails the
// test.
type fakeAPI struct {
	t       testing.TB
	srv     *httptest.Server
	replies []reply
	quit    chan struct{}
	// arrived receives once per request, when the request has been read.
	arrived chan struct{}

	mu     sync.Mutex
	bodies [][]byte
	paths  []string
}

func newFakeAPI(t testing.TB, replies ...reply) *fakeAPI {
	f := &fakeAPI{t: t, replies: replies, quit: make(chan struct{}), arrived: make(chan struct{}, 64)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		close(f.quit)
		f.srv.Close()
		if n := f.requests(); n != len(f.replies) {
			t.Errorf("the fake API got %d requests, but %d replies were scripted", n, len(f.replies))
		}
	})
	return f
}

func (f *fakeAPI) URL() string { return f.srv.URL }

func (f *fakeAPI) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

// body returns the n-th request body (from 0) decoded as JSON.
func (f *fakeAPI) body(n int) map[string]any {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if n >= len(f.bodies) {
		f.t.Fatalf("want request %d, the fake API got %d", n, len(f.bodies))
	}
	var m map[string]any
	if err := json.Unmarshal(f.bodies[n], &m); err != nil {
		f.t.Fatalf("request %d is not JSON: %v", n, err)
	}
	return m
}

func (f *fakeAPI) rawBody(n int) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[n]
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.bodies)
	f.bodies = append(f.bodies, body)
	f.paths = append(f.paths, r.URL.Path)
	f.mu.Unlock()
	f.arrived <- struct{}{}
	if n >= len(f.replies) {
		f.t.Errorf("unexpected request %d to %s: only %d replies were scripted", n, r.URL.Path, len(f.replies))
		http.Error(w, "unexpected request", http.StatusTeapot)
		return
	}
	rep := f.replies[n]
	if rep.stallBeforeHeaders {
		f.wait(r)
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	io.WriteString(w, rep.body)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	if rep.stallAfterBody {
		f.wait(r)
	}
}

func (f *fakeAPI) wait(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-f.quit:
	}
}

// retries collects the OnRetry events of a call.
type retries struct {
	mu     sync.Mutex
	events []ModelErrorEvent
}

func (r *retries) add(e ModelErrorEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *retries) all() []ModelErrorEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ModelErrorEvent(nil), r.events...)
}

// sseEvents writes Anthropic- and Responses-style SSE: each data line is
// preceded by an event line named after the JSON's "type".
func sseEvents(datas ...string) string {
	var b strings.Builder
	for _, d := range datas {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(d), &head); err != nil {
			panic("bad fixture: " + d)
		}
		b.WriteString("event: " + head.Type + "\ndata: " + d + "\n\n")
	}
	return b.String()
}

// sseData writes Chat Completions-style SSE: data lines only, ended by [DONE].
func sseData(done bool, datas ...string) string {
	var b strings.Builder
	for _, d := range datas {
		b.WriteString("data: " + d + "\n\n")
	}
	if done {
		b.WriteString("data: [DONE]\n\n")
	}
	return b.String()
}

// collector records what a stream reported.
type collector struct {
	text  strings.Builder
	tools []trajectory.ContentBlock
}

func (c *collector) on(ev StreamEvent) {
	c.text.WriteString(ev.TextDelta)
	if ev.ToolUse != nil {
		c.tools = append(c.tools, *ev.ToolUse)
	}
}

func errorKind(t testing.TB, err error) trajectory.ModelErrorKind {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *llm.Error, got %T: %v", err, err)
	}
	return e.Kind
}

func sameJSON(t testing.TB, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("got JSON %s, want %s", gb, wb)
	}
}

// get walks a decoded JSON value by keys and indexes.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			s, _ := v.([]any)
			if k >= len(s) {
				return nil
			}
			v = s[k]
		}
	}
	return v
}

// fast makes retries wait microseconds instead of seconds, so tests that
// exercise exponential backoff do not sleep.
func fast(r *retrier) {
	r.base = time.Millisecond
	r.cap = 4 * time.Millisecond
}

var modes = []struct {
	name   string
	stream bool
}{{"complete", false}, {"stream", true}}

// call runs p.Complete or p.Stream.
func call(t testing.TB, p Provider, stream bool, ctx context.Context, req Request) (Response, *collector, error) {
	t.Helper()
	c := &collector{}
	if stream {
		resp, err := p.Stream(ctx, req, c.on)
		return resp, c, err
	}
	resp, err := p.Complete(ctx, req)
	return resp, c, err
}
