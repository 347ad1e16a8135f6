package mockllm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The load benchmark compares retrace's mock server with aimock
// (npm @copilotkit/aimock) under the same Go load generator, each server in
// its own child process so that its RSS and CPU time are its own.
// mockllm/bench-vs-aimock.sh installs aimock in a temporary directory and
// runs it; by hand:
//
//	cd /tmp/aimock && npm install @copilotkit/aimock@1.43.0
//	AIMOCK_CLI=/tmp/aimock/node_modules/@copilotkit/aimock/dist/cli.js \
//	  go test ./mockllm/ -run '^$' -bench BenchmarkLoad -benchtime 20000x -load.clients 50
//
// On a shared machine responses/s and p99 follow the other load; the
// server CPU time per response (cpu-µs/resp) is the steadier comparison.
//
// Without AIMOCK_CLI (or an llmock binary on PATH) the aimock side is
// skipped with a message and the retrace side still runs.
var loadClients = flag.Int("load.clients", 50, "concurrent clients of BenchmarkLoad")

// loadBaseline adds a third server to BenchmarkLoad: the mock server of a
// mockllm test binary built from another commit (git archive REV | tar -x
// -C DIR; cd DIR && go test -c -o old.test ./mockllm), for before/after
// numbers in one run.
var loadBaseline = flag.String("load.baseline", "", "mockllm test binary of another commit to compare with (as retrace-baseline)")

// loadHelperEnv names the script the helper process serves.
const loadHelperEnv = "RETRACE_MOCK_LOAD_SCRIPT"

// TestLoadServerHelperProcess is not a test: it is retrace's mock server in
// a child process of BenchmarkLoad. It prints its URL and serves until its
// stdin closes.
func TestLoadServerHelperProcess(t *testing.T) {
	path := os.Getenv(loadHelperEnv)
	if path == "" {
		t.Skip("runs only as the server process of BenchmarkLoad")
	}
	script, err := LoadScript(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := NewServer(script, Options{})
	url, err := srv.Start("127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(url)
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// aimockFixture answers every request like testdata/repeat.yaml: a text
// block, then a read tool call.
const aimockFixture = `{"fixtures": [{"match": {}, "response": {"blocks": [
  {"type": "text", "text": "Reading."},
  {"type": "toolCall", "name": "read", "arguments": "{\"file_path\":\"README.md\"}"}]}}]}`

// loadServer is a mock server process under load.
type loadServer struct {
	name string
	url  string
	cmd  *exec.Cmd
	stop func()
}

func startRetraceServer(b *testing.B, name, bin string) *loadServer {
	cmd := exec.Command(bin, "-test.run=^TestLoadServerHelperProcess$")
	cmd.Env = append(os.Environ(), loadHelperEnv+"=testdata/repeat.yaml")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		b.Fatalf("%s server process printed no URL: %v", name, err)
	}
	return &loadServer{name: name, url: strings.TrimSpace(line), cmd: cmd, stop: func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}}
}

// aimockCLI finds aimock's llmock entry point: $AIMOCK_CLI (a path to
// dist/cli.js) or an llmock binary on PATH.
func aimockCLI() (string, []string, error) {
	if p := os.Getenv("AIMOCK_CLI"); p != "" {
		if strings.HasSuffix(p, ".js") {
			return "node", []string{p}, nil
		}
		return p, nil, nil
	}
	if p, err := exec.LookPath("llmock"); err == nil {
		return p, nil, nil
	}
	return "", nil, errors.New("aimock is not installed: npm install @copilotkit/aimock into a directory and set AIMOCK_CLI=DIR/node_modules/@copilotkit/aimock/dist/cli.js")
}

func startAimock(b *testing.B) *loadServer {
	bin, args, err := aimockCLI()
	if err != nil {
		return nil
	}
	dir := b.TempDir()
	fixture := filepath.Join(dir, "fixtures.json")
	if err := os.WriteFile(fixture, []byte(aimockFixture), 0o644); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	// Chunks of 6 characters give about as many stream events per reply as
	// retrace sends for the same content.
	args = append(args, "-p", strconv.Itoa(port), "-f", fixture, "--log-level", "silent", "--chunk-size", "6")
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatalf("start aimock: %v", err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			b.Fatalf("aimock did not listen on %s within 30s", addr)
		}
	}
	return &loadServer{name: "aimock", url: "http://" + addr, cmd: cmd, stop: func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}}
}

// procStats reads a process's resident set (VmRSS, bytes) and CPU time.
func procStats(pid int) (rss int64, cpu time.Duration, err error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	rss = vmRSS(status)
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// Fields after the parenthesised command: state is field 3, utime 14, stime 15.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 13 {
		return rss, 0, fmt.Errorf("/proc/%d/stat has %d fields", pid, len(f))
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const ticksPerSecond = 100 // USER_HZ on Linux
	return rss, time.Duration(ut+st) * time.Second / ticksPerSecond, nil
}

