package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// mockServer is `retrace mock serve` running in this process.
type mockServer struct {
	url    string
	stderr io.Writer
	cancel context.CancelFunc
	done   chan error
}

// stop interrupts the server as Ctrl-C would and returns its result.
func (m *mockServer) stop(t *testing.T) {
	t.Helper()
	m.cancel()
	select {
	case err := <-m.done:
		if err != nil {
			t.Fatalf("mock serve returned %v after an interrupt, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("mock serve did not stop within 30s of the interrupt")
	}
}

// serveMock runs runMockServe with opts, its stderr going to stderr, until
// the test stops it.
func serveMock(t *testing.T, opts *mockServeOptions, stderr io.Writer) *mockServer {
	t.Helper()
	var out syncBuffer
	sys := &IO{In: strings.NewReader(""), Out: &out, Err: stderr, Getenv: func(string) string { return "" }, Now: time.Now}
	ctx, cancel := context.WithCancel(context.Background())
	m := &mockServer{stderr: stderr, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- runMockServe(ctx, sys, opts) }()
	t.Cleanup(cancel)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		select {
		case err := <-m.done:
			t.Fatalf("mock serve ended early: %v", err)
		default:
		}
		if first, _, ok := strings.Cut(out.String(), "\n"); ok {
			m.url = strings.TrimPrefix(first, "mock LLM listening on ")
			return m
		}
		if time.Now().After(deadline) {
			t.Fatal("mock serve printed no URL within 10s")
		}
	}
}

func TestMockServeRecordLeavesNoFileWhenNoModelCallWasAnswered(t *testing.T) {
	cases := []struct {
		name    string
		request string // a path to GET, or "" for none
	}{
		{"a server that got no request leaves no file", ""},
		{"a server that answered only a models listing leaves no file", "/v1/models"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs := t.TempDir() + "/runs"
			var stderr syncBuffer
			m := serveMock(t, &mockServeOptions{script: "../../mockllm/testdata/read_then_answer.yaml", addr: "127.0.0.1:0", record: runs}, &stderr)
			if c.request != "" {
				res, err := http.Get(m.url + c.request)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
			}
			m.stop(t)
			entries, err := os.ReadDir(runs)
			if err != nil || len(entries) != 0 {
				t.Fatalf("the run directory holds %v (%v), want nothing", entries, err)
			}
			if !strings.Contains(stderr.String(), "trajectory: none written, no model call was answered") {
				t.Fatalf("stderr %q does not say why there is no trajectory", stderr.String())
			}
		})
	}
}

