package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestExportOTLPSendsEverySessionToAReceiverWithTheHeadersAndNeverPrintsThem(t *testing.T) {
	var mu sync.Mutex
	spans, auth := 0, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		auth = r.Header.Get("Authorization")
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans += len(ss.Spans)
			}
		}
	}))
	defer srv.Close()
	code, stdout, stderr := runCLI(t, nil, "export", fixtures+"/valid", "--otlp", srv.URL,
		"--otlp-header", "Authorization=Bearer t0ps3cret", "--format", "json")
	var sum otlpSummary
	if code != ExitOK || json.Unmarshal([]byte(stdout), &sum) != nil {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if sum.OTLP.Sessions == 0 || sum.OTLP.Spans != spans || sum.OTLP.Accepted != spans || auth != "Bearer t0ps3cret" {
		t.Fatalf("summary %+v; the receiver got %d spans with Authorization %q", sum.OTLP, spans, auth)
	}
	if strings.Contains(stdout+stderr, "t0ps3cret") {
		t.Fatal("the header value was printed")
	}
	if !strings.Contains(stderr, "sent ") || !strings.Contains(stderr, srv.URL+"/v1/traces") {
		t.Fatalf("stderr %q: want the summary line", stderr)
	}
}

func TestExportOTLPFileImportsBackAsValidTrajectories(t *testing.T) {
	dir := t.TempDir()
	traces := filepath.Join(dir, "traces.jsonl")
	if code, _, stderr := runCLI(t, nil, "export", fixtures+"/valid", "--otlp-file", traces); code != ExitOK {
		t.Fatalf("export: exit %d, %s", code, stderr)
	}
	runs := filepath.Join(dir, "runs")
	code, stdout, stderr := runCLI(t, nil, "import", "otlp", traces, "--runs", runs, "--format", "json")
	var doc importJSON
	if code != ExitOK || json.Unmarshal([]byte(stdout), &doc) != nil || len(doc.Sessions) == 0 {
		t.Fatalf("import: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "validate", runs); code != ExitOK {
		t.Fatalf("validate of the imported sessions: exit %d, %s", code, stderr)
	}
}

func TestExportOTLPRefusesBadUsage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"resourceSpans": 3}`), 0o600)
	for _, tc := range []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"A URL without a scheme is a usage error that shows the form.",
			[]string{"export", fixtures + "/valid", "--otlp", "localhost:4318"}, "http(s)://host:port"},
		{"OTLP does not combine with Parquet.",
			[]string{"export", fixtures + "/valid", "--otlp", "http://127.0.0.1:1", "--parquet", "x"}, "do not combine"},
		{"A header without = is refused, and only its key is shown.",
			[]string{"export", fixtures + "/valid", "--otlp", "http://127.0.0.1:1", "--otlp-header", "Authorization: hush"}, "want key=value"},
		{"A header without --otlp says so.",
			[]string{"export", fixtures + "/valid", "--parquet", "x", "--otlp-header", "a=b"}, "needs --otlp"},
		{"A malformed trajectory line is named by file:line.",
			[]string{"export", fixtures + "/invalid/malformed_json.jsonl", "--otlp-file", filepath.Join(t.TempDir(), "o.json")}, "malformed_json.jsonl:5:"},
		{"Import otlp without a file asks for one.",
			[]string{"import", "otlp"}, "name the OTLP/JSON files"},
		{"Import otlp of a file that is not OTLP/JSON names the JSON path.",
			[]string{"import", "otlp", bad, "--runs", t.TempDir()}, "bad.json:1: resourceSpans"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, tc.args...)
			if code != ExitInvalid || !strings.Contains(stderr, tc.wantStderr) {
				t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.wantStderr)
			}
			if strings.Contains(stdout+stderr, "hush") {
				t.Fatal("a header value was printed")
			}
		})
	}
}
