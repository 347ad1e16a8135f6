package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/retrace-dev/retrace/trajectory"
)

// hangLimit is how long a test waits before declaring Pre or Post hung. It
// is a hang detector, not a speed assertion: the hooks it guards would run
// for ten minutes if nothing killed them.
const hangLimit = 60 * time.Second

// script writes a bash script into dir and returns the command that runs it.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name+".sh")
	if err := os.WriteFile(path, []byte("#!/bin/bash\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// pre is a PreToolUse config for a script body, matching every tool.
func pre(t *testing.T, dir, name, body string) Config {
	return Config{Name: name, Event: EventPreToolUse, Command: script(t, dir, name, body)}
}

func post(t *testing.T, dir, name, body string) Config {
	return Config{Name: name, Event: EventPostToolUse, Command: script(t, dir, name, body)}
}

func newRunner(t *testing.T, workspace string, cfgs ...Config) *Runner {
	t.Helper()
	r, err := New(cfgs, workspace)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runPre calls Pre and fails the test if it does not return.
func runPre(t *testing.T, r *Runner, ctx context.Context, call Call) PreResult {
	t.Helper()
	done := make(chan PreResult, 1)
	go func() { done <- r.Pre(ctx, call) }()
	select {
	case res := <-done:
		return res
	case <-time.After(hangLimit):
		t.Fatalf("Pre did not return within %v", hangLimit)
		return PreResult{}
	}
}

func outcomes(runs []Run) []trajectory.HookOutcome {
	var out []trajectory.HookOutcome
	for _, r := range runs {
		out = append(out, r.Outcome)
	}
	return out
}

func sameOutcomes(a, b []trajectory.HookOutcome) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

var bashCall = Call{
	SessionID: "s-1",
	ToolUseID: "toolu_1",
	Tool:      "bash",
	Input:     json.RawMessage(`{"command":"ls -la","timeout":5}`),
}

func TestPreInterpretsOneHooksAnswer(t *testing.T) {
	tests := []struct {
		name string
		body string
		// timeout, if set, is the hook's timeout.
		timeout      time.Duration
		outcome      trajectory.HookOutcome
		blocked      bool
		reason       string // a fragment of PreResult.Reason
		input        string // exact bytes of PreResult.Input
		inputChanged bool
		decision     string
		decisionWhy  string
	}{
		{
			name:    "A hook that exits 0 and prints nothing lets the call continue unchanged.",
			body:    "cat >/dev/null",
			outcome: trajectory.HookContinue,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "A hook that prints only whitespace lets the call continue.",
			body:    "printf '  \\n\\n'",
			outcome: trajectory.HookContinue,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "A hook that answers decision block blocks the call with its reason.",
			body:    `echo '{"decision":"block","reason":"listing is not allowed here"}'`,
			outcome: trajectory.HookBlock,
			blocked: true,
			reason:  `hook "h" blocked this call: listing is not allowed here`,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "A hook that exits 2 blocks the call with its stderr as the reason, ignoring stdout.",
			body:    `echo '{"decision":"approve"}'; echo 'use the read tool instead' >&2; exit 2`,
			outcome: trajectory.HookBlock,
			blocked: true,
			reason:  "use the read tool instead",
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "A hook that exits 2 with empty stderr blocks with a reason telling the model what to do next.",
			body:    "exit 2",
			outcome: trajectory.HookBlock,
			blocked: true,
			reason:  "Do not retry the same call",
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:         "A hook whose updatedInput differs changes the input and is recorded as modified.",
			body:         `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":"ls", "timeout":5}}}'`,
			outcome:      trajectory.HookModified,
			input:        `{"command":"ls","timeout":5}`,
			inputChanged: true,
		},
		{
			name:    "A hook that re-serialises the same input with other key order, spacing and number spelling has not changed it.",
			body:    `echo '{"hookSpecificOutput":{"updatedInput":{ "timeout" : 5.0 ,  "command" : "ls -la" }}}'`,
			outcome: trajectory.HookContinue,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "An updatedInput that is not a JSON object is an error and the input stays as it was.",
			body:    `echo '{"hookSpecificOutput":{"updatedInput":["ls"]}}'`,
			outcome: trajectory.HookError,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "An updatedInput of null means no rewrite.",
			body:    `echo '{"hookSpecificOutput":{"updatedInput":null}}'`,
			outcome: trajectory.HookContinue,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:        "A permissionDecision allow goes to the permission chain with its reason, without blocking.",
			body:        `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"ls is harmless"}}'`,
			outcome:     trajectory.HookContinue,
			input:       `{"command":"ls -la","timeout":5}`,
			decision:    "allow",
			decisionWhy: "ls is harmless",
		},
		{
			name:        "A permissionDecision ask goes to the permission chain.",
			body:        `echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check with the user"}}'`,
			outcome:     trajectory.HookContinue,
			input:       `{"command":"ls -la","timeout":5}`,
			decision:    "ask",
			decisionWhy: "check with the user",
		},
		{
			name:        "A permissionDecision deny goes to the permission chain and is not itself a block.",
			body:        `echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"no listing"}}'`,
			outcome:     trajectory.HookContinue,
			input:       `{"command":"ls -la","timeout":5}`,
			decision:    "deny",
			decisionWhy: "no listing",
		},
		{
			name:        "The older top-level decision approve is read as a permission allow.",
			body:        `echo '{"decision":"approve","reason":"trusted"}'`,
			outcome:     trajectory.HookContinue,
			input:       `{"command":"ls -la","timeout":5}`,
			decision:    "allow",
			decisionWhy: "trusted",
		},
		{
			name:    "An unknown permissionDecision is an error and gives no decision.",
			body:    `echo '{"hookSpecificOutput":{"permissionDecision":"maybe"}}'`,
			outcome: trajectory.HookError,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "An unknown top-level decision is an error and does not block.",
			body:    `echo '{"decision":"stop","reason":"x"}'`,
			outcome: trajectory.HookError,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "Garbage on stdout is an error and the call proceeds.",
			body:    "echo 'Formatted 3 files'",
			outcome: trajectory.HookError,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "A JSON object followed by more text is an error, not a half-read answer.",
			body:    `echo '{"decision":"block","reason":"x"} trailing'`,
			outcome: trajectory.HookError,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "An exit code other than 0 and 2 is an error and the call proceeds, whatever stdout says.",
			body:    `echo '{"decision":"block","reason":"x"}'; exit 1`,
			outcome: trajectory.HookError,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "A hook killed by a signal is an error and the call proceeds.",
			body:    `kill -SEGV $$`,
			outcome: trajectory.HookError,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "A command that does not exist is an error and the call proceeds.",
			body:    `/no/such/hook-binary`,
			outcome: trajectory.HookError,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "Stdout beyond MaxStdout is an error, even when what was kept would parse.",
			body:    fmt.Sprintf("head -c %d /dev/zero | tr '\\0' ' '", MaxStdout+10),
			outcome: trajectory.HookError,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "A hook that hangs is killed at its timeout and the call proceeds.",
			body:    "sleep 600",
			timeout: 200 * time.Millisecond,
			outcome: trajectory.HookTimeout,
			input:   `{"command":"ls -la","timeout":5}`,
		},
		{
			name:    "A hook that hangs in a child process is killed with its whole group.",
			body:    "sleep 600 | cat",
			timeout: 200 * time.Millisecond,
			outcome: trajectory.HookTimeout,
			input:   `{"command":"ls -la","timeout":5}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := pre(t, dir, "h", tt.body)
			cfg.Timeout = tt.timeout
			res := runPre(t, newRunner(t, dir, cfg), context.Background(), bashCall)

			if len(res.Runs) != 1 {
				t.Fatalf("Runs = %+v, want exactly one run", res.Runs)
			}
			run := res.Runs[0]
			if run.Outcome != tt.outcome {
				t.Errorf("outcome = %q, want %q", run.Outcome, tt.outcome)
			}
			if run.Hook != "h" || run.Phase != trajectory.HookPre {
				t.Errorf("run = %+v, want hook h in phase pre", run)
			}
			if run.Duration <= 0 {
				t.Errorf("run duration = %v, want the hook's own positive duration", run.Duration)
			}
			if res.Blocked != tt.blocked {
				t.Errorf("Blocked = %v, want %v (reason %q)", res.Blocked, tt.blocked, res.Reason)
			}
			if tt.reason != "" && !strings.Contains(res.Reason, tt.reason) {
				t.Errorf("Reason = %q, want it to contain %q", res.Reason, tt.reason)
			}
			if !tt.blocked && res.Reason != "" {
				t.Errorf("Reason = %q on a call that was not blocked", res.Reason)
			}
			if string(res.Input) != tt.input {
				t.Errorf("Input = %s, want %s", res.Input, tt.input)
			}
			if res.InputChanged != tt.inputChanged || run.InputChanged != tt.inputChanged {
				t.Errorf("InputChanged = %v (run %v), want %v", res.InputChanged, run.InputChanged, tt.inputChanged)
			}
			if res.Decision != tt.decision || res.DecisionReason != tt.decisionWhy {
				t.Errorf("Decision = %q %q, want %q %q", res.Decision, res.DecisionReason, tt.decision, tt.decisionWhy)
			}
		})
	}
}

func TestPreCombinesSeveralHooks(t *testing.T) {
	tests := []struct {
		name string
		// bodies are PreToolUse hooks in config order; each also appends
		// its name to the file "log" in the workspace.
		bodies       []string
		outcomes     []trajectory.HookOutcome
		log          string
		blocked      bool
		input        string
		inputChanged bool
		decision     string
		decisionWhy  string
	}{
		{
			name: "Hooks run in config order and the first block stops the chain.",
			bodies: []string{
				"",
				`echo '{"decision":"block","reason":"stop"}'`,
				`echo '{"decision":"block","reason":"never seen"}'`,
			},
			outcomes: []trajectory.HookOutcome{trajectory.HookContinue, trajectory.HookBlock},
			log:      "h0\nh1\n",
			blocked:  true,
			input:    `{"command":"ls -la","timeout":5}`,
		},
		{
			name: "A failing hook does not stop the chain: the next hook still runs.",
			bodies: []string{
				"exit 7",
				`echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"second"}}'`,
			},
			outcomes:    []trajectory.HookOutcome{trajectory.HookError, trajectory.HookContinue},
			log:         "h0\nh1\n",
			input:       `{"command":"ls -la","timeout":5}`,
			decision:    "ask",
			decisionWhy: "second",
		},
		{
			name: "The strictest permission decision wins, deny over ask over allow, with the deciding hook's reason.",
			bodies: []string{
				`echo '{"hookSpecificOutput":{"permissionDecision":"allow","permissionDecisionReason":"a"}}'`,
				`echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"d"}}'`,
				`echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"q"}}'`,
			},
			outcomes:    []trajectory.HookOutcome{trajectory.HookContinue, trajectory.HookContinue, trajectory.HookContinue},
			log:         "h0\nh1\nh2\n",
			input:       `{"command":"ls -la","timeout":5}`,
			decision:    "deny",
			decisionWhy: "d",
		},
		{
			name: "Ask beats an earlier allow, and a later allow does not weaken it.",
			bodies: []string{
				`echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`,
				`echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"q"}}'`,
				`echo '{"hookSpecificOutput":{"permissionDecision":"allow","permissionDecisionReason":"late"}}'`,
			},
			outcomes:    []trajectory.HookOutcome{trajectory.HookContinue, trajectory.HookContinue, trajectory.HookContinue},
			log:         "h0\nh1\nh2\n",
			input:       `{"command":"ls -la","timeout":5}`,
			decision:    "ask",
			decisionWhy: "q",
		},
		{
			name: "Two hooks that change a field and change it back leave the call's input unchanged overall.",
			bodies: []string{
				`echo '{"hookSpecificOutput":{"updatedInput":{"command":"pwd","timeout":5}}}'`,
				`echo '{"hookSpecificOutput":{"updatedInput":{"timeout":5,"command":"ls -la"}}}'`,
			},
			outcomes: []trajectory.HookOutcome{trajectory.HookModified, trajectory.HookModified},
			log:      "h0\nh1\n",
			input:    `{"timeout":5,"command":"ls -la"}`,
		},
		{
			name: "A block after a rewrite still blocks, and the rewrite is reported.",
			bodies: []string{
				`echo '{"hookSpecificOutput":{"updatedInput":{"command":"pwd"}}}'`,
				"exit 2",
			},
			outcomes:     []trajectory.HookOutcome{trajectory.HookModified, trajectory.HookBlock},
			log:          "h0\nh1\n",
			blocked:      true,
			input:        `{"command":"pwd"}`,
			inputChanged: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var cfgs []Config
			for i, body := range tt.bodies {
				name := fmt.Sprintf("h%d", i)
				cfgs = append(cfgs, pre(t, dir, name, fmt.Sprintf("echo %s >> log\n%s", name, body)))
			}
			res := runPre(t, newRunner(t, dir, cfgs...), context.Background(), bashCall)

			if got := outcomes(res.Runs); !sameOutcomes(got, tt.outcomes) {
				t.Errorf("outcomes = %v, want %v", got, tt.outcomes)
			}
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			if string(log) != tt.log {
				t.Errorf("hooks ran %q, want %q", log, tt.log)
			}
			if res.Blocked != tt.blocked {
				t.Errorf("Blocked = %v, want %v", res.Blocked, tt.blocked)
			}
			if string(res.Input) != tt.input || res.InputChanged != tt.inputChanged {
				t.Errorf("Input = %s changed=%v, want %s changed=%v", res.Input, res.InputChanged, tt.input, tt.inputChanged)
			}
			if res.Decision != tt.decision || res.DecisionReason != tt.decisionWhy {
				t.Errorf("Decision = %q %q, want %q %q", res.Decision, res.DecisionReason, tt.decision, tt.decisionWhy)
			}
		})
	}
}

