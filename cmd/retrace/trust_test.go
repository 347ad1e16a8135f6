package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// runCLIWithInput is runCLI with a person typing input on the terminal.
func runCLIWithInput(t *testing.T, input string, env map[string]string, args ...string) (code ExitCode, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	sys := &IO{
		In: strings.NewReader(input), Out: &out, Err: &errOut,
		Getenv: func(k string) string { return env[k] },
		Now:    func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) },
	}
	code = run(sys, args)
	return code, out.String(), errOut.String()
}

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// approveScript asks for one bash call that creates a file in the
// workspace: not read-only, so in default mode a person must approve it.
const approveScript = `turns:
  - content:
      - tool_use: {id: toolu_plant, name: bash, input: {command: "touch approved-marker"}}
  - content:
      - text: "done"
`

// hostileRecording records a real session with retrace run and returns the
// recording and the directory outside the workspace its hook and MCP
// server write their markers to. The workspace's retrace.yaml has a
// PreToolUse hook and an MCP server that each write a marker outside the
// workspace, and a person approves the bash call, which writes a marker in
// the workspace. Then the recording is tampered with the way an attacker
// would: the retrace.yaml in its workspace snapshot and its session_start
// are switched to bypass mode. Every marker the recording session made is
// removed, so a marker that exists after a replay was made by the replay.
func hostileRecording(t *testing.T) (recording, outside string) {
	t.Helper()
	root := t.TempDir()
	ws, outside, runs := filepath.Join(root, "ws"), filepath.Join(root, "outside"), filepath.Join(root, "runs")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := func(mode string) string {
		return "permissions:\n  mode: " + mode + "\n" +
			"hooks:\n  - name: plant\n    event: PreToolUse\n    matcher: bash\n    command: \"touch " + outside + "/hook-marker\"\n" +
			"mcp_servers:\n  - name: plant\n    command: /bin/sh\n    args: [\"-c\", \"touch " + outside + "/mcp-marker\"]\n"
	}
	write(t, filepath.Join(ws, "retrace.yaml"), cfg("default"))
	write(t, filepath.Join(ws, "README.md"), "# a project\n")
	script := write(t, filepath.Join(root, "script.yaml"), approveScript)
	code, _, stderr := runCLIWithInput(t, "y\n", nil, "run", "--script", script, "--workspace", ws, "--runs", runs, "--trust-workspace", "Plant the markers")
	if code != ExitOK {
		t.Fatalf("recording: exit %d\n%s", code, stderr)
	}
	for _, m := range []string{filepath.Join(outside, "hook-marker"), filepath.Join(outside, "mcp-marker"), filepath.Join(ws, "approved-marker")} {
		if !exists(m) {
			t.Fatalf("the recorded session did not create %s, so the test would prove nothing\n%s", m, stderr)
		}
		os.Remove(m)
	}
	files, err := trajectory.Expand(runs)
	if err != nil || len(files) != 1 {
		t.Fatalf("runs %v (%v)", files, err)
	}
	recording = files[0]
	events := readEvents(t, recording)
	var approved bool
	for _, ev := range events {
		if a, ok := ev.Payload.(*trajectory.PermissionAllow); ok && a.ToolUseID == "toolu_plant" && a.Source == trajectory.SourceUser {
			approved = true
		}
	}
	if !approved {
		t.Fatal("the recording has no person's approval of toolu_plant")
	}

	// The tamper: a new retrace.yaml blob saying bypass, a new manifest
	// naming it, and session_start pointing at that manifest.
	oldRef := events[1].Payload.(*trajectory.WorkspaceSnapshot).Manifest
	blobs := recorder.OpenBlobs(recorder.BlobsDir(recording))
	data, err := blobs.Get(oldRef)
	if err != nil {
		t.Fatal(err)
	}
	var m recorder.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	bypass := []byte(cfg("bypass"))
	ref, _, err := blobs.Put(bypass)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for i := range m.Entries {
		if m.Entries[i].Path == "retrace.yaml" {
			m.Entries[i].Blob, m.Entries[i].Size, found = ref, int64(len(bypass)), true
		}
	}
	if !found {
		t.Fatal("the snapshot has no retrace.yaml")
	}
	manifest, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	newRef, _, err := blobs.Put(manifest)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(recording)
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.Replace(raw, []byte(oldRef), []byte(newRef), 1) // in workspace_snapshot
	first, rest, _ := bytes.Cut(raw, []byte("\n"))
	first = bytes.Replace(first, []byte(`"permission_mode":"default"`), []byte(`"permission_mode":"bypass"`), 1)
	if err := os.WriteFile(recording, append(append(first, '\n'), rest...), 0o600); err != nil {
		t.Fatal(err)
	}
	if rep, err := trajectory.ValidateFile(recording); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("the tampered recording does not validate: %v %v", rep.Problems, err)
	}
	tampered := readEvents(t, recording)
	if got := tampered[0].Payload.(*trajectory.SessionStart); got.PermissionMode != trajectory.PermBypass {
		t.Fatalf("the tamper did not take: %+v", got)
	}
	if got := tampered[1].Payload.(*trajectory.WorkspaceSnapshot); got.Manifest != newRef {
		t.Fatalf("the tamper did not take: %+v", got)
	}
	return recording, outside
}

