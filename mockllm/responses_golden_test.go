package mockllm

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of the Responses wire")

// TestResponsesWireBytes pins the exact bytes of Responses replies, JSON
// and SSE, for the turns of testdata/responses/script.yaml. sse.golden was
// written by the encoding/json rendering the hand-encoded events replaced;
// json.golden too, except that <, > and & are no longer escaped as
// \u003c..., which the SSE events and the real API never did.
func TestResponsesWireBytes(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "sse"
		}
		t.Run(name, func(t *testing.T) {
			script := loadScript(t, "testdata/responses/script.yaml")
			srv := NewServer(script, Options{Now: func() time.Time { return time.Unix(1_700_000_000, 0) }})
			url, err := srv.Start("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			var got strings.Builder
			for turn := 1; turn <= 5; turn++ {
				body := fmt.Sprintf(`{"model":"gpt-x","stream":%t,"input":"turn %d"}`, stream, turn)
				res, err := http.Post(url+"/v1/responses", "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				if res.StatusCode != http.StatusOK {
					t.Fatalf("turn %d: status %d: %s", turn, res.StatusCode, b)
				}
				fmt.Fprintf(&got, "### turn %d\n%s\n", turn, b)
			}
			path := filepath.Join("testdata", "responses", name+".golden")
			if *updateGolden {
				if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != string(want) {
				t.Errorf("Responses %s bytes differ from %s (go test -run TestResponsesWireBytes -update rewrites it):\n got %s\nwant %s", name, path, got.String(), want)
			}
		})
	}
}