func TestPreFeedsUpdatedInputToTheNextHook(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, dir,
		pre(t, dir, "rewrite", `echo '{"hookSpecificOutput":{"updatedInput":{"command":"ls"}}}'`),
		pre(t, dir, "record", "cat > seen.json"),
	)
	res := runPre(t, r, context.Background(), bashCall)
	if !res.InputChanged || string(res.Input) != `{"command":"ls"}` {
		t.Fatalf("Input = %s changed=%v, want the rewrite", res.Input, res.InputChanged)
	}
	var seen struct {
		ToolInput json.RawMessage `json:"tool_input"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "seen.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &seen); err != nil {
		t.Fatal(err)
	}
	if string(seen.ToolInput) != `{"command":"ls"}` {
		t.Fatalf("the second hook saw tool_input %s, want the first hook's rewrite", seen.ToolInput)
	}
	if got := outcomes(res.Runs); !sameOutcomes(got, []trajectory.HookOutcome{trajectory.HookModified, trajectory.HookContinue}) {
		t.Fatalf("outcomes = %v", got)
	}
	if res.Runs[1].InputChanged {
		t.Fatalf("the recording hook changed nothing but its run says InputChanged")
	}
}

func TestPreSendsTheProtocolOnStdinAndInTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, dir, pre(t, dir, "record", "cat > stdin.json; env | grep -E '^(RETRACE|CLAUDE)_' | sort > env.txt; pwd > pwd.txt"))
	runPre(t, r, context.Background(), bashCall)

	data, err := os.ReadFile(filepath.Join(dir, "stdin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("stdin %s is not JSON: %v", data, err)
	}
	want := map[string]any{
		"session_id":      "s-1",
		"cwd":             dir,
		"hook_event_name": "PreToolUse",
		"tool_name":       "bash",
		"tool_input":      map[string]any{"command": "ls -la", "timeout": 5.0},
		"tool_use_id":     "toolu_1",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stdin = %v\nwant    %v", got, want)
	}

	env, _ := os.ReadFile(filepath.Join(dir, "env.txt"))
	wantEnv := fmt.Sprintf("CLAUDE_PROJECT_DIR=%s\nRETRACE_PROJECT_DIR=%s\nRETRACE_SESSION_ID=s-1\nRETRACE_TOOL_NAME=bash\n", dir, dir)
	if string(env) != wantEnv {
		t.Errorf("environment:\n%s\nwant:\n%s", env, wantEnv)
	}
	pwd, _ := os.ReadFile(filepath.Join(dir, "pwd.txt"))
	if strings.TrimSpace(string(pwd)) != dir {
		t.Errorf("hook ran in %q, want the workspace %q", pwd, dir)
	}
}

func TestPreSendsMalformedInputAsAString(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, dir, pre(t, dir, "record", "cat > stdin.json"))
	call := bashCall
	call.Input = json.RawMessage(`{"command": "ls`)
	res := runPre(t, r, context.Background(), call)
	if string(res.Input) != `{"command": "ls` || res.InputChanged {
		t.Fatalf("Input = %s changed=%v, want the original untouched", res.Input, res.InputChanged)
	}
	var got struct {
		ToolInput string `json:"tool_input"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "stdin.json"))
	if err := json.Unmarshal(data, &got); err != nil || got.ToolInput != `{"command": "ls` {
		t.Fatalf("stdin %s: tool_input = %q, err %v", data, got.ToolInput, err)
	}
}

func TestMatcherSelectsHooksByWholeToolName(t *testing.T) {
	tests := []struct {
		name    string
		matcher string
		tool    string
		runs    bool
	}{
		{"An empty matcher matches every tool.", "", "read", true},
		{"A star matches every tool.", "*", "mcp__github__create_issue", true},
		{"An alternation matches each of its names.", "bash|write", "write", true},
		{"A matcher must match the whole name, not a part of it.", "bash|write", "bash_output", false},
		{"A matcher must match the whole name, not a suffix of it.", "write", "rewrite", false},
		{"A regexp matcher matches a family of tool names.", "mcp__github__.*", "mcp__github__create_issue", true},
		{"A tool the matcher does not name runs no hook.", "bash|write", "read", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := pre(t, dir, "m", "")
			cfg.Matcher = tt.matcher
			call := bashCall
			call.Tool = tt.tool
			res := runPre(t, newRunner(t, dir, cfg), context.Background(), call)
			if got := len(res.Runs) == 1; got != tt.runs {
				t.Fatalf("hook ran = %v, want %v (runs %+v)", got, tt.runs, res.Runs)
			}
		})
	}
}

func TestEachHookFiresExactlyOncePerCall(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, dir,
		pre(t, dir, "a", "echo a >> fired"),
		pre(t, dir, "b", `echo b >> fired; echo '{"hookSpecificOutput":{"updatedInput":{"command":"pwd"}}}'`),
		post(t, dir, "c", "echo c >> fired"),
		pre(t, dir, "d", "echo d >> fired; exit 1"),
	)
	res := runPre(t, r, context.Background(), bashCall)
	if len(res.Runs) != 3 {
		t.Fatalf("Pre recorded %d runs, want 3: %+v", len(res.Runs), res.Runs)
	}
	fired, _ := os.ReadFile(filepath.Join(dir, "fired"))
	if string(fired) != "a\nb\nd\n" {
		t.Fatalf("one Pre call fired %q, want each PreToolUse hook exactly once: %q", fired, "a\nb\nd\n")
	}
	r.Post(context.Background(), bashCall, "out", false)
	fired, _ = os.ReadFile(filepath.Join(dir, "fired"))
	if string(fired) != "a\nb\nd\nc\n" {
		t.Fatalf("after one Post call the log is %q, want the PostToolUse hook once more", fired)
	}
}

