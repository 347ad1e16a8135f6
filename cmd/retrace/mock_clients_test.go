package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// realClient is an agent CLI driven through `retrace mock serve`: its
// script of a read and a bash call, the command that runs it offline
// against the mock, and the calls its recording's funnel must hold.
type realClient struct {
	name string
	bin  string
	// script is the mock's script; $WS stands for the workspace.
	script string
	// command runs the client in the workspace; $MOCK is the mock's URL.
	command string
	// wantCalls are the funnel's calls per tool.
	wantCalls map[string]int
	// ownCalls counts, per tool, the calls in the client's own JSON-lines
	// output, for the funnel to be checked against what the client says
	// it ran as well as against the script.
	ownCalls func(line map[string]any, counts map[string]int)
}

var realClients = []realClient{
	{
		name: "Claude Code", bin: "claude",
		script: `model: claude-sonnet-4-5
turns:
  - content:
      - text: "I'll read it."
      - tool_use: {id: toolu_read_1, name: Read, input: {file_path: $WS/README.md}}
  - expect: {tool_results: [{tool_use_id: toolu_read_1, is_error: false}]}
    content:
      - tool_use: {id: toolu_bash_1, name: Bash, input: {command: ls, description: List files}}
  - expect: {tool_results: [{tool_use_id: toolu_bash_1, is_error: false}]}
    content: [{text: Done.}]
`,
		command: `ANTHROPIC_BASE_URL=$MOCK ANTHROPIC_API_KEY=sk-ant-offline-test claude -p "Read README.md, then run ls" ` +
			`--output-format stream-json --verbose --allowedTools "Read,Bash(ls:*),Bash(ls)"`,
		wantCalls: map[string]int{"Read": 1, "Bash": 1},
		ownCalls: func(line map[string]any, counts map[string]int) {
			// {"type":"assistant","message":{"content":[{"type":"tool_use","name":...}]}}
			msg, _ := line["message"].(map[string]any)
			blocks, _ := msg["content"].([]any)
			for _, b := range blocks {
				if b, _ := b.(map[string]any); line["type"] == "assistant" && b["type"] == "tool_use" {
					counts[fmt.Sprint(b["name"])]++
				}
			}
		},
	},
	{
		name: "Codex", bin: "codex",
		script: `model: gpt-5.5
turns:
  - content:
      - text: "I'll read it."
      - tool_use: {id: call_read_1, name: exec_command, input: {cmd: "cat README.md"}}
  - expect: {tool_results: [{tool_use_id: call_read_1}]}
    content:
      - tool_use: {id: call_bash_1, name: exec_command, input: {cmd: ls}}
  - expect: {tool_results: [{tool_use_id: call_bash_1}]}
    content: [{text: Done.}]
`,
		command: `CODEX_HOME=$HOME/.codex OPENAI_API_KEY=sk-offline-test codex exec --skip-git-repo-check -s read-only -m gpt-5.5 ` +
			`-c model_provider=mock -c 'model_providers.mock={name="mock",base_url="'$MOCK'/v1",env_key="OPENAI_API_KEY",wire_api="responses"}' ` +
			`--json "Read README.md, then run ls" </dev/null`,
		wantCalls: map[string]int{"exec_command": 2},
		ownCalls: func(line map[string]any, counts map[string]int) {
			// {"type":"item.completed","item":{"type":"command_execution",...}}
			if item, _ := line["item"].(map[string]any); line["type"] == "item.completed" && item["type"] == "command_execution" {
				counts["exec_command"]++
			}
		},
	},
}

// TestRealClientsThroughTheMockOffline drives the real Claude Code and
// Codex CLIs through `retrace mock serve --record`, each in its own
// network namespace with only loopback, so they cannot reach the
// internet: every model call must get a 200 (no request the mock refused
// and the client retried in another form), the recording must validate,
// and its funnel must hold the client's read and bash calls.
func TestRealClientsThroughTheMockOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the real clients take seconds each")
	}
	if out, err := exec.Command("unshare", "-n", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare -n is not permitted here (%v: %s); the real clients run only in a network namespace of their own, never online", err, strings.TrimSpace(string(out)))
	}
	for _, c := range realClients {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.bin); err != nil {
				t.Skipf("%s is not installed (.ci/run installs it with npm): %v", c.bin, err)
			}
			driveRealClient(t, c)
		})
	}
}

