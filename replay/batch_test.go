package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/retrace-dev/retrace/compare"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// bashScript is a one-call session: the model runs command, then answers.
func bashScript(t *testing.T, command string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.yaml")
	script := fmt.Sprintf("turns:\n  - content: [{tool_use: {id: toolu_1, name: bash, input: {command: %q}}}]\n  - content: [{text: done}]\n", command)
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// recordBash records a session whose one bash call runs command, in a
// workspace that allows it (bypass mode, trusted on replay).
func recordBash(t *testing.T, command string) string {
	t.Helper()
	ws := t.TempDir()
	for n, c := range map[string]string{"notes.txt": "notes\n", "retrace.yaml": "permissions:\n  mode: bypass\n"} {
		if err := os.WriteFile(filepath.Join(ws, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return recordScript(t, bashScript(t, command), ws)
}

// nonce prints random letters g–z: no digits or hex, so only a rule made
// for it normalises it away.
const nonce = "printf 'nonce: %s\\n' $(tr -dc g-z </dev/urandom | head -c 16)"

func TestRunBatchGivesEveryRecordingItsVerdictAndCountsTheClasses(t *testing.T) {
	recordings := []string{recordBash(t, "cat notes.txt"), recordBash(t, nonce), recordBash(t, "cat notes.txt")}
	junk := filepath.Join(t.TempDir(), "junk.jsonl")
	if err := os.WriteFile(junk, []byte("not a trajectory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recordings = append(recordings, junk)
	var mu sync.Mutex
	var progress []int
	b, err := RunBatch(t.Context(), BatchOptions{Recordings: recordings, Jobs: 2,
		Run: RunOptions{Out: filepath.Join(t.TempDir(), "replays"), TrustRecording: true},
		Progress: func(done, total int, _ Session) {
			mu.Lock()
			defer mu.Unlock()
			if total != 4 {
				t.Errorf("progress total %d, want 4", total)
			}
			progress = append(progress, done)
		}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Verdict{VerdictIdentical, VerdictDiverged, VerdictIdentical, VerdictFailed}
	for i, s := range b.Sessions {
		if s.Recording != recordings[i] || s.Verdict != want[i] {
			t.Fatalf("session %d: %s %s (%v), want %s %s", i, s.Recording, s.Verdict, s.Err, recordings[i], want[i])
		}
	}
	if b.Identical != 2 || b.Diverged != 1 || b.Failed != 1 || b.Classes[compare.ClassToolOutput] != 1 {
		t.Fatalf("totals %d/%d/%d classes %v", b.Identical, b.Diverged, b.Failed, b.Classes)
	}
	if !b.Sessions[3].BadInput() || !b.BadInput() || b.HarnessFailed() {
		t.Fatalf("a file that is not a trajectory is bad input: %v (batch bad input %v, harness %v)", b.Sessions[3].Err, b.BadInput(), b.HarnessFailed())
	}
	if fmt.Sprint(progress) != "[1 2 3 4]" {
		t.Fatalf("progress %v, want one call per replay, counting up", progress)
	}
	for _, s := range b.Sessions[:3] {
		if !s.Result.Removed {
			t.Fatalf("%s: the temporary workspace %s was not removed", s.Recording, s.Result.Workspace)
		}
		if _, err := os.Stat(s.Result.Workspace); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: the temporary workspace is still there (%v)", s.Recording, err)
		}
	}

	var table, md bytes.Buffer
	if err := b.Table(&table); err != nil {
		t.Fatal(err)
	}
	if err := b.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"4 recordings: 2 identical, 1 diverged, 1 failed", "divergence classes: tool_output_changed 1", "turn 1, toolu_1: tool_output_changed (text)", "junk.jsonl"} {
		if !strings.Contains(table.String(), w) {
			t.Errorf("the table lacks %q:\n%s", w, table.String())
		}
	}
	for _, w := range []string{"### Replay: 1 of 4 recordings diverged, 1 failed", "| **failed** |", "Divergence classes: tool_output_changed 1"} {
		if !strings.Contains(md.String(), w) {
			t.Errorf("the markdown lacks %q:\n%s", w, md.String())
		}
	}
	// A pull-request comment lists only what needs attention.
	if strings.Contains(md.String(), filepath.Base(recordings[0])) {
		t.Errorf("the markdown lists an identical session:\n%s", md.String())
	}
	sum := b.Summary()
	if sum.Recordings != 4 || sum.Sessions[1].First == nil || sum.Sessions[1].First.Class != compare.ClassToolOutput || !sum.Sessions[3].BadInput || sum.Sessions[3].Reason == "" {
		t.Fatalf("summary %+v", sum)
	}
}

// nonceRule normalises the nonce recordBash's volatile command prints.
func nonceRule(t *testing.T) compare.Rule {
	t.Helper()
	r, err := compare.ParseFlag("--normalize", `nonce: [g-z]+=>nonce: <n>`)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRunBatchWithARuleForTheVolatilePartIsIdentical(t *testing.T) {
	recordings := []string{recordBash(t, nonce), recordBash(t, "cat notes.txt")}
	b, err := RunBatch(t.Context(), BatchOptions{Recordings: recordings,
		Run: RunOptions{Out: filepath.Join(t.TempDir(), "replays"), TrustRecording: true,
			Compare: Options{Rules: []compare.Rule{nonceRule(t)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if b.Identical != 2 {
		var sb strings.Builder
		b.Table(&sb)
		t.Fatalf("with the nonce normalised the batch should be identical:\n%s", sb.String())
	}
}

func TestRunBatchRefusesWhatNoReplayOfItCanUse(t *testing.T) {
	rec := recordBash(t, "cat notes.txt")
	badConfig := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(badConfig, []byte("permissions:\n  alow: [Read]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		opts BatchOptions
		want string
	}{
		{"one --workspace for two recordings", BatchOptions{Recordings: []string{rec, rec}, Run: RunOptions{Workspace: t.TempDir()}}, "its own temporary workspace"},
		{"a --config that cannot be loaded", BatchOptions{Recordings: []string{rec}, Run: RunOptions{Config: badConfig}}, "alow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Run.Out = t.TempDir()
			_, err := RunBatch(t.Context(), c.opts)
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrInput saying %q", err, c.want)
			}
		})
	}
}

func TestRunBatchAfterCancelInterruptsTheRecordingsNotFinished(t *testing.T) {
	rec := recordBash(t, "cat notes.txt")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b, err := RunBatch(ctx, BatchOptions{Recordings: []string{rec, rec, rec}, Jobs: 1, Run: RunOptions{Out: t.TempDir(), TrustRecording: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Sessions) != 3 || b.Interrupted != 3 || b.Diverged+b.Failed != 0 {
		t.Fatalf("after cancel: %s", b.Totals())
	}
	for _, s := range b.Sessions {
		if s.Verdict != VerdictInterrupted || s.BadInput() || !errors.Is(s.Err, context.Canceled) {
			t.Fatalf("%s: %s %v, want interrupted with a context error that is not bad input", s.Recording, s.Verdict, s.Err)
		}
	}
	if b.BadInput() || b.HarnessFailed() {
		t.Fatal("an interrupted batch reports bad input or a harness failure")
	}
}

// TestReplayByARelativePathOfARecordingThatSpilledIsIdentical replays a
// recording whose spilled output names its blob by the absolute path the
// recorder was given, through a path relative to the working directory:
// the blob's path is the same file, not a divergence.
func TestReplayByARelativePathOfARecordingThatSpilledIsIdentical(t *testing.T) {
	rec := recordBash(t, "seq 1 20000")
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), filepath.Dir(rec)) {
		t.Fatalf("the recording's spill does not name its blob by the absolute path %s", filepath.Dir(rec))
	}
	t.Chdir(filepath.Dir(filepath.Dir(rec)))
	rel := filepath.Join(filepath.Base(filepath.Dir(rec)), filepath.Base(rec))
	res, err := Run(t.Context(), RunOptions{Recording: rel, Out: filepath.Join(t.TempDir(), "replays"), TrustRecording: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Report.Divergences); n != 0 {
		var sb strings.Builder
		res.Report.Table(&sb)
		t.Fatalf("%d divergences replaying %s:\n%s", n, rel, sb.String())
	}
}
