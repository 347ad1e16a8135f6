package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrace-dev/retrace/recorder"
	"github.com/retrace-dev/retrace/trajectory"
)

// plantedSecret is a fake credential planted in the workspace. body is
// its random part: every 8-byte window of it is searched for, so that a
// piece left by a cut is found as surely as the whole.
type plantedSecret struct {
	name  string
	whole string
	body  string
}

// randomChars returns n characters drawn from alphabet by crypto/rand, so
// that the secrets look real, differ on every run and occur nowhere else.
func randomChars(t *testing.T, alphabet string, n int) string {
	t.Helper()
	b := make([]byte, n)
	for i := range b {
		k, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			t.Fatal(err)
		}
		b[i] = alphabet[k.Int64()]
	}
	return string(b)
}

const (
	alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	keyABC = alnum + "-_"
	b64    = alnum + "+/"
)

// plantSecrets makes one fake secret of each kind the issue names, in the
// shapes the real ones have.
func plantSecrets(t *testing.T) (anthropic, awsID, awsSecret, github, pem, urlPassword plantedSecret) {
	t.Helper()
	ant := randomChars(t, keyABC, 93) + "AA"
	anthropic = plantedSecret{"Anthropic key", "sk-ant-api03-" + ant, ant}
	id := randomChars(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
	awsID = plantedSecret{"AWS access key id", "AKIA" + id, id}
	sec := randomChars(t, b64, 40)
	awsSecret = plantedSecret{"AWS secret access key", sec, sec}
	gh := randomChars(t, alnum, 36)
	github = plantedSecret{"GitHub token", "ghp_" + gh, gh}
	var lines []string
	for range 12 {
		lines = append(lines, randomChars(t, b64, 70))
	}
	body := strings.Join(lines, "\n")
	pem = plantedSecret{"PEM private key", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + body + "\n-----END OPENSSH PRIVATE KEY-----", body}
	pw := randomChars(t, alnum, 24)
	urlPassword = plantedSecret{"password in a URL", "postgres://deploy:" + pw + "@db.internal.example:5432/app", pw}
	return
}

// leaks returns a description of every piece of a secret found in text.
func leaks(where, text string, secrets []plantedSecret) []string {
	var found []string
	for _, s := range secrets {
		if strings.Contains(text, s.whole) {
			found = append(found, fmt.Sprintf("%s: the whole %s", where, s.name))
			continue
		}
		for _, line := range strings.Split(s.body, "\n") {
			for i := 0; i+8 <= len(line); i++ {
				if strings.Contains(text, line[i:i+8]) {
					found = append(found, fmt.Sprintf("%s: %q, a piece of the %s", where, line[i:i+8], s.name))
					break
				}
			}
		}
	}
	return found
}

// A session that reads planted secrets every way the runtime offers — the
// read tool, bash cat, an output large enough to spill with secrets cut by
// the truncation, a secret in a command that is snapshotted and in one
// shown in the transcript, a hook that prints one on stderr, the model
// repeating one — leaves none of them in any file under the runs
// directory, blobs included, or on the terminal.
func TestASessionThatReadsSecretsLeavesNoneOnDiskOrOnTheTerminal(t *testing.T) {
	anthropic, awsID, awsSecret, github, pem, urlPassword := plantSecrets(t)
	secrets := []plantedSecret{anthropic, awsID, awsSecret, github, pem, urlPassword}

	ws, runs, outside := t.TempDir(), t.TempDir(), t.TempDir()
	deploy := "# deployment settings\nanthropic_api_key: " + anthropic.whole +
		"\naws_access_key_id = " + awsID.whole + "\naws_secret_access_key = " + awsSecret.whole +
		"\ngithub_token: " + github.whole + "\ndatabase_url: " + urlPassword.whole + "\nsigning_key: |\n" + pem.whole + "\n"
	plantFile(t, filepath.Join(ws, "config", "deploy.yaml"), deploy)
	plantFile(t, filepath.Join(ws, ".env"), "ANTHROPIC_API_KEY="+anthropic.whole+"\n")
	plantFile(t, filepath.Join(ws, "keys", "id_ed25519"), pem.whole+"\n")
	plantFile(t, filepath.Join(ws, "README.md"), "# service\n")

	// big.log is over bash's 30000-character limit. The model sees the
	// first 21000 characters (70 %) and the last 8800 (30000 − 21000 −
	// 200). The first cut leaves "sk-ant-api03-" and 8 characters of the
	// Anthropic key in the head, too few to be recognised once cut; the
	// second leaves 20 of the GitHub token's 40 in the tail. Every secret
	// is in the omitted middle too.
	const head, tail = 21000, 8800
	filler := func(n int) string {
		line := "2026-11-30T09:00:00Z INFO request served in 12ms path=/v1/items status=200\n"
		return strings.Repeat(line, n/len(line)+1)[:n]
	}
	var big strings.Builder
	big.WriteString(filler(head - 22))
	big.WriteString(" " + anthropic.whole + "\n")
	big.WriteString(filler(4000))
	big.WriteString(deploy)
	big.WriteString(filler(4000))
	big.WriteString(" " + github.whole + "\n")
	tailLen := tail - 20 - len("\n") // the cut leaves 20 of the token's 40 characters in the tail
	big.WriteString(filler(tailLen))
	plantFile(t, filepath.Join(ws, "big.log"), big.String())

	// A hook that fails and prints a secret on its stderr.
	hook := filepath.Join(outside, "lint.sh")
	plantFile(t, hook, "#!/bin/bash\ncat >/dev/null\necho \"lint: cannot use aws_secret_access_key = "+awsSecret.whole+"\" >&2\nexit 1\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(outside, "retrace.yaml")
	plantFile(t, cfg, "permissions:\n  mode: bypass\nhooks:\n  - name: lint\n    event: PreToolUse\n    matcher: bash\n    command: "+hook+"\n")

	// A write whose command is cut at 200 bytes in its snapshot manifest,
	// right through the URL's password; and one whose command is cut at 70
	// characters in the transcript, right through the GitHub token.
	snapCmd := "echo " + strings.Repeat("n", 200-len("echo ")-len("postgres://deploy:")-10-1) + " " + urlPassword.whole + " > notes.txt"
	shownCmd := "echo " + strings.Repeat("t", 70-len("echo ")-len("ghp_")-20-1) + " " + github.whole + " > token.txt"
	// The model repeats the key in its answer, across the transcript's
	// 160-character line.
	answer := strings.Repeat("Summary of the deployment settings. ", 4)[:130-1] + " " + anthropic.whole + " is the key."
	script := filepath.Join(outside, "script.yaml")
	plantFile(t, script, fmt.Sprintf(`model: mock-1
turns:
  - content:
      - text: "Reading the settings."
      - tool_use: {id: toolu_1, name: read, input: {file_path: config/deploy.yaml}}
      - tool_use: {id: toolu_2, name: bash, input: {command: "cat config/deploy.yaml"}}
      - tool_use: {id: toolu_3, name: bash, input: {command: "cat big.log"}}
      - tool_use: {id: toolu_4, name: read, input: {file_path: .env}}
      - tool_use: {id: toolu_5, name: bash, input: {command: "cat .env keys/id_ed25519"}}
  - content:
      - tool_use: {id: toolu_6, name: bash, input: {command: %q}}
      - tool_use: {id: toolu_7, name: bash, input: {command: %q}}
  - content:
      - text: %q
`, snapCmd, shownCmd, answer))

	code, stdout, stderr := runCLI(t, nil, "run", "--script", script, "--config", cfg, "--workspace", ws, "--runs", runs, "--headless", "Check the deployment settings")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}

	// Nothing under the runs directory — trajectory, spills, snapshots,
	// manifests, whatever else is there — holds a piece of a secret.
	var files []string
	err := filepath.WalkDir(runs, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, p)
		for _, l := range leaks(p, string(data), secrets) {
			t.Error(l)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leaks("stdout", stdout, secrets) {
		t.Error(l)
	}
	for _, l := range leaks("the live transcript", stderr, secrets) {
		t.Error(l)
	}

	// The session did what the test relies on: otherwise the absence of
	// secrets would prove nothing.
	trajFiles, err := trajectory.Expand(runs)
	if err != nil || len(trajFiles) != 1 {
		t.Fatalf("trajectories %v (%v)", trajFiles, err)
	}
	if len(files) < 5 {
		t.Fatalf("only %d files under the runs directory: %v", len(files), files)
	}
	evs := readEvents(t, trajFiles[0])
	var spilled, snapshotted bool
	var hookRun *trajectory.HookRun
	var snapshot *trajectory.WorkspaceSnapshot
	for _, ev := range evs {
		switch p := ev.Payload.(type) {
		case *trajectory.WorkspaceSnapshot:
			snapshot = p
		case *trajectory.ToolEnd:
			spilled = spilled || (p.ToolUseID == "toolu_3" && p.Truncated && p.Spill != "")
			snapshotted = snapshotted || (p.ToolUseID == "toolu_6" && p.Snapshot != "")
		case *trajectory.HookRun:
			hookRun = p
		}
	}
	if !spilled || !snapshotted {
		t.Errorf("cat big.log spilled: %v; the write was snapshotted: %v; want both", spilled, snapshotted)
	}
	if hookRun == nil || hookRun.ExitCode == nil || *hookRun.ExitCode != 1 || !strings.Contains(hookRun.Stderr, "lint: cannot use aws_secret_access_key = [REDACTED:aws_secret]") {
		t.Errorf("hook_run %+v; want exit_code 1 and the redacted stderr", hookRun)
	}
	traj, _ := os.ReadFile(trajFiles[0])
	for _, marker := range []string{"[REDACTED:anthropic]", "[REDACTED:aws_access_key]", "[REDACTED:aws_secret]", "[REDACTED:github]", "[REDACTED:private_key]", "[REDACTED:url_password]"} {
		if !strings.Contains(string(traj), marker) {
			t.Errorf("the trajectory has no %s: the secret was not read, or not recognised", marker)
		}
	}
	for _, want := range []string{"⏺ read config/deploy.yaml · ok", "⏺ bash cat big.log · ok", "truncated, full output saved", "[REDACTED:"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the live transcript lacks %q:\n%s", want, stderr)
		}
	}
	if snapshot == nil || snapshot.Manifest == "" {
		t.Fatal("no workspace snapshot")
	}
	blobs := recorder.OpenBlobs(recorder.BlobsDir(trajFiles[0]))
	m := snapshotEntries(t, blobs, snapshot.Manifest)
	for _, p := range []string{".env", "keys/id_ed25519", "config/deploy.yaml", "big.log"} {
		if e, ok := m[p]; !ok || e.Skipped != recorder.SkippedSecret || e.Reason == "" || e.Blob != "" {
			t.Errorf("snapshot entry %s = %+v; want it skipped as a secret, with a reason", p, e)
		}
	}
	if e := m["README.md"]; e.Blob == "" {
		t.Errorf("README.md was not stored: %+v", e)
	}

	// Private to the user: 0600 files in 0700 directories.
	wantPrivate(t, trajFiles[0], 0o600)
	wantPrivate(t, blobs.Dir(), 0o700)
	entries, _ := os.ReadDir(blobs.Dir())
	for _, e := range entries {
		wantPrivate(t, filepath.Join(blobs.Dir(), e.Name()), 0o600)
	}
}

func plantFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func snapshotEntries(t *testing.T, blobs *recorder.Blobs, ref string) map[string]recorder.ManifestEntry {
	t.Helper()
	data, err := blobs.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	var m recorder.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]recorder.ManifestEntry{}
	for _, e := range m.Entries {
		out[e.Path] = e
	}
	return out
}