func driveRealClient(t *testing.T, c realClient) {
	dir := t.TempDir()
	ws, home, rec := filepath.Join(dir, "ws"), filepath.Join(dir, "home"), filepath.Join(dir, "rec")
	for _, d := range []string{ws, filepath.Join(home, ".codex"), rec} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(script, []byte(strings.ReplaceAll(c.script, "$WS", ws)), 0o644); err != nil {
		t.Fatal(err)
	}
	// This test binary is the retrace command when it runs as "retrace"
	// (TestMain), which spares a build.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	retrace := filepath.Join(dir, "retrace")
	if err := os.Symlink(self, retrace); err != nil {
		t.Fatal(err)
	}
	// Inside the namespace every port is free; the client talks only to
	// the mock on loopback.
	sh := `set -u
ip link set lo up || exit 90
"$RETRACE" mock serve --script "$SCRIPT" --record "$REC" --addr 127.0.0.1:18080 >"$DIR/mock.out" 2>"$DIR/mock.err" &
mock=$!
i=0
until grep -q listening "$DIR/mock.out" 2>/dev/null; do i=$((i+1)); [ $i -gt 200 ] && exit 91; sleep 0.05; done
export MOCK=http://127.0.0.1:18080
cd "$WS"
timeout 240 sh -c "$CLIENT" >"$DIR/client.out" 2>"$DIR/client.err"
rc=$?
kill -INT $mock
wait $mock
exit $rc
`
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "-n", "sh", "-c", sh)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TERM=dumb", "LANG=C.UTF-8",
		"RETRACE=" + retrace, "SCRIPT=" + script, "REC=" + rec, "DIR=" + dir, "WS=" + ws, "CLIENT=" + c.command}
	out, err := cmd.CombinedOutput()
	mockErr, _ := os.ReadFile(filepath.Join(dir, "mock.err"))
	clientErr, _ := os.ReadFile(filepath.Join(dir, "client.err"))
	if err != nil {
		clientOut, _ := os.ReadFile(filepath.Join(dir, "client.out"))
		t.Fatalf("%s through the mock: %v\n%s\nmock:\n%s\nclient stdout:\n%.4000s\nclient stderr:\n%.4000s", c.name, err, out, mockErr, clientOut, clientErr)
	}

	calls := 0
	sc := bufio.NewScanner(strings.NewReader(string(mockErr)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[1] != "POST" {
			continue
		}
		calls++
		if f[3] != "200" {
			t.Errorf("the mock did not answer a request of %s with 200: %s", c.name, sc.Text())
		}
	}
	if calls < 3 {
		t.Fatalf("%d model calls reached the mock, want the 3 turns of the script:\n%s", calls, mockErr)
	}

	if code, stdout, stderr := runCLI(t, nil, "validate", rec); code != ExitOK {
		t.Fatalf("the recording of %s does not validate (exit %d):\n%s%s", c.name, code, stdout, stderr)
	}
	code, stdout, stderr := runCLI(t, nil, "metrics", rec, "--format", "json")
	if code != ExitOK {
		t.Fatalf("metrics on the recording: exit %d: %s", code, stderr)
	}
	var m struct {
		Funnel []struct {
			Tool      string `json:"tool"`
			Calls     int    `json:"calls"`
			Successes int    `json:"successes"`
		} `json:"funnel"`
	}
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("metrics --format json: %v\n%s", err, stdout)
	}
	got := map[string]int{}
	for _, row := range m.Funnel {
		if row.Tool != "(all)" {
			got[row.Tool] = row.Successes
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(c.wantCalls) {
		t.Fatalf("the funnel of %s's recording has successful calls %v, want %v", c.name, got, c.wantCalls)
	}
	clientOut, err := os.ReadFile(filepath.Join(dir, "client.out"))
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]int{}
	for _, line := range strings.Split(string(clientOut), "\n") {
		var v map[string]any
		if json.Unmarshal([]byte(line), &v) == nil {
			c.ownCalls(v, own)
		}
	}
	if fmt.Sprint(own) != fmt.Sprint(got) {
		t.Fatalf("%s's own output shows the calls %v, the recording's funnel %v", c.name, own, got)
	}
}