func TestMockServeRecordWritesTheFirstExchangeBeforeTheServerStops(t *testing.T) {
	runs := t.TempDir()
	var stderr syncBuffer
	m := serveMock(t, &mockServeOptions{script: "../../mockllm/testdata/read_then_answer.yaml", addr: "127.0.0.1:0", record: runs}, &stderr)
	res, err := http.Post(m.url+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"read README"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	// The server is still running and has been idle: the file already
	// holds the whole exchange.
	time.Sleep(50 * time.Millisecond)
	files, err := trajectory.Expand(runs)
	if err != nil || len(files) != 1 {
		t.Fatalf("files %v (%v)", files, err)
	}
	rep, err := trajectory.ValidateFile(files[0])
	if err != nil || len(rep.Problems) != 0 || rep.Events != 3 {
		t.Fatalf("while serving: %d events on disk, problems %v (%v), want session_start, model_request and model_response", rep.Events, rep.Problems, err)
	}
	m.stop(t)
}

func TestMockServeCutsIdleAndSlowClientsAndSaysWhichTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	cases := []struct {
		name   string
		client func(t *testing.T, c net.Conn)
		want   string
	}{
		{"a client that connects and sends nothing is cut at --read-header-timeout",
			func(*testing.T, net.Conn) {},
			"it connected and sent nothing (read-header timeout); see --read-header-timeout"},
		{"a client that sends its body at a byte per interval is cut at --read-timeout",
			func(t *testing.T, c net.Conn) {
				body := `{"model":"m","max_tokens":5,"messages":[]}`
				fmt.Fprintf(c, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
				for i := 0; i < 3; i++ {
					_, _ = c.Write([]byte(body[i : i+1]))
					time.Sleep(timeout / 2)
				}
			},
			"its request body was still incomplete, 3 bytes received (read timeout); see --read-timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr syncBuffer
			m := serveMock(t, &mockServeOptions{script: "../../mockllm/testdata/repeat.yaml", addr: "127.0.0.1:0",
				readHeaderTimeout: timeout, readTimeout: 2 * timeout, idleTimeout: timeout}, &stderr)
			conn, err := net.Dial("tcp", strings.TrimPrefix(m.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			c.client(t, conn)
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadAll(conn); err != nil {
				t.Fatalf("the server did not close the connection: %v", err)
			}
			m.stop(t)
			logs := stderr.String()
			if !strings.Contains(logs, "cut client "+conn.LocalAddr().String()) || !strings.Contains(logs, c.want) {
				t.Fatalf("stderr %q does not name the client %s and say %q", logs, conn.LocalAddr(), c.want)
			}
			if !strings.Contains(logs, "1 connection cut by a timeout") {
				t.Fatalf("stderr %q does not count the cut in the summary", logs)
			}
		})
	}
}

func TestMockServeHelpDocumentsTheTimeoutsAndTheirDefaults(t *testing.T) {
	code, stdout, _ := runCLI(t, nil, "mock", "serve", "--help")
	for _, want := range []string{"--read-header-timeout duration", "(default 10s)", "--read-timeout duration", "(default 1m0s)",
		"--idle-timeout duration", "(default 2m0s)", "written to the file when it happens"} {
		if code != ExitOK || !strings.Contains(stdout, want) {
			t.Fatalf("help (exit %d) lacks %q:\n%s", code, want, stdout)
		}
	}
}

// countingWriter discards what it is given, counting the lines.
type countingWriter struct{ lines atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.lines.Add(int64(strings.Count(string(p), "\n")))
	return len(p), nil
}

// rss is this process's resident set after a full collection that gives
// freed memory back to the system, in bytes.
func rss(t *testing.T) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status to read RSS from: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatal("/proc/self/status has no VmRSS line")
	return 0
}

func TestMockServeMemoryStaysFlatUnderSustainedLoad(t *testing.T) {
	const clients = 50
	soak := 10 * time.Second
	if testing.Short() {
		soak = 3 * time.Second
	}
	// The server runs in this process, as `mock serve` runs it, so RSS is
	// read from /proc/self/status after a GC: what the server keeps
	// survives the collection, what it used for a request does not. The
	// clients' own memory is the same before and after (their connections
	// are open for both readings).
	logs := &countingWriter{}
	m := serveMock(t, &mockServeOptions{script: "../../mockllm/testdata/repeat.yaml", addr: "127.0.0.1:0"}, logs)
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	// A request of about 20 KB, like an agent's tenth turn.
	history := strings.Repeat(`{"role":"user","content":"`+strings.Repeat("x", 1000)+`"},{"role":"assistant","content":"ok"},`, 20)
	body := `{"model":"m","max_tokens":64,"stream":true,"messages":[` + history + `{"role":"user","content":"go on"}]}`
	// load runs the clients for d and until they got at least min replies.
	load := func(d time.Duration, min int64) int64 {
		var n atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Value
		stop := time.Now().Add(d)
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) || n.Load() < min {
					res, err := client.Post(m.url+"/v1/messages", "application/json", strings.NewReader(body))
					if err != nil {
						failed.Store(err.Error())
						return
					}
					b, err := io.ReadAll(res.Body)
					res.Body.Close()
					if err != nil || res.StatusCode != 200 || !strings.Contains(string(b), "message_stop") {
						failed.Store(fmt.Sprintf("status %d, %v, %.200s", res.StatusCode, err, b))
						return
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		if msg := failed.Load(); msg != nil {
			t.Fatalf("a request failed under load: %v", msg)
		}
		return n.Load()
	}
	load(500*time.Millisecond, clients) // warm up: connections, buffers, pools
	before := rss(t)
	// At least 2000 replies, so that keeping anything per request (the
	// bodies alone are 20 KB) would exceed the bound several times.
	start := time.Now()
	served := load(soak, 2000)
	elapsed := time.Since(start)
	after := rss(t)
	m.stop(t)
	growth := after - before
	t.Logf("%d clients for %s: %d replies (%.0f/s), RSS %.1f MB before, %.1f MB after (%+.1f MB), %d log lines",
		clients, elapsed.Round(time.Millisecond), served, float64(served)/elapsed.Seconds(), float64(before)/(1<<20), float64(after)/(1<<20), float64(growth)/(1<<20), logs.lines.Load())
	// Keeping each request's ~20 KB body would add about 20 MB per
	// thousand replies; the bound allows allocator noise only.
	const bound = 16 << 20
	if raceEnabled {
		t.Log("RSS not judged: the race detector's shadow memory grows with every allocation and is never released")
		return
	}
	if growth > bound {
		t.Fatalf("RSS grew by %.1f MB over %d replies, want at most %d MB: the server keeps something per request",
			float64(growth)/(1<<20), served, bound>>20)
	}
}

// A reply that cannot be recorded is not served: the client gets an error
// naming why, and the server says so when it happens.
func TestMockServeRecordThatCannotCreateItsFileAnswersWithAnErrorAndSaysSo(t *testing.T) {
	runs := t.TempDir() + "/runs"
	var stderr syncBuffer
	m := serveMock(t, &mockServeOptions{script: "../../mockllm/testdata/read_then_answer.yaml", addr: "127.0.0.1:0", record: runs}, &stderr)
	// The directory checked at start turns into a file before the first call.
	if err := os.RemoveAll(runs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(runs, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(m.url+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"read README"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "cannot be recorded") || !strings.Contains(string(body), runs) {
		t.Fatalf("status %d, body %s: a reply that cannot be recorded must not be served, and the error must say why", res.StatusCode, body)
	}
	if !strings.Contains(stderr.String(), "retrace: --record: ") || !strings.Contains(stderr.String(), "the client gets an error") {
		t.Fatalf("stderr %q does not report the recording failure when it happens", stderr.String())
	}
	m.cancel()
	err = <-m.done
	if err == nil || !strings.Contains(err.Error(), "record in "+runs) {
		t.Fatalf("mock serve returned %v, want the recording error", err)
	}
}
