package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/recorder"
)

// editsScript edits a file (accept_edits lets it run unasked) and runs a
// bash command an allow rule lets run: in default mode both need a person.
const editsScript = `turns:
  - content:
      - tool_use: {id: toolu_write, name: write, input: {file_path: new.txt, content: "new\n"}}
      - tool_use: {id: toolu_touch, name: bash, input: {command: "touch marker"}}
  - content:
      - text: "done"
`

// ownWorkspace is a workspace whose configuration, the session's trusted
// one, runs in accept_edits mode with an allow rule for touch.
func ownWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	files := map[string]string{"notes.txt": "notes\n",
		"retrace.yaml": "permissions:\n  mode: accept_edits\n  allow: [\"Bash(touch:*)\"]\n"}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(ws, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func userKey(t *testing.T) *recorder.Key {
	t.Helper()
	k, err := recorder.UserKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The acceptance test of issue 30 (2), in Go: a session that ran under
// accept_edits and an allow rule replays identically with no flags when it
// is the user's own recording, and a stranger's keeps today's behaviour:
// the mode and rule are left out, said so, and its divergence is expected.
func TestTheUsersOwnRecordingReplaysUnderItsRecordedModeAndRules(t *testing.T) {
	key := userKey(t)
	recording := recordSession(t, recordOpts{script: []byte(editsScript), name: "edits.yaml", ws: ownWorkspace(t), prompt: "Edit.", key: key})
	if permissionOf(t, recording, "toolu_touch") != "permission_allow" || permissionOf(t, recording, "toolu_write") != "permission_allow" {
		data, _ := os.ReadFile(recording)
		t.Fatalf("the recorded session did not run both calls unasked; the test proves nothing:\n%s", data)
	}

	t.Run("own", func(t *testing.T) {
		res, err := Run(t.Context(), RunOptions{Recording: recording, Out: t.TempDir(), Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Report.Identical() || len(res.LeftOut) > 0 {
			t.Fatalf("the user's own recording does not replay identically (left out %v):\n%s\nnotes %q", res.LeftOut, tableWithDetails(res.Report), res.Report.Notes)
		}
	})

	t.Run("someone else's", func(t *testing.T) {
		b, err := RunBatch(t.Context(), BatchOptions{Recordings: []string{recording}, Run: RunOptions{Out: t.TempDir(), Key: userKey(t)}})
		if err != nil {
			t.Fatal(err)
		}
		s := b.Sessions[0]
		if s.Verdict != VerdictExpected || !strings.Contains(s.Reason(), "permissions.allow[0]") {
			t.Fatalf("verdict %s (%s), want expected naming the allow rule left out", s.Verdict, s.Reason())
		}
		if !hasNote(s.Result.Report, "divergences these settings cause are expected, not a what-if") {
			t.Fatalf("no note says the divergences are expected: %q", s.Result.Report.Notes)
		}
		if !hasNote(s.Result.Report, "retrace.yaml:3: permissions.allow[0]") {
			t.Fatalf("no note names the allow rule's file and line: %q", s.Result.Report.Notes)
		}
	})

	t.Run("a what-if reports only what the user changed", func(t *testing.T) {
		whatIf := filepath.Join(t.TempDir(), "deny.yaml")
		if err := os.WriteFile(whatIf, []byte("permissions:\n  deny: [\"Bash(touch:*)\"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := Run(t.Context(), RunOptions{Recording: recording, Out: t.TempDir(), Key: key, Config: whatIf})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.WhatIf) != 1 || res.WhatIf[0] != "permissions.deny[0]" {
			t.Fatalf("what-if settings %v, want the one deny rule", res.WhatIf)
		}
		var changed []string
		for _, d := range res.Report.Divergences {
			if d.Class == "permission_changed" {
				changed = append(changed, d.ToolUseID)
			}
		}
		if len(changed) != 1 || changed[0] != "toolu_touch" {
			t.Fatalf("permission changes %v, want only the touch the what-if denies:\n%s", changed, tableWithDetails(res.Report))
		}
	})
}

// The acceptance test of issue 30 (3): a bash call printing the time in
// nanoseconds and its shell's pid replays identically, the pid mapped
// exactly from tool_end's pid.
func TestPIDAndNanosecondTimeReplayIdentically(t *testing.T) {
	recording := recordBash(t, "date +%s%N; echo $$")
	res, err := Run(t.Context(), RunOptions{Recording: recording, Out: t.TempDir(), TrustRecording: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Report.Identical() {
		t.Fatalf("the replay diverges:\n%s", tableWithDetails(res.Report))
	}
	used := map[string]bool{}
	for _, u := range res.Report.Normalized {
		used[u.Rule] = true
	}
	if !used["pid_map"] {
		t.Fatalf("the pid was not mapped: %+v", res.Report.Normalized)
	}
	// A number that is not the call's pid still counts.
	res, err = Run(t.Context(), RunOptions{Recording: recordBash(t, "echo $(( $$ + 1 ))"), Out: t.TempDir(), TrustRecording: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Identical() {
		t.Fatal("a number next to the pid replays as identical: the mapping guesses")
	}
}

func TestAnExhibitIsListedNotFailed(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "recording.jsonl")
	if err := os.WriteFile(rec, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := recorder.MarkNotReplayable(dir, "exhibit: lost_call carries a recording"); err != nil {
		t.Fatal(err)
	}
	b, err := RunBatch(t.Context(), BatchOptions{Recordings: []string{rec, recordBash(t, "cat notes.txt")}, Run: RunOptions{Out: t.TempDir(), TrustRecording: true}})
	if err != nil {
		t.Fatal(err)
	}
	if b.Exhibits != 1 || b.Identical != 1 || b.Failed != 0 || b.BadInput() {
		t.Fatalf("%s, want one exhibit and one identical", b.Totals())
	}
	if r := b.Sessions[0].Reason(); !strings.Contains(r, "not replayable: exhibit: lost_call") {
		t.Fatalf("reason %q", r)
	}
}

// A replay of a named pipe that no writer opens ends when it is cancelled,
// as an interruption, not bad input.
func TestAReplayOfAPipeWithNoWriterObeysCancellation(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "rec.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	done := make(chan Batch, 1)
	go func() {
		b, _ := RunBatch(ctx, BatchOptions{Recordings: []string{fifo}, Run: RunOptions{Out: t.TempDir()}})
		done <- b
	}()
	select {
	case b := <-done:
		if b.Interrupted != 1 || b.BadInput() {
			t.Fatalf("%s, want it interrupted", b.Totals())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the replay still waits for the pipe's writer after it was cancelled")
	}
}