// vmRSS parses the VmRSS line of a /proc status file, in bytes.
func vmRSS(status []byte) int64 {
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// loadScenario is one kind of request under load.
type loadScenario struct {
	name   string
	path   string
	body   string
	header map[string]string
	// done is the line that ends a complete reply.
	done string
}

var loadScenarios = []loadScenario{
	{name: "anthropic-json", path: "/v1/messages", done: `"tool_use"`,
		header: map[string]string{"Anthropic-Version": "2023-06-01", "X-Api-Key": "test"},
		body:   `{"model":"claude-x","max_tokens":1024,"tools":[{"name":"read","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"read the README"}]}`},
	{name: "anthropic-sse", path: "/v1/messages", done: "event: message_stop",
		header: map[string]string{"Anthropic-Version": "2023-06-01", "X-Api-Key": "test"},
		body:   `{"model":"claude-x","max_tokens":1024,"stream":true,"tools":[{"name":"read","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"read the README"}]}`},
	{name: "chat-json", path: "/v1/chat/completions", done: `"tool_calls"`,
		header: map[string]string{"Authorization": "Bearer test"},
		body:   `{"model":"gpt-x","tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"read the README"}]}`},
	{name: "chat-sse", path: "/v1/chat/completions", done: "data: [DONE]",
		header: map[string]string{"Authorization": "Bearer test"},
		body:   `{"model":"gpt-x","stream":true,"tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"read the README"}]}`},
	{name: "responses-json", path: "/v1/responses", done: `"function_call"`,
		header: map[string]string{"Authorization": "Bearer test"},
		body:   `{"model":"gpt-x","tools":[{"type":"function","name":"read","parameters":{"type":"object"}}],"input":"read the README"}`},
	{name: "responses-sse", path: "/v1/responses", done: "event: response.completed",
		header: map[string]string{"Authorization": "Bearer test"},
		body:   `{"model":"gpt-x","stream":true,"tools":[{"type":"function","name":"read","parameters":{"type":"object"}}],"input":"read the README"}`},
}

// loadResult is what one load run measured.
type loadResult struct {
	responses int
	elapsed   time.Duration
	p50, p99  time.Duration
	events    int // SSE frames (or 1 for JSON) in one reply
}

// runLoad sends n requests from clients concurrent clients, each on its
// own keep-alive connection, and checks every reply is complete.
func runLoad(ctx context.Context, url string, sc loadScenario, clients, n int) (loadResult, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var next, events int64
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, n/clients+1)
			var rerr error
			var frames int64
			for {
				mu.Lock()
				if next >= int64(n) || firstErr != nil || ctx.Err() != nil {
					mu.Unlock()
					break
				}
				next++
				mu.Unlock()
				t0 := time.Now()
				frames, rerr = loadRequest(client, url, sc)
				if rerr != nil {
					break
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			if rerr != nil && firstErr == nil {
				firstErr = rerr
			}
			if frames > 0 {
				events = frames
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return loadResult{}, firstErr
	}
	slices.Sort(lat)
	return loadResult{responses: len(lat), elapsed: elapsed, p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], events: int(events)}, nil
}

// loadRequest sends one request and reads the whole reply, returning the
// number of SSE frames (1 for JSON).
func loadRequest(client *http.Client, url string, sc loadScenario) (int64, error) {
	req, err := http.NewRequest(http.MethodPost, url+sc.path, strings.NewReader(sc.body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range sc.header {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err
	}
	if res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(sc.done)) {
		return 0, fmt.Errorf("%s: status %d, reply without %q: %.300s", sc.name, res.StatusCode, sc.done, body)
	}
	if !strings.HasSuffix(sc.name, "-sse") {
		return 1, nil
	}
	return int64(bytes.Count(body, []byte("data: "))), nil
}

// BenchmarkLoad measures responses/s, p99 latency, server CPU per
// response and server RSS for retrace's mock server and aimock, at
// -load.clients concurrent clients, for Anthropic Messages, OpenAI Chat
// and OpenAI Responses, JSON and SSE. b.N is the number of requests of
// each run.
func BenchmarkLoad(b *testing.B) {
	servers := []*loadServer{startRetraceServer(b, "retrace", os.Args[0])}
	if *loadBaseline != "" {
		servers = append(servers, startRetraceServer(b, "retrace-baseline", *loadBaseline))
	}
	if s := startAimock(b); s != nil {
		servers = append(servers, s)
	} else {
		_, _, err := aimockCLI()
		b.Logf("aimock side skipped: %v", err)
	}
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, sc := range loadScenarios {
		for _, s := range servers {
			b.Run(sc.name+"/"+s.name, func(b *testing.B) {
				// Warm up connections and JIT before measuring.
				if _, err := runLoad(context.Background(), s.url, sc, *loadClients, 2**loadClients); err != nil {
					b.Fatal(err)
				}
				rss0, cpu0, err := procStats(s.cmd.Process.Pid)
				if err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				res, err := runLoad(context.Background(), s.url, sc, *loadClients, b.N)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				rss1, cpu1, err := procStats(s.cmd.Process.Pid)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(res.responses)/res.elapsed.Seconds(), "responses/s")
				b.ReportMetric(float64(res.p99.Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(res.p50.Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(res.responses), "cpu-µs/resp")
				b.ReportMetric(float64(rss1)/(1<<20), "rss-MB")
				b.ReportMetric(float64(rss1-rss0)/(1<<20), "rss-growth-MB")
				b.ReportMetric(float64(res.events), "frames/resp")
			})
		}
	}
}
