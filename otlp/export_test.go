package otlp

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/retrace-dev/retrace/synth"
	"github.com/retrace-dev/retrace/trajectory"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is a real OTLP/HTTP endpoint on loopback that decodes every
// request with the official collector types, as a Collector does.
type receiver struct {
	mu       sync.Mutex
	requests int
	spans    []*tracepb.Span
	headers  []http.Header
	srv      *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want POST /v1/traces application/x-protobuf", http.StatusUnsupportedMediaType)
			return
		}
		body, _ := io.ReadAll(req.Body)
		var msg coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.requests++
		r.headers = append(r.headers, req.Header.Clone())
		for _, rs := range msg.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func synthCorpus(t testing.TB, sessions int) []string {
	dir := t.TempDir()
	if _, err := synth.Write(context.Background(), dir, synth.Options{Sessions: sessions, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	files, err := trajectory.Expand(dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func attrOf(s *tracepb.Span, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue(), true
		}
	}
	return "", false
}

func TestTheSynthCorpusArrivesAtAnOTLPReceiverWithEverySpanAndEachToolSpanLastsTheToolsDuration(t *testing.T) {
	files := synthCorpus(t, 300)
	rcv := newReceiver(t)
	url, err := TracesURL(rcv.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	sender := &HTTPSender{URL: url, Headers: map[string]string{"Authorization": "Bearer s3cret"}}
	rep, err := Export(context.Background(), Options{Files: files, Send: sender.Send})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 {
		t.Fatalf("problems: %v", rep.Problems)
	}

	// What the trajectories hold, read independently of the exporter.
	type want struct {
		durationNs int64
		unknown    bool
		failure    string
	}
	tools := map[string]want{} // trace id + tool_use id
	var sessions, requests, calls int
	for _, f := range files {
		evs, err := trajectory.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sessions++
		tid := TraceID(evs[0].Session)
		key := hex.EncodeToString(tid[:])
		for _, ev := range evs {
			switch p := ev.Payload.(type) {
			case *trajectory.ModelRequest:
				requests++
			case *trajectory.ToolCall:
				calls++
			case *trajectory.ToolFailure:
				w := tools[key+p.ToolUseID]
				w.failure = string(p.FailureKind)
				tools[key+p.ToolUseID] = w
			case *trajectory.ToolEnd:
				w := tools[key+p.ToolUseID]
				w.durationNs, w.unknown = msToNanos(p.DurationMs), p.DurationUnknown
				tools[key+p.ToolUseID] = w
			}
		}
	}
	wantSpans := sessions + requests + calls
	if rep.Spans != wantSpans || rep.Accepted != wantSpans || len(rcv.spans) != wantSpans {
		t.Fatalf("spans: counted %d, accepted %d, received %d; the trajectories hold %d sessions + %d requests + %d calls = %d",
			rep.Spans, rep.Accepted, len(rcv.spans), sessions, requests, calls, wantSpans)
	}
	if rcv.requests < 2 {
		t.Errorf("%d requests for %d spans: want batches of at most %d", rcv.requests, wantSpans, DefaultBatchSpans)
	}
	if got := rcv.headers[0].Get("Authorization"); got != "Bearer s3cret" {
		t.Errorf("Authorization header %q did not reach the receiver", got)
	}

	ids := map[string]bool{}
	checked, failed := 0, 0
	for _, s := range rcv.spans {
		id := hex.EncodeToString(s.TraceId) + hex.EncodeToString(s.SpanId)
		if ids[id] {
			t.Fatalf("span id %s sent twice", id)
		}
		ids[id] = true
		op, _ := attrOf(s, "gen_ai.operation.name")
		if op != "execute_tool" {
			continue
		}
		callID, _ := attrOf(s, "gen_ai.tool.call.id")
		w, ok := tools[hex.EncodeToString(s.TraceId)+callID]
		if !ok {
			t.Fatalf("tool span %q (%s) matches no recorded call", s.Name, callID)
		}
		got := int64(s.EndTimeUnixNano - s.StartTimeUnixNano)
		if got != w.durationNs {
			t.Fatalf("tool span %s lasts %d ns; the tool's duration_ms is %d ns", callID, got, w.durationNs)
		}
		if errType, _ := attrOf(s, "error.type"); errType != w.failure {
			t.Fatalf("tool span %s has error.type %q; the call's failure_kind is %q", callID, errType, w.failure)
		}
		if w.failure != "" {
			failed++
			if s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
				t.Fatalf("failed call %s has status %v", callID, s.Status)
			}
		}
		checked++
	}
	if checked != calls || failed == 0 {
		t.Fatalf("checked %d tool spans (%d failed) of %d calls", checked, failed, calls)
	}
}

func TestExportingASessionTwiceSendsTheSameIDs(t *testing.T) {
	files := synthCorpus(t, 3)
	evs, err := trajectory.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := SessionSpans(evs)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := SessionSpans(evs)
	x, _ := (&TracesData{ResourceSpans: []ResourceSpans{a}}).Encode()
	y, _ := (&TracesData{ResourceSpans: []ResourceSpans{b}}).Encode()
	if string(x) != string(y) {
		t.Fatal("two exports of one session differ")
	}
	root := a.ScopeSpans[0].Spans[0]
	if root.ParentSpanID != "" || root.Name[:len("invoke_agent ")] != "invoke_agent " {
		t.Fatalf("first span is %q with parent %q, want the invoke_agent root", root.Name, root.ParentSpanID)
	}
	for _, s := range a.ScopeSpans[0].Spans[1:] {
		if s.ParentSpanID != root.SpanID || s.TraceID != root.TraceID {
			t.Fatalf("span %q is not a child of the session span", s.Name)
		}
	}
}

func TestACallWithoutAMeasuredDurationGetsAFlaggedZeroLengthSpan(t *testing.T) {
	evs := []trajectory.Event{
		ev(1, &trajectory.SessionStart{HarnessVersion: "claude-code 2.1", Provider: "anthropic", Model: "m"}),
		ev(2, &trajectory.ModelRequest{}),
		ev(3, &trajectory.ModelResponse{StopReason: trajectory.StopToolUse}),
		ev(4, &trajectory.ToolCall{ToolRef: trajectory.ToolRef{ToolUseID: "t1", Tool: "Bash"}}),
		ev(5, &trajectory.ToolSuccess{ToolRef: trajectory.ToolRef{ToolUseID: "t1", Tool: "Bash"}}),
		ev(6, &trajectory.ToolEnd{ToolRef: trajectory.ToolRef{ToolUseID: "t1", Tool: "Bash"}, DurationUnknown: true}),
		ev(7, &trajectory.ToolCall{ToolRef: trajectory.ToolRef{ToolUseID: "t2", Tool: "Read"}}),
	}
	rs, c, err := SessionSpans(evs)
	if err != nil {
		t.Fatal(err)
	}
	if c.DurationUnknown != 2 || c.Tool != 2 {
		t.Fatalf("counts %+v: want 2 tool spans, both without a duration", c)
	}
	for _, s := range rs.ScopeSpans[0].Spans[2:] {
		a := attrMap(s.Attributes)
		if s.EndTimeUnixNano != s.StartTimeUnixNano || !a.bool("retrace.tool.duration_unknown") {
			t.Fatalf("span %s: %d..%d, duration_unknown %v", s.Name, s.StartTimeUnixNano, s.EndTimeUnixNano, a.bool("retrace.tool.duration_unknown"))
		}
	}
	if !attrMap(rs.ScopeSpans[0].Spans[0].Attributes).bool("retrace.session.unended") {
		t.Error("a session without session_end is not flagged unended")
	}
}

func TestAReceiverThatRefusesTheExportIsAnErrorThatNeverShowsTheHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bad token", http.StatusUnauthorized)
	}))
	defer srv.Close()
	sender := &HTTPSender{URL: srv.URL + "/v1/traces", Headers: map[string]string{"Authorization": "Bearer s3cret"}}
	_, err := Export(context.Background(), Options{Files: synthCorpus(t, 2), Send: sender.Send})
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("err = %v, want ErrRejected", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("the error shows the header: %v", err)
	}
}

func TestTracesURLAddsThePathOnlyWhenTheEndpointHasNone(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4318":         "http://127.0.0.1:4318/v1/traces",
		"http://127.0.0.1:4318/":        "http://127.0.0.1:4318/v1/traces",
		"https://h.example/otlp/traces": "https://h.example/otlp/traces",
	} {
		if got, err := TracesURL(in); err != nil || got != want {
			t.Errorf("TracesURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"127.0.0.1:4318", "ftp://h/x", "http://"} {
		if _, err := TracesURL(bad); !errors.Is(err, ErrBadEndpoint) {
			t.Errorf("TracesURL(%q) err = %v, want ErrBadEndpoint", bad, err)
		}
	}
}

func TestPartialSuccessIsReadOffTheWire(t *testing.T) {
	b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 3, ErrorMessage: "too old"}})
	if n, msg := partialSuccess(b); n != 3 || msg != "too old" {
		t.Fatalf("partialSuccess = %d, %q", n, msg)
	}
	if n, _ := partialSuccess([]byte{0xff, 0xff}); n != 0 {
		t.Fatalf("garbage read as %d rejected spans", n)
	}
}
