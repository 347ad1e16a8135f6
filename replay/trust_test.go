package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/agent/config"
	"github.com/retrace-dev/retrace/agent/executor"
	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// yes is a person who approves every call.
type yes struct{}

func (yes) Confirm(context.Context, executor.Prompt) (bool, error) { return true, nil }

// touchScript asks for a bash call that creates a file in the workspace:
// not read-only, so in default mode a person has to approve it.
const touchScript = `turns:
  - content:
      - tool_use: {id: toolu_touch, name: bash, input: {command: "touch approved-marker"}}
  - content:
      - text: "done"
`

// record runs script in ws the way retrace run does — the workspace's
// retrace.yaml as the policy when it has one, the workspace snapshot — with
// prompter answering the permission prompts, and returns the recording.
func record(t *testing.T, script, ws string, prompter executor.Prompter, snap recorder.SnapshotOptions) string {
	t.Helper()
	return recordSession(t, recordOpts{script: []byte(script), name: "script.yaml", ws: ws, prompt: "Create the marker.", prompter: prompter, snap: snap})
}

// permissionOf returns how the replay decided on the call.
func permissionOf(t *testing.T, path, id string) trajectory.EventType {
	t.Helper()
	events, err := trajectory.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var last trajectory.EventType
	for _, ev := range events {
		switch p := ev.Payload.(type) {
		case *trajectory.PermissionAllow:
			if p.ToolUseID == id {
				last = ev.Type()
			}
		case *trajectory.PermissionDeny:
			if p.ToolUseID == id {
				last = ev.Type()
			}
		}
	}
	return last
}

func hasNote(r Report, parts ...string) bool {
	return slices.ContainsFunc(r.Notes, func(n string) bool {
		for _, p := range parts {
			if !strings.Contains(n, p) {
				return false
			}
		}
		return true
	})
}