func wantPrivate(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	if got := info.Mode().Perm(); got != want {
		t.Errorf("%s has mode %v, want %v", path, got, want)
	}
}

func TestTheLiveTranscriptRedactsBeforeItShortensALine(t *testing.T) {
	anthropic, _, _, github, _, _ := plantSecrets(t)
	var out strings.Builder
	live := newLiveTranscript(&out, recorder.New(io.Discard, recorder.Options{}))
	ref := trajectory.ToolRef{ToolUseID: "toolu_1", Tool: "bash"}
	// The model's text is cut at 160 characters and a tool input at 70:
	// both cuts fall inside a secret and leave too little of it to be
	// recognised (9 characters of the key's random part, 15 of the
	// token's).
	text := strings.Repeat("a", 136) + " " + anthropic.whole
	input, _ := json.Marshal(map[string]string{"command": "echo " + strings.Repeat("b", 50) + " " + github.whole})
	live.Emit(1, &trajectory.ModelResponse{Content: []trajectory.ContentBlock{{Type: trajectory.BlockText, Text: text}}, StopReason: trajectory.StopToolUse})
	live.Emit(1, &trajectory.ToolCall{ToolRef: ref, Input: input})
	live.Emit(1, &trajectory.ToolEnd{ToolRef: ref, DurationMs: 1})
	live.Emit(1, &trajectory.ToolResult{ToolRef: ref, Text: "done", Display: trajectory.DisplayFull})
	got := out.String()
	for _, l := range leaks("the transcript", got, []plantedSecret{anthropic, github}) {
		t.Error(l)
	}
	if strings.Count(got, "[REDACTED:") != 2 {
		t.Errorf("want two redaction markers:\n%s", got)
	}
}