func TestPreDoesNotWaitForABackgroundChildHoldingStdout(t *testing.T) {
	dir := t.TempDir()
	cfg := pre(t, dir, "bg", `sleep 600 & echo $! > child.pid; echo '{"decision":"block","reason":"held"}'`)
	cfg.Timeout = 2 * time.Second
	res := runPre(t, newRunner(t, dir, cfg), context.Background(), bashCall)

	if got := outcomes(res.Runs); !sameOutcomes(got, []trajectory.HookOutcome{trajectory.HookBlock}) {
		t.Fatalf("outcomes = %v, want the answer the hook printed before exiting", got)
	}
	if !strings.Contains(res.Reason, "held") {
		t.Fatalf("Reason = %q", res.Reason)
	}
	data, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
}

func TestATimedOutHookLeavesNoProcessBehind(t *testing.T) {
	dir := t.TempDir()
	cfg := pre(t, dir, "slow", `sleep 600 & echo $! > child.pid; wait`)
	cfg.Timeout = 300 * time.Millisecond
	res := runPre(t, newRunner(t, dir, cfg), context.Background(), bashCall)
	if got := outcomes(res.Runs); !sameOutcomes(got, []trajectory.HookOutcome{trajectory.HookTimeout}) {
		t.Fatalf("outcomes = %v, want timeout", got)
	}
	if res.Blocked {
		t.Fatalf("a timed-out hook blocked the call")
	}
	data, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	waitGone(t, pid)
}

