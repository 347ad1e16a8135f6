package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// realClient is an agent CLI driven through `retrace mock serve`: how it
// runs offline against the mock, where it keeps its own transcript, and
// the cases it is driven through.
type realClient struct {
	name, bin string
	// command runs the client in the workspace with the prompt and extra
	// arguments; $MOCK is the mock's URL.
	command func(prompt, args string) string
	// format and transcript are the client's transcript format for
	// `retrace import` and its directory under the run's HOME.
	format, transcript string
	// ownCalls counts, per tool, the calls in the client's own JSON-lines
	// output, for the recording to be checked against what the client
	// says it ran as well as against the script.
	ownCalls func(line map[string]any, counts map[string]int)
	cases    []clientCase
}

// clientCase is one session of a real client through the mock.
type clientCase struct {
	name string
	// script is the mock's script; $WS stands for the workspace.
	script string
	prompt string
	// args are added to the client's command line.
	args string
	// want are counts the recording must have exactly: "call:TOOL" (tool
	// calls of a tool, over all sessions), "success", "failure:KIND",
	// "permission_deny", "model_error", "sessions" and "linked" (sessions whose
	// session_start names a parent session of the recording and the
	// parent's tool_use).
	want map[string]int
	// failedAttempts is how many requests the mock answered with an
	// error status (the script's injected faults); every other must get
	// 200.
	failedAttempts int
	// wantTranscript are counts (as in want) the client's own transcript,
	// imported, must have: what only the client knows, such as why a
	// call failed when its tool_result does not say.
	wantTranscript map[string]int
	// notRun says a call of the case never ran as a command, so the
	// client's output, which lists the commands it ran, does not show it.
	notRun bool
}

// claudeRead and friends are the scripts' tool_use blocks of Claude Code.
const claudeReadBash = `model: claude-sonnet-4-5
turns:
  - content:
      - text: "I'll read it."
      - tool_use: {id: toolu_read_1, name: Read, input: {file_path: $WS/README.md}}
  - expect: {tool_results: [{tool_use_id: toolu_read_1, is_error: false}]}
    content:
      - tool_use: {id: toolu_bash_1, name: Bash, input: {command: ls, description: List files}}
  - expect: {tool_results: [{tool_use_id: toolu_bash_1, is_error: false}]}
    content: [{text: Done.}]
`

