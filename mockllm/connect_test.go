package mockllm

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
)

// A client routed through the mock as an HTTPS proxy sends CONNECT; the log
// must name the host it wanted, or nobody can tell which traffic escaped.
func TestConnectIsRefusedAndLoggedWithItsTargetHost(t *testing.T) {
	s, err := ParseScript([]byte("model: mock-1\nrepeat: true\nturns:\n  - content: [{text: Done.}]\n"), "one.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, url := startServer(t, s)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("status = %d, want 405", resp.StatusCode)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("logged %d requests, want 1", len(reqs))
	}
	if got := reqs[0]; got.Method != http.MethodConnect || got.Path != "api.anthropic.com:443" || got.Status != http.StatusMethodNotAllowed {
		t.Errorf("logged %s %q %d, want CONNECT \"api.anthropic.com:443\" 405", got.Method, got.Path, got.Status)
	}
}