// waitGone fails the test unless process pid ends (or is a zombie waiting
// for a reaper that is not ours) within hangLimit.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("process %d started by the hook is still running", pid)
}

func TestPreWithACancelledContextRunsNoHook(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, dir, pre(t, dir, "a", "echo a >> fired"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := runPre(t, r, ctx, bashCall)
	if len(res.Runs) != 0 || res.Blocked || string(res.Input) != string(bashCall.Input) {
		t.Fatalf("Pre on a cancelled context = %+v, want no runs and the call untouched", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "fired")); err == nil {
		t.Fatal("the hook ran on a cancelled context")
	}
}

func TestPreAbortedMidHookIsAnErrorNotATimeout(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, dir, pre(t, dir, "slow", "touch started; sleep 600"), pre(t, dir, "next", "echo next >> fired"))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res := runPre(t, r, ctx, bashCall)
	if got := outcomes(res.Runs); !sameOutcomes(got, []trajectory.HookOutcome{trajectory.HookError}) {
		t.Fatalf("outcomes = %v, want one error run and no further hook", got)
	}
}

func TestANilRunnerRunsNothing(t *testing.T) {
	var r *Runner
	res := r.Pre(context.Background(), bashCall)
	if len(res.Runs) != 0 || string(res.Input) != string(bashCall.Input) || res.Blocked {
		t.Fatalf("nil Runner Pre = %+v", res)
	}
	if p := r.Post(context.Background(), bashCall, "x", false); len(p.Runs) != 0 || p.Context != "" {
		t.Fatalf("nil Runner Post = %+v", p)
	}
}

