package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

// TestMockServeRecordsEveryRequestOfManyClientsInOneConversationOnce sends
// the requests of 50 clients, all in one conversation, at once through
// `mock serve --record`; some clients hang up in the middle of a stream.
// Every request made must be recorded exactly once, and get exactly one
// outcome: its model_response, or a model_error (aborted, undelivered,
// for a client that hung up).
func TestMockServeRecordsEveryRequestOfManyClientsInOneConversationOnce(t *testing.T) {
	const clients, each = 50, 8
	root := t.TempDir()
	script := filepath.Join(root, "script.yaml")
	// Every other turn stalls after its first delta, so a client that
	// hangs up there leaves mid-stream.
	if err := os.WriteFile(script, []byte("repeat: true\nturns:\n"+
		"  - content: [{text: \"A reply in a few words, sent as one stream.\"}]\n"+
		"  - content: [{text: \"A slow reply that stalls after its first words.\"}]\n    fault: {stall: 150ms}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "rec")
	m := serveCLI(t, "--script", script, "--record", dir)
	var made, hungUp atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				stream := i%2 == 1
				hangUp := stream && i%4 == 1
				body := fmt.Sprintf(`{"model":"mock-1","max_tokens":100,"stream":%v,"messages":[{"role":"user","content":"client %d, request %d: say something"}]}`, stream, c, i)
				if err := sendOne(m.url, body, hangUp, &made); err != nil {
					errs <- fmt.Errorf("client %d request %d: %w", c, i, err)
				}
				if hangUp {
					hungUp.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if code := m.stop(t); code != ExitOK {
		t.Fatalf("mock serve exited %d: %s", code, m.stderr.String())
	}
	files, err := filepath.Glob(filepath.Join(dir, "*"+trajectory.Ext))
	if err != nil || len(files) == 0 {
		t.Fatalf("no trajectory for the conversation (%v); stderr:\n%s", err, tail(m.stderr.String()))
	}
	// A trajectory holds one request at a time: requests that overlap go
	// to lanes, more sessions of the same conversation, each valid.
	var requests, responses, aborted, otherErrors, lanes int
	for _, file := range files {
		rep, err := trajectory.ValidateFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Problems {
			t.Errorf("the recording does not validate: %v", p)
		}
		events, err := trajectory.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			switch p := ev.Payload.(type) {
			case *trajectory.SessionStart:
				if p.Tags["lane"] != "" {
					lanes++
				}
			case *trajectory.ModelRequest:
				requests++
			case *trajectory.ModelResponse:
				responses++
			case *trajectory.ModelError:
				if p.ErrorKind == trajectory.ModelAborted && p.Undelivered {
					aborted++
				} else {
					otherErrors++
				}
			}
		}
	}
	if lanes != len(files)-1 {
		t.Errorf("%d sessions tagged as lanes among %d, want all but the first", lanes, len(files))
	}
	n := int(made.Load())
	if n != clients*each {
		t.Fatalf("%d requests made, want %d", n, clients*each)
	}
	if requests != n {
		t.Errorf("%d model_requests recorded for %d requests made", requests, n)
	}
	if responses+aborted+otherErrors != n || otherErrors != 0 {
		t.Errorf("%d outcomes (%d responses, %d aborted, %d other errors) for %d requests", responses+aborted+otherErrors, responses, aborted, otherErrors, n)
	}
	if aborted == 0 || int64(aborted) > hungUp.Load() {
		t.Errorf("%d requests recorded as aborted, want between 1 and the %d whose clients hung up", aborted, hungUp.Load())
	}
	t.Logf("%d requests, %d responses, %d aborted by a client that hung up mid-stream, in %d lanes", n, responses, aborted, len(files))
}

// sendOne posts one Messages body and reads the reply; with hangUp it
// leaves a stream after its first delta, as a client that gives up.
func sendOne(url, body string, hangUp bool, made *atomic.Int64) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	made.Add(1)
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", res.StatusCode)
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if hangUp && strings.Contains(sc.Text(), "content_block_delta") {
			cancel()
			return nil
		}
	}
	return sc.Err()
}

// tail is the end of a long output, for failure messages.
func tail(s string) string {
	if len(s) > 3000 {
		return "…" + s[len(s)-3000:]
	}
	return s
}
