package recorder

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/retrace-dev/retrace/trajectory"
)

func TestTheUsersKeyIsMadeOnceTheUsersAloneAndSignsWhatItRecords(t *testing.T) {
	dir := t.TempDir()
	k, err := UserKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "retrace", KeyFile)
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v (%v), want mode 0600", info, err)
	}
	again, err := UserKey(dir)
	if err != nil || !bytes.Equal(again.secret, k.secret) {
		t.Fatalf("a second UserKey made another key (%v)", err)
	}

	var buf bytes.Buffer
	r := New(&buf, Options{SessionID: "20261205-000000.000-0a0b0c0d", Key: k})
	r.Emit(0, &trajectory.SessionStart{HarnessVersion: "t", Provider: "mock", Model: "m", Mode: trajectory.ModeHeadless,
		PermissionMode: trajectory.PermAcceptEdits, ConfigHash: "0123456789abcdef", SystemPromptHash: "0123456789abcdef",
		Tools: []trajectory.ToolInfo{}, Defenses: []trajectory.DefenseName{}, Config: []byte(`{"permissions":{"mode":"accept_edits"}}`)})
	if _, err := r.Close(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	events, err := trajectory.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	start := events[0].Payload.(*trajectory.SessionStart)
	if !k.Verify(events[0].Session, start) {
		t.Fatalf("the recording's own session_start does not check: %s", buf.Bytes())
	}
	other, err := UserKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if other.Verify(events[0].Session, start) {
		t.Fatal("another user's key checks the recording")
	}
	tampered := *start
	tampered.PermissionMode = trajectory.PermBypass
	if k.Verify(events[0].Session, &tampered) {
		t.Fatal("a changed session_start still checks")
	}
	if k.Verify("20261205-000000.000-ffffffff", start) {
		t.Fatal("the signature checks for another session")
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := UserKey(dir); err == nil {
		t.Fatal("a key others can read was used")
	}
}