func TestPostTurnsHookAnswersIntoContextForTheModel(t *testing.T) {
	tests := []struct {
		name     string
		bodies   []string
		outcomes []trajectory.HookOutcome
		context  string
	}{
		{
			name:     "A post hook that prints nothing adds no context.",
			bodies:   []string{"cat > /dev/null"},
			outcomes: []trajectory.HookOutcome{trajectory.HookContinue},
		},
		{
			name:     "additionalContext becomes context for the model.",
			bodies:   []string{`echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"3 tests now fail"}}'`},
			outcomes: []trajectory.HookOutcome{trajectory.HookContinue},
			context:  "3 tests now fail",
		},
		{
			name:     "A decision block becomes feedback for the model, attributed to the hook.",
			bodies:   []string{`echo '{"decision":"block","reason":"run gofmt on it"}'`},
			outcomes: []trajectory.HookOutcome{trajectory.HookBlock},
			context:  `The PostToolUse hook "h0" reports: run gofmt on it`,
		},
		{
			name:     "Exit 2 makes stderr feedback for the model.",
			bodies:   []string{"echo 'lint: unused variable x' >&2; exit 2"},
			outcomes: []trajectory.HookOutcome{trajectory.HookBlock},
			context:  `The PostToolUse hook "h0" reports: lint: unused variable x`,
		},
		{
			name: "Every matching post hook runs, even after a block, and their texts are joined in order.",
			bodies: []string{
				`echo '{"decision":"block","reason":"first"}'`,
				"echo garbage",
				`echo '{"hookSpecificOutput":{"additionalContext":"third"}}'`,
			},
			outcomes: []trajectory.HookOutcome{trajectory.HookBlock, trajectory.HookError, trajectory.HookContinue},
			context:  "The PostToolUse hook \"h0\" reports: first\n\nthird",
		},
		{
			name:     "A post hook's updatedInput and permissionDecision are ignored: the tool already ran.",
			bodies:   []string{`echo '{"hookSpecificOutput":{"updatedInput":{"a":1},"permissionDecision":"deny"}}'`},
			outcomes: []trajectory.HookOutcome{trajectory.HookContinue},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var cfgs []Config
			for i, body := range tt.bodies {
				cfgs = append(cfgs, post(t, dir, fmt.Sprintf("h%d", i), body))
			}
			res := newRunner(t, dir, cfgs...).Post(context.Background(), bashCall, "total 0", false)
			if got := outcomes(res.Runs); !sameOutcomes(got, tt.outcomes) {
				t.Errorf("outcomes = %v, want %v", got, tt.outcomes)
			}
			for _, run := range res.Runs {
				if run.Phase != trajectory.HookPost || run.InputChanged {
					t.Errorf("run %+v: want phase post and no input change", run)
				}
			}
			if res.Context != tt.context {
				t.Errorf("Context = %q, want %q", res.Context, tt.context)
			}
		})
	}
}

