package agent

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/retrace-dev/retrace/mockllm"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// hiccup is a trajectory writer whose disk is full for one write: the one
// that holds the given bytes. The space is back for the next.
type hiccup struct {
	buf    bytes.Buffer
	at     []byte
	failed bool
}

func (h *hiccup) Write(p []byte) (int, error) {
	if !h.failed && bytes.Contains(p, h.at) {
		h.failed = true
		return 0, syscall.ENOSPC
	}
	return h.buf.Write(p)
}

func TestASessionWhoseRecordFailsStopsBeforeTheNextEffect(t *testing.T) {
	script, err := mockllm.ParseScript([]byte(`turns:
  - content: [{tool_use: {id: toolu_1, name: bash, input: {command: "touch ran1"}}}]
  - content: [{tool_use: {id: toolu_2, name: bash, input: {command: "touch ran2"}}}]
  - content: [{text: done}]
`), "record_fails")
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	// The second model_request does not reach the disk; later writes do.
	w := &hiccup{at: []byte(`"turn":2,"type":"model_request"`)}
	rec := recorder.New(w, recorder.Options{})
	cfg := baseConfig(t, ws, script, rec)
	cfg.Executor.RecordErr = rec.Err
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != trajectory.EndRecordFailed || !errors.Is(res.Err, ErrRecordFailed) || !errors.Is(res.Err, syscall.ENOSPC) {
		t.Fatalf("ended %s with %v, want record_failed wrapping ErrRecordFailed and the disk's error", res.Reason, res.Err)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran1")); err != nil {
		t.Errorf("the first call, recorded, did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran2")); err == nil {
		t.Error("the second turn's call ran although its request was never recorded")
	}
	if n := script.Used(); n != 1 {
		t.Errorf("the model got %d requests, want 1: a request not on disk is not sent", n)
	}
	if _, err := rec.Close(); err != nil {
		t.Fatalf("Close: %v (the space came back, so what was held is written)", err)
	}
	validate(t, w.buf.Bytes())
	if end := sessionEnd(t, decode(t, w.buf.Bytes())); end.Reason != trajectory.EndRecordFailed || end.RecorderErrors == 0 {
		t.Errorf("session_end %+v, want record_failed with its recorder errors", end)
	}
}