func TestARecordedApprovalIsReappliedOnlyToATrustedRecordingAndOnlyToTheSameInput(t *testing.T) {
	recording := record(t, touchScript, t.TempDir(), yes{}, recorder.SnapshotOptions{})
	if got := permissionOf(t, recording, "toolu_touch"); got != trajectory.TypePermissionAllow {
		t.Fatalf("the recording's decision is %s, want a person's allow", got)
	}
	replayIn := func(t *testing.T, recording string, trust bool) (Result, string) {
		t.Helper()
		ws := filepath.Join(t.TempDir(), "ws")
		res, err := Run(t.Context(), RunOptions{Recording: recording, Out: t.TempDir(), Workspace: ws, TrustRecording: trust})
		if err != nil {
			t.Fatal(err)
		}
		return res, ws
	}

	t.Run("untrusted, the approval is reported and not re-applied", func(t *testing.T) {
		res, ws := replayIn(t, recording, false)
		if _, err := os.Stat(filepath.Join(ws, "approved-marker")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the approved call ran in an untrusted replay (%v)", err)
		}
		if got := permissionOf(t, res.Path, "toolu_touch"); got != trajectory.TypePermissionDeny {
			t.Fatalf("the replay's decision is %q, want a deny", got)
		}
		if !hasNote(res.Report, "a person approving 1 call (toolu_touch)", "not re-approved", "--trust-recording") {
			t.Fatalf("notes %q", res.Report.Notes)
		}
	})
	t.Run("trusted, the approval is re-applied to the byte-identical call", func(t *testing.T) {
		res, ws := replayIn(t, recording, true)
		if _, err := os.Stat(filepath.Join(ws, "approved-marker")); err != nil {
			t.Fatalf("the approved call did not run in a trusted replay: %v", err)
		}
		if !res.Report.Identical() {
			var sb strings.Builder
			res.Report.Table(&sb)
			t.Fatalf("a trusted replay diverges:\n%s", sb.String())
		}
	})
	t.Run("trusted, a call whose input was changed does not borrow the approval", func(t *testing.T) {
		// Tamper with the recorded model response only: the replayed call
		// then asks for another command than the one the person approved.
		data, err := os.ReadFile(recording)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		changed := 0
		for i, l := range lines {
			if strings.Contains(l, `"type":"model_response"`) && strings.Contains(l, "touch approved-marker") {
				lines[i] = strings.ReplaceAll(l, "touch approved-marker", "touch approved-marker; touch extra")
				changed++
			}
		}
		if changed != 1 {
			t.Fatalf("tampered %d responses, want 1", changed)
		}
		tampered := filepath.Join(filepath.Dir(recording), "tampered.jsonl")
		if err := os.WriteFile(tampered, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(recorder.BlobsDir(recording), recorder.BlobsDir(tampered)); err != nil {
			t.Fatal(err)
		}
		res, ws := replayIn(t, tampered, true)
		for _, f := range []string{"approved-marker", "extra"} {
			if _, err := os.Stat(filepath.Join(ws, f)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the changed call ran on the recorded approval: %s exists (%v)", f, err)
			}
		}
		if !hasNote(res.Report, "toolu_touch", "input differs") {
			t.Fatalf("notes %q", res.Report.Notes)
		}
	})
}

func TestAnUntrustedRecordingsModeAndAllowRulesAreReportedAndNotApplied(t *testing.T) {
	ws := t.TempDir()
	cfg := "permissions:\n  mode: bypass\n  allow: [Bash]\n  deny: [\"Bash(rm:*)\"]\n"
	if err := os.WriteFile(filepath.Join(ws, config.FileName), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	recording := record(t, touchScript, ws, nil, recorder.SnapshotOptions{})
	res, err := Run(t.Context(), RunOptions{Recording: recording, Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if got := permissionOf(t, res.Path, "toolu_touch"); got != trajectory.TypePermissionDeny {
		t.Fatalf("the replay's decision is %q; bypass and the allow rule must not apply", got)
	}
	if hasNote(res.Report, "the recorded session ran in permission mode") {
		t.Errorf("the mode is explained twice: %q", res.Report.Notes)
	}
	for _, want := range [][]string{
		{"not applied: ", "/retrace.yaml:2: permissions.mode: bypass", "the replay runs in accept_edits mode", "--trust-recording"},
		{"not applied: ", "/retrace.yaml:3: permissions.allow[0]"},
		{"divergences these settings cause are expected, not a what-if"},
	} {
		if !hasNote(res.Report, want...) {
			t.Errorf("no note says %q; notes %q", want, res.Report.Notes)
		}
	}
	var sb strings.Builder
	if err := res.Report.Markdown(&sb); err != nil || !strings.Contains(sb.String(), "## Notes") {
		t.Fatalf("the Markdown report has no notes (%v):\n%s", err, sb.String())
	}
}

func TestFilesTheSnapshotDidNotCaptureAreNamedInTheReport(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "big.bin"), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "small.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recording := record(t, touchScript, ws, nil, recorder.SnapshotOptions{MaxFileBytes: 1024})
	res, err := Run(t.Context(), RunOptions{Recording: recording, Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !hasNote(res.Report, "not captured: big.bin ("+recorder.SkippedTooLarge+")") || hasNote(res.Report, "small.txt") {
		t.Fatalf("notes %q", res.Report.Notes)
	}
}

// What the snapshot leaves out by design is named too: a .git directory
// (always left out) and what a .gitignore matches, each at its highest
// level, so that a replayed `git status` or `ls build` that differs is
// explained. retrace's own .retrace directory is not named: it is never
// the session's work.
func TestWhatTheSnapshotLeavesOutByDesignIsNamedInTheReport(t *testing.T) {
	ws := t.TempDir()
	for p, content := range map[string]string{
		".gitignore":           "build/\n*.log\n",
		".git/HEAD":            "ref: refs/heads/main\n",
		"build/out.o":          "o",
		"build/deep/more.o":    "o",
		"debug.log":            "noise",
		"small.txt":            "hi\n",
		".retrace/runs/x.json": "{}",
	} {
		full := filepath.Join(ws, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recording := record(t, touchScript, ws, nil, recorder.SnapshotOptions{})
	res, err := Run(t.Context(), RunOptions{Recording: recording, Out: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !hasNote(res.Report, "not captured: .git (always left out), build (.gitignore), debug.log (.gitignore)") ||
		hasNote(res.Report, ".retrace") || hasNote(res.Report, "more.o") || hasNote(res.Report, "small.txt") {
		t.Fatalf("notes %q", res.Report.Notes)
	}
}

func TestTheTemporaryWorkspaceIsRemovedUnlessKept(t *testing.T) {
	recording := record(t, touchScript, t.TempDir(), nil, recorder.SnapshotOptions{})
	for _, keep := range []bool{false, true} {
		res, err := Run(t.Context(), RunOptions{Recording: recording, Out: t.TempDir(), Keep: keep})
		if err != nil {
			t.Fatal(err)
		}
		_, serr := os.Stat(res.Workspace)
		if res.Workspace == "" || res.Removed == keep || errors.Is(serr, os.ErrNotExist) != !keep {
			t.Fatalf("keep %v: workspace %q removed %v (stat: %v)", keep, res.Workspace, res.Removed, serr)
		}
		if keep {
			os.RemoveAll(res.Workspace)
		}
	}
}

func TestReplayInputErrorsAreErrInput(t *testing.T) {
	recording := record(t, touchScript, t.TempDir(), nil, recorder.SnapshotOptions{})
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop.jsonl")
	os.Symlink(loop, loop)
	garbage := filepath.Join(dir, "garbage.jsonl")
	os.WriteFile(garbage, []byte("\x00\x01\x02 not a trajectory"), 0o644)
	full := filepath.Join(dir, "full")
	os.MkdirAll(full, 0o755)
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	badConfig := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badConfig, []byte("permissions:\n  alow: [Read]\n"), 0o644)
	tests := []struct {
		name string
		opts RunOptions
		want string
	}{
		{"a directory instead of a recording", RunOptions{Recording: dir}, "is a directory"},
		{"a symlink loop", RunOptions{Recording: loop}, "symlink loop"},
		{"binary garbage", RunOptions{Recording: garbage}, "binary data"},
		{"a --workspace that is not empty", RunOptions{Recording: recording, Workspace: full}, "is not empty"},
		{"a --config with an unknown key", RunOptions{Recording: recording, Config: badConfig}, "alow"},
		{"--out in the recording's own directory", RunOptions{Recording: recording, Out: filepath.Dir(recording)}, "own directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.opts.Out == "" {
				tt.opts.Out = t.TempDir()
			}
			_, err := Run(t.Context(), tt.opts)
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrInput saying %q", err, tt.want)
			}
		})
	}
}

// A recording made with --config has no retrace.yaml in its snapshot: the
// mode it ran in is still said, since the replay cannot apply it.
func TestTheRecordedModeIsNamedWhenTheReplayRunsInAnother(t *testing.T) {
	recording := record(t, touchScript, t.TempDir(), yes{}, recorder.SnapshotOptions{})
	cfg := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(cfg, []byte("permissions:\n  mode: plan\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), RunOptions{Recording: recording, Out: t.TempDir(), Config: cfg, TrustRecording: true})
	if err != nil {
		t.Fatal(err)
	}
	if !hasNote(res.Report, "the recorded session ran in permission mode default; the replay runs in plan mode") {
		t.Fatalf("notes %q", res.Report.Notes)
	}
}

// A crafted snapshot whose manifest climbs out of the workspace is refused
// before anything is written, as bad input.
func TestASnapshotThatWouldWriteOutsideTheWorkspaceIsBadInput(t *testing.T) {
	recording := record(t, touchScript, t.TempDir(), nil, recorder.SnapshotOptions{})
	events, err := trajectory.ReadFile(recording)
	if err != nil {
		t.Fatal(err)
	}
	var snapshot string
	for _, ev := range events {
		if p, ok := ev.Payload.(*trajectory.WorkspaceSnapshot); ok {
			snapshot = p.Manifest
		}
	}
	if snapshot == "" {
		t.Fatal("the recording has no workspace_snapshot event")
	}
	blobs := recorder.OpenBlobs(recorder.BlobsDir(recording))
	content, _, err := blobs.Put([]byte("planted\n"))
	if err != nil {
		t.Fatal(err)
	}
	manifest := `{"version":1,"entries":[{"path":"../escaped","type":"file","mode":420,"size":8,"blob":"` + content + `"}]}`
	ref, _, err := blobs.Put([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(recording)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recording, []byte(strings.Replace(string(data), snapshot, ref, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	_, err = Run(t.Context(), RunOptions{Recording: recording, Out: t.TempDir(), Workspace: filepath.Join(parent, "ws")})
	if !errors.Is(err, ErrInput) || !errors.Is(err, recorder.ErrUnsafeSnapshot) || !strings.Contains(err.Error(), "not replayed") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(parent, "escaped")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the crafted entry was written outside the workspace (%v)", err)
	}
}

// Any reason a snapshot gives for leaving a file out is named, including
// reasons this package has never heard of, such as "secret".
func TestEverySkippedEntryIsNamedWithItsReason(t *testing.T) {
	blobs := recorder.OpenBlobs(t.TempDir())
	content, _, err := blobs.Put([]byte("kept\n"))
	if err != nil {
		t.Fatal(err)
	}
	manifest := `{"version":1,"entries":[` +
		`{"path":".env","type":"file","mode":384,"size":40,"skipped":"secret"},` +
		`{"path":"a.txt","type":"file","mode":420,"size":5,"blob":"` + content + `"},` +
		`{"path":"keys/id_ed25519","type":"file","mode":384,"size":400,"skipped":"some_future_reason"}]}`
	ref, _, err := blobs.Put([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "ws")
	notes, err := restore(blobs, ref, dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 2 || !strings.HasPrefix(notes[0], "not captured: .env (secret)") ||
		!strings.HasPrefix(notes[1], "not captured: keys/id_ed25519 (some_future_reason)") {
		t.Fatalf("notes %q", notes)
	}
	if got, err := os.ReadFile(filepath.Join(dst, "a.txt")); err != nil || string(got) != "kept\n" {
		t.Fatalf("a.txt = %q (%v)", got, err)
	}
}