func TestPostSendsTheToolResponse(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, dir, post(t, dir, "record", "cat > stdin.json"), pre(t, dir, "pre-only", "echo pre >> fired"))
	res := r.Post(context.Background(), bashCall, "exit status 1\nno such file", true)
	if len(res.Runs) != 1 {
		t.Fatalf("Post ran %d hooks, want only the PostToolUse one", len(res.Runs))
	}
	var got struct {
		HookEventName string `json:"hook_event_name"`
		ToolResponse  struct {
			Output  string `json:"output"`
			IsError bool   `json:"is_error"`
		} `json:"tool_response"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "stdin.json"))
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.HookEventName != "PostToolUse" || got.ToolResponse.Output != "exit status 1\nno such file" || !got.ToolResponse.IsError {
		t.Fatalf("post stdin = %s", data)
	}
}

func TestPreIsSafeForConcurrentCalls(t *testing.T) {
	dir := t.TempDir()
	r := newRunner(t, dir, pre(t, dir, "echo-id", `id=$(cat | sed -n 's/.*"tool_use_id":"\([^"]*\)".*/\1/p'); echo "{\"hookSpecificOutput\":{\"updatedInput\":{\"id\":\"$id\"}}}"`))
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			call := bashCall
			call.ToolUseID = fmt.Sprintf("toolu_%d", i)
			res := r.Pre(context.Background(), call)
			if want := fmt.Sprintf(`{"id":"toolu_%d"}`, i); string(res.Input) != want {
				errs <- fmt.Errorf("call %d got input %s, want %s", i, res.Input, want)
				return
			}
			errs <- nil
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func BenchmarkPreOneTrivialHook(b *testing.B) {
	dir := b.TempDir()
	r, err := New([]Config{{Name: "true", Event: EventPreToolUse, Command: "true"}}, dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		res := r.Pre(ctx, bashCall)
		if len(res.Runs) != 1 || res.Runs[0].Outcome != trajectory.HookContinue {
			b.Fatalf("runs = %+v", res.Runs)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/op")
}

func TestPreWithAnInputLargerThanAPipeBuffer(t *testing.T) {
	big := json.RawMessage(fmt.Sprintf(`{"content":%q}`, strings.Repeat("x", 1<<20)))
	tests := []struct {
		name string
		body string
	}{
		{"A hook that never reads its stdin still finishes normally.", "exit 0"},
		{"A hook that exits while a background child holds its unread stdin still finishes.", "sleep 600 <&0 >/dev/null 2>&1 & echo $! > child.pid; exit 0"},
		{"A hook that exits while a background child holds its unread stdin and its stdout still finishes.", "sleep 600 <&0 & echo $! > child.pid; exit 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := pre(t, dir, "h", tt.body)
			cfg.Timeout = 5 * time.Second
			call := bashCall
			call.Input = big
			res := runPre(t, newRunner(t, dir, cfg), context.Background(), call)
			if got := outcomes(res.Runs); !sameOutcomes(got, []trajectory.HookOutcome{trajectory.HookContinue}) {
				t.Fatalf("outcomes = %v, want continue", got)
			}
			if data, err := os.ReadFile(filepath.Join(dir, "child.pid")); err == nil {
				pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
				waitGone(t, pid)
			}
		})
	}
}