var realClients = []realClient{
	{
		name: "Claude Code", bin: "claude", format: "claude-code", transcript: ".claude/projects",
		command: func(prompt, args string) string {
			return `ANTHROPIC_BASE_URL=$MOCK ANTHROPIC_API_KEY=sk-ant-offline-test claude -p "` + prompt + `" ` +
				`--output-format stream-json --verbose ` + args
		},
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
		cases: []clientCase{
			{name: "a read and a bash call", script: claudeReadBash, prompt: "Read README.md, then run ls",
				args: `--allowedTools "Read,Bash(ls:*),Bash(ls)"`,
				want: map[string]int{"call:Read": 1, "call:Bash": 1, "success": 2, "model_error": 0, "sessions": 1}},
			{name: "parallel calls", prompt: "Read README.md and run ls at once",
				args: `--allowedTools "Read,Bash(ls:*),Bash(ls)"`,
				script: `model: claude-sonnet-4-5
turns:
  - content:
      - text: "Both at once."
      - tool_use: {id: toolu_read_1, name: Read, input: {file_path: $WS/README.md}}
      - tool_use: {id: toolu_bash_1, name: Bash, input: {command: ls, description: List files}}
  - expect: {tool_results: [{tool_use_id: toolu_read_1, is_error: false}, {tool_use_id: toolu_bash_1, is_error: false}]}
    content: [{text: Done.}]
`, want: map[string]int{"call:Read": 1, "call:Bash": 1, "success": 2, "sessions": 1}},
			{name: "a call its permission rules deny", prompt: "Create made.txt",
				script: `model: claude-sonnet-4-5
turns:
  - content:
      - tool_use: {id: toolu_touch_1, name: Bash, input: {command: touch made.txt, description: Create a file}}
  - expect: {tool_results: [{tool_use_id: toolu_touch_1, is_error: true}]}
    content: [{text: "I was not allowed to."}]
`, want: map[string]int{"call:Bash": 1, "failure:permission_denied": 1, "success": 0, "sessions": 1},
				wantTranscript: map[string]int{"failure:permission_denied": 1, "permission_deny": 1}},
			{name: "a 529 retried", prompt: "Read README.md", failedAttempts: 2,
				script: `model: claude-sonnet-4-5
turns:
  - fault: {status: 529, retry_after: 1s, times: 2}
    content:
      - tool_use: {id: toolu_read_1, name: Read, input: {file_path: $WS/README.md}}
  - expect: {tool_results: [{tool_use_id: toolu_read_1, is_error: false}]}
    content: [{text: Done.}]
`, want: map[string]int{"call:Read": 1, "success": 1, "model_error": 2, "sessions": 1}},
			{name: "a subagent", prompt: "Have an agent read README.md",
				script: `model: claude-sonnet-4-5
conversations:
  - name: sub
    match: {first_user_contains: "Read README.md and say what it holds"}
    turns:
      - content:
          - tool_use: {id: toolu_sub_1, name: Read, input: {file_path: $WS/README.md}}
      - expect: {tool_results: [{tool_use_id: toolu_sub_1, is_error: false}]}
        content: [{text: "It holds hello."}]
  - name: main
    match: {first_user_contains: "Have an agent read README.md"}
    turns:
      - content:
          - tool_use: {id: toolu_agent_1, name: Agent, input: {subagent_type: general-purpose, description: Read the readme, prompt: "Read README.md and say what it holds", run_in_background: false}}
      - expect: {tool_results: [{tool_use_id: toolu_agent_1}]}
        content: [{text: "README.md holds hello."}]
      - content: [{text: "Done."}]
`, want: map[string]int{"call:Agent": 1, "call:Read": 1, "sessions": 2, "linked": 1},
				wantTranscript: map[string]int{"call:Agent": 1, "call:Read": 1, "sessions": 2, "linked": 1}},
			// A background agent's call is answered at once ("Async agent
			// launched"), so the subagent's first request may come after
			// it: the recording links it by the prompt all the same.
			{name: "a subagent in the background", prompt: "Have a background agent read README.md",
				script: `model: claude-sonnet-4-5
conversations:
  - name: sub
    match: {first_user_contains: "Read README.md in the background and say what it holds"}
    turns:
      - content:
          - tool_use: {id: toolu_sub_1, name: Read, input: {file_path: $WS/README.md}}
      - expect: {tool_results: [{tool_use_id: toolu_sub_1, is_error: false}]}
        content: [{text: "It holds hello."}]
  - name: main
    match: {first_user_contains: "Have a background agent read README.md"}
    turns:
      - content:
          - tool_use: {id: toolu_agent_1, name: Agent, input: {subagent_type: general-purpose, description: Read the readme, prompt: "Read README.md in the background and say what it holds", run_in_background: true}}
      - expect: {tool_results: [{tool_use_id: toolu_agent_1}]}
        content: [{text: "The agent is reading README.md."}]
      - content: [{text: "README.md holds hello."}]
`, want: map[string]int{"call:Agent": 1, "call:Read": 1, "sessions": 2, "linked": 1}},
		},
	},
	{
		name: "Codex", bin: "codex", format: "codex", transcript: ".codex/sessions",
		command: func(prompt, args string) string {
			return `CODEX_HOME=$HOME/.codex OPENAI_API_KEY=sk-offline-test codex exec --skip-git-repo-check -s read-only -m gpt-5.5 ` +
				`-c model_provider=mock -c 'model_providers.mock={name="mock",base_url="'$MOCK'/v1",env_key="OPENAI_API_KEY",wire_api="responses"}' ` +
				args + ` --json "` + prompt + `" </dev/null`
		},
		ownCalls: func(line map[string]any, counts map[string]int) {
			// {"type":"item.completed","item":{"type":"command_execution",...}}
			if item, _ := line["item"].(map[string]any); line["type"] == "item.completed" && item["type"] == "command_execution" {
				counts["exec_command"]++
			}
		},
		cases: []clientCase{
			{name: "a read and a bash call", prompt: "Read README.md, then run ls",
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
`, want: map[string]int{"call:exec_command": 2, "success": 2, "model_error": 0, "sessions": 1}},
			{name: "parallel calls", prompt: "Read README.md and run ls at once",
				script: `model: gpt-5.5
turns:
  - content:
      - tool_use: {id: call_read_1, name: exec_command, input: {cmd: "cat README.md"}}
      - tool_use: {id: call_bash_1, name: exec_command, input: {cmd: ls}}
  - expect: {tool_results: [{tool_use_id: call_read_1}, {tool_use_id: call_bash_1}]}
    content: [{text: Done.}]
`, want: map[string]int{"call:exec_command": 2, "success": 2, "sessions": 1}},
			{name: "a call it refuses to run", prompt: "Remove README.md", notRun: true,
				script: `model: gpt-5.5
turns:
  - content:
      - tool_use: {id: call_rm_1, name: exec_command, input: {cmd: "rm README.md", sandbox_permissions: require_escalated, justification: "remove the readme"}}
  - expect: {tool_results: [{tool_use_id: call_rm_1}]}
    content: [{text: "Could not remove it."}]
`, want: map[string]int{"call:exec_command": 1, "failure:permission_denied": 1, "success": 0, "sessions": 1},
				// Codex answers the refusal in its own words, which the
				// recording and the import read alike; the import adds
				// the denial itself.
				wantTranscript: map[string]int{"call:exec_command": 1, "failure:permission_denied": 1, "permission_deny": 1, "success": 0}},
			{name: "a 429 retried", prompt: "Read README.md", failedAttempts: 1,
				script: `model: gpt-5.5
turns:
  - fault: {status: 429, retry_after: 1s, times: 1}
    content:
      - tool_use: {id: call_read_1, name: exec_command, input: {cmd: "cat README.md"}}
  - expect: {tool_results: [{tool_use_id: call_read_1}]}
    content: [{text: Done.}]
`, want: map[string]int{"call:exec_command": 1, "success": 1, "model_error": 1, "sessions": 1}},
		},
	},
}

// TestRealClientsThroughTheMockOffline drives the real Claude Code and
// Codex CLIs through `retrace mock serve --record`, each in its own
// network namespace with only loopback, so they cannot reach the
// internet: every model call but the injected faults must get a 200 (no
// request the mock refused and the client retried in another form), the
// recording must validate, hold the expected calls, outcomes, failed
// attempts and linked subagent sessions, and count the same calls per
// tool as the client's own transcript (imported with retrace import) and
// its own output.
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
			for _, cc := range c.cases {
				t.Run(cc.name, func(t *testing.T) { driveRealClient(t, c, cc) })
			}
		})
	}
}

func driveRealClient(t *testing.T, c realClient, cc clientCase) {
	run := runRealClient(t, c, cc.script, cc.prompt, cc.args, map[string]string{"README.md": "hello\n"})
	dir, home, rec, mockErr, clientOut := run.dir, run.home, run.rec, run.mockErr, run.clientOut

	calls, failed := 0, 0
	sc := bufio.NewScanner(strings.NewReader(string(mockErr)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[1] != "POST" {
			continue
		}
		calls++
		switch f[3] {
		case "200":
		case "429", "529":
			failed++
		default:
			t.Errorf("the mock did not answer a request of %s with 200 or an injected fault: %s", c.name, sc.Text())
		}
	}
	if failed != cc.failedAttempts {
		t.Errorf("%d requests got an injected error status, want %d:\n%s", failed, cc.failedAttempts, mockErr)
	}
	if calls < 2 {
		t.Fatalf("%d model calls reached the mock, want the turns of the script:\n%s", calls, mockErr)
	}

	if code, stdout, stderr := runCLI(t, nil, "validate", rec); code != ExitOK {
		t.Fatalf("the recording of %s does not validate (exit %d):\n%s%s", c.name, code, stdout, stderr)
	}
	got, wire := recordingCounts(t, rec)
	for k, n := range cc.want {
		if got[k] != n {
			t.Errorf("the recording has %s = %d, want %d (all counts: %v)", k, got[k], n, got)
		}
	}

	// The client's own transcript, imported, must show the same calls.
	imported := filepath.Join(dir, "imported")
	if code, stdout, stderr := runCLI(t, nil, "import", c.format, filepath.Join(home, c.transcript), "--runs", imported); code != ExitOK {
		t.Fatalf("retrace import %s of the client's transcript: exit %d\n%s%s", c.format, code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, nil, "validate", imported); code != ExitOK {
		t.Fatalf("the imported transcript does not validate (exit %d):\n%s%s", code, stdout, stderr)
	}
	tgot, own := recordingCounts(t, imported)
	if fmt.Sprint(own) != fmt.Sprint(wire) {
		t.Errorf("%s's own transcript shows the calls %v, the wire recording %v", c.name, own, wire)
	}
	for k, n := range cc.wantTranscript {
		if tgot[k] != n {
			t.Errorf("the imported transcript has %s = %d, want %d (all counts: %v)", k, tgot[k], n, tgot)
		}
	}
	if cc.notRun {
		return
	}
	said := map[string]int{}
	for _, line := range strings.Split(string(clientOut), "\n") {
		var v map[string]any
		if json.Unmarshal([]byte(line), &v) == nil {
			c.ownCalls(v, said)
		}
	}
	if fmt.Sprint(said) != fmt.Sprint(wire) {
		t.Errorf("%s's own output shows the calls %v, the wire recording %v", c.name, said, wire)
	}
}

// clientRun is one run of a real client through `retrace mock serve
// --record`: its directories and what the mock and the client printed.
type clientRun struct {
	dir, ws, home, rec string
	mockErr, clientOut []byte
}

// runRealClient runs client c once with prompt and args in a workspace
// holding files, in a network namespace of its own with only loopback,
// against the mock serving script ($WS stands for the workspace) and
// recording into rec; the client's own transcript is under home.
func runRealClient(t *testing.T, c realClient, script, prompt, args string, files map[string]string) clientRun {
	t.Helper()
	dir := t.TempDir()
	ws, home, rec := filepath.Join(dir, "ws"), filepath.Join(dir, "home"), filepath.Join(dir, "rec")
	for _, d := range []string{ws, filepath.Join(home, ".codex"), rec} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scriptFile := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(scriptFile, []byte(strings.ReplaceAll(script, "$WS", ws)), 0o644); err != nil {
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
		"RETRACE=" + retrace, "SCRIPT=" + scriptFile, "REC=" + rec, "DIR=" + dir, "WS=" + ws, "CLIENT=" + c.command(prompt, args)}
	out, err := cmd.CombinedOutput()
	mockErr, _ := os.ReadFile(filepath.Join(dir, "mock.err"))
	clientErr, _ := os.ReadFile(filepath.Join(dir, "client.err"))
	clientOut, _ := os.ReadFile(filepath.Join(dir, "client.out"))
	if err != nil {
		t.Fatalf("%s through the mock: %v\n%s\nmock:\n%s\nclient stdout:\n%.4000s\nclient stderr:\n%.4000s", c.name, err, out, mockErr, clientOut, clientErr)
	}
	return clientRun{dir: dir, ws: ws, home: home, rec: rec, mockErr: mockErr, clientOut: clientOut}
}

// recordingCounts reads every trajectory in dir and counts what the
// cases assert on (see clientCase.want), and the tool calls per tool.
func recordingCounts(t *testing.T, dir string) (counts, calls map[string]int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no trajectory in %s (%v)", dir, err)
	}
	sort.Strings(files)
	counts, calls = map[string]int{}, map[string]int{}
	sessions := map[string]map[string]bool{} // session → its tool_use ids
	type link struct{ parent, use string }
	var links []link
	for _, f := range files {
		evs, err := trajectory.ReadFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		uses := map[string]bool{}
		for _, ev := range evs {
			switch p := ev.Payload.(type) {
			case *trajectory.SessionStart:
				counts["sessions"]++
				if p.ParentSession != "" {
					links = append(links, link{p.ParentSession, p.ParentToolUseID})
				}
			case *trajectory.ToolCall:
				counts["call:"+p.Tool]++
				calls[p.Tool]++
				uses[p.ToolUseID] = true
			case *trajectory.ToolSuccess:
				counts["success"]++
			case *trajectory.ToolFailure:
				counts["failure:"+string(p.FailureKind)]++
			case *trajectory.ModelError:
				counts["model_error"]++
			case *trajectory.PermissionDeny:
				counts["permission_deny"]++
			}
		}
		sessions[evs[0].Session] = uses
	}
	for _, l := range links {
		if sessions[l.parent][l.use] {
			counts["linked"]++
		}
	}
	return counts, calls
}