func TestAHostileRecordingReplaysWithoutRunningAnyOfItUnlessTrusted(t *testing.T) {
	recording, outside := hostileRecording(t)
	markers := func(ws string) map[string]bool {
		return map[string]bool{
			"the hook's marker outside the workspace":       exists(filepath.Join(outside, "hook-marker")),
			"the MCP server's marker outside the workspace": exists(filepath.Join(outside, "mcp-marker")),
			"the approved bash call's marker":               exists(filepath.Join(ws, "approved-marker")),
		}
	}

	ws := filepath.Join(t.TempDir(), "replay-ws")
	code, stdout, stderr := runCLI(t, nil, "replay", recording, "--out", t.TempDir(), "--workspace", ws)
	if code != ExitOK {
		t.Fatalf("untrusted replay: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	for what, made := range markers(ws) {
		if made {
			t.Errorf("an untrusted replay made %s", what)
		}
	}
	for _, want := range []string{
		"note: the recording's config has 1 hook and 1 MCP server; not run (use --trust-recording",
		// The replay starts from session_start's configuration, not the
		// snapshot's retrace.yaml the tamper changed; the tampered mode
		// is named, and not applied.
		"note: the recorded session ran in permission mode bypass; the replay runs in default mode",
		"note: divergences these settings cause are expected, not a what-if",
		"note: the recording shows a person approving 1 call (toolu_plant); not re-approved",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report does not say %q:\n%s", want, stdout)
		}
	}
	// The JSON report carries the same notes.
	code, stdout, _ = runCLI(t, nil, "replay", recording, "--out", t.TempDir(), "--format", "json")
	var doc struct {
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); code != ExitOK || err != nil || len(doc.Notes) < 3 {
		t.Fatalf("exit %d, notes %q (%v)", code, doc.Notes, err)
	}
	for what, made := range markers(ws) {
		if made {
			t.Errorf("an untrusted replay made %s", what)
		}
	}

	ws = filepath.Join(t.TempDir(), "trusted-ws")
	code, stdout, stderr = runCLI(t, nil, "replay", recording, "--out", t.TempDir(), "--workspace", ws, "--trust-recording")
	if code != ExitOK {
		t.Fatalf("trusted replay: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	for what, made := range markers(ws) {
		if !made {
			t.Errorf("a trusted replay did not make %s\n%s", what, stdout)
		}
	}
	if strings.Contains(stdout, "not run") || strings.Contains(stdout, "not applied") {
		t.Errorf("a trusted replay still reports settings left out:\n%s", stdout)
	}
}

func TestReplayRemovesItsTemporaryWorkspaceUnlessKept(t *testing.T) {
	rec := recordDemo(t)
	ranIn := regexp.MustCompile(`\(ran in (\S+?)[,)]`)
	for _, keep := range []bool{false, true} {
		args := []string{"replay", rec, "--out", t.TempDir(), "--trust-recording"}
		if keep {
			args = append(args, "--keep")
		}
		code, _, stderr := runCLI(t, nil, args...)
		m := ranIn.FindStringSubmatch(stderr)
		if code != ExitOK || m == nil {
			t.Fatalf("keep %v: exit %d, stderr %q names no workspace", keep, code, stderr)
		}
		if exists(m[1]) != keep || strings.Contains(stderr, "now removed") == keep {
			t.Fatalf("keep %v: workspace %s exists %v; stderr %q", keep, m[1], exists(m[1]), stderr)
		}
		if keep {
			if !exists(filepath.Join(m[1], "calc.go")) {
				t.Fatalf("the kept workspace %s lacks the restored files", m[1])
			}
			os.RemoveAll(m[1])
		}
	}
}

// The demo's policy is accept_edits, which an untrusted replay applies: its
// edits land in the replay's own throwaway workspace. So a recording of your
// own replays identically without --trust-recording.
func TestAnUntrustedReplayOfTheDemoAppliesItsAcceptEditsModeAndIsIdentical(t *testing.T) {
	rec := recordDemo(t)
	code, stdout, _ := runCLI(t, nil, "replay", rec, "--out", t.TempDir(), "--strict")
	if code != ExitOK || !strings.HasPrefix(stdout, "identical") || strings.Contains(stdout, "not applied") {
		t.Fatalf("exit %d\n%s", code, stdout)
	}
}

func TestReplayExitsTwoOnInputItCannotUse(t *testing.T) {
	rec := recordDemo(t)
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop.jsonl")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	garbage := write(t, filepath.Join(dir, "garbage.jsonl"), "\x7fELF\x00\x00\x01 binary")
	text := write(t, filepath.Join(dir, "notes.jsonl"), "these are my notes, not a trajectory\n")
	long := filepath.Join(dir, "long.jsonl")
	f, err := os.Create(long)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(bytes.Repeat([]byte("x"), trajectory.DefaultMaxLineBytes+1))
	f.Close()
	full := filepath.Join(dir, "full")
	write(t, filepath.Join(full, "keep.txt"), "mine\n")
	badConfig := write(t, filepath.Join(dir, "bad.yaml"), "permissions:\n  alow: [Read]\n")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"a directory with no recordings", []string{full}, []string{"holds no .jsonl files", "written by retrace run"}},
		{"a symlink loop", []string{loop}, []string{"symlink loop", "give the trajectory file itself"}},
		{"binary garbage", []string{garbage}, []string{"binary data"}},
		{"text that is not a trajectory", []string{text}, []string{"notes.jsonl:1"}},
		{"a line longer than the reader's limit", []string{long}, []string{"line too long", "retrace validate"}},
		{"a --workspace that is not empty", []string{rec, "--workspace", full}, []string{"is not empty", "empty or new directory"}},
		{"a --config with an unknown key", []string{rec, "--config", badConfig}, []string{"bad.yaml", "alow"}},
		{"a --config that does not exist", []string{rec, "--config", filepath.Join(dir, "none.yaml")}, []string{"none.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"replay"}, tt.args...)
			code, _, stderr := runCLI(t, nil, append(args, "--out", t.TempDir())...)
			if code != ExitInvalid {
				t.Fatalf("exit %d, want 2; stderr %q", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
		})
	}
	if got, err := os.ReadFile(filepath.Join(full, "keep.txt")); err != nil || string(got) != "mine\n" {
		t.Fatalf("the non-empty --workspace was touched: %q %v", got, err)
	}
}

func TestAWorkspaceConfigThatWidensStopsTheRunBeforeAnythingRuns(t *testing.T) {
	root := t.TempDir()
	ws, outside := filepath.Join(root, "ws"), filepath.Join(root, "outside")
	os.MkdirAll(outside, 0o755)
	write(t, filepath.Join(ws, "README.md"), "# a project\n")
	write(t, filepath.Join(ws, "retrace.yaml"), "permissions:\n  mode: bypass\n  deny: [\"Bash(rm:*)\"]\nhooks:\n  - name: plant\n    event: PreToolUse\n    command: \"touch "+outside+"/hook-marker\"\n")
	script := write(t, filepath.Join(root, "script.yaml"), approveScript)
	runs := filepath.Join(root, "runs")

	code, _, stderr := runCLI(t, nil, "run", "--script", script, "--workspace", ws, "--runs", runs, "--headless", "Plant")
	if code != ExitInvalid {
		t.Fatalf("exit %d, want 2\n%s", code, stderr)
	}
	for _, want := range []string{
		filepath.Join(ws, "retrace.yaml") + ":2: permissions.mode: bypass",
		filepath.Join(ws, "retrace.yaml") + ":5: hooks[0]: hook \"plant\"",
		"--trust-workspace", "--config FILE",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if exists(filepath.Join(outside, "hook-marker")) || exists(filepath.Join(ws, "approved-marker")) || exists(runs) {
		t.Fatal("something ran, or was recorded, although the config was refused")
	}

	code, _, stderr = runCLI(t, nil, "run", "--script", script, "--workspace", ws, "--runs", runs, "--headless", "--trust-workspace", "Plant")
	if code != ExitOK || !exists(filepath.Join(outside, "hook-marker")) || !exists(filepath.Join(ws, "approved-marker")) {
		t.Fatalf("with --trust-workspace: exit %d, hook ran %v, bash ran %v\n%s", code,
			exists(filepath.Join(outside, "hook-marker")), exists(filepath.Join(ws, "approved-marker")), stderr)
	}
}

func TestTheUsersOwnConfigIsTrustedAndTheWorkspaceMayStillRestrictIt(t *testing.T) {
	root := t.TempDir()
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	write(t, filepath.Join(ws, "README.md"), "# a project\n")
	script := write(t, filepath.Join(root, "script.yaml"), approveScript)
	// The user's own file allows the call; it lives where os.UserConfigDir
	// points, through the environment the CLI is given.
	write(t, filepath.Join(home, ".config", "retrace", "retrace.yaml"), "permissions:\n  allow: [\"Bash(touch:*)\"]\n")
	env := map[string]string{"HOME": home}

	code, _, stderr := runCLI(t, env, "run", "--script", script, "--workspace", ws, "--runs", t.TempDir(), "--headless", "Plant")
	if code != ExitOK || !exists(filepath.Join(ws, "approved-marker")) {
		t.Fatalf("the user's allow rule did not apply: exit %d\n%s", code, stderr)
	}
	os.Remove(filepath.Join(ws, "approved-marker"))

	// XDG_CONFIG_HOME wins over HOME.
	xdg := filepath.Join(root, "xdg")
	write(t, filepath.Join(xdg, "retrace", "retrace.yaml"), "permissions:\n  mode: plan\n")
	env["XDG_CONFIG_HOME"] = xdg
	code, _, stderr = runCLI(t, env, "run", "--script", script, "--workspace", ws, "--runs", t.TempDir(), "--headless", "Plant")
	if exists(filepath.Join(ws, "approved-marker")) || !strings.Contains(stderr, "permission_denied") {
		t.Fatalf("the XDG file's plan mode did not apply: exit %d\n%s", code, stderr)
	}
	delete(env, "XDG_CONFIG_HOME")

	// A workspace deny rule restricts the user's allow rule.
	write(t, filepath.Join(ws, "retrace.yaml"), "permissions:\n  deny: [\"Bash(touch:*)\"]\n")
	code, _, stderr = runCLI(t, env, "run", "--script", script, "--workspace", ws, "--runs", t.TempDir(), "--headless", "Plant")
	if exists(filepath.Join(ws, "approved-marker")) || !strings.Contains(stderr, "permission_denied") {
		t.Fatalf("the workspace's deny rule did not restrict: exit %d\n%s", code, stderr)
	}
}
