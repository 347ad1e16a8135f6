package trajectory

import (
	"encoding/json"
	"fmt"
	"time"
)

// sampleSession builds a valid session of the given number of tool turns,
// each with a parallel batch of two reads and a bash call, using every
// event type at least once. Benchmarks and round-trip tests share it.
func sampleSession(session string, turns int) []Event {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var evs []Event
	add := func(turn int, p Payload) {
		seq := int64(len(evs) + 1)
		evs = append(evs, NewEvent(session, seq, t0.Add(time.Duration(seq)*time.Millisecond), turn, p))
	}
	h := func(s string) string { return Hash([]byte(s)) }
	add(0, &SessionStart{
		HarnessVersion: "retrace/test", Provider: "mock", Model: "scripted", Mode: ModeHeadless,
		PermissionMode: PermDefault, ConfigHash: h("cfg"), SystemPromptHash: h("sys"),
		Tools: []ToolInfo{
			{Name: "read", DefinitionHash: h("read"), Source: ToolBuiltin, ReadOnly: true, Display: DisplayFull},
			{Name: "bash", DefinitionHash: h("bash"), Source: ToolBuiltin, Display: DisplayFull},
		},
		Defenses: []DefenseName{DefenseEmptyInputRetry, DefenseRepeatedReadOnly},
		Limits:   &Limits{MaxTurns: 50}, Workspace: "/tmp/ws", Tags: map[string]string{"scenario": "sample"},
	})
	add(0, &WorkspaceSnapshot{Manifest: BlobRef([]byte("manifest")), Files: 12, Bytes: 48_000, DurationMs: 9.5})
	var hashes []string
	var conv Conversation
	for turn := 1; turn <= turns; turn++ {
		msg := Message{Role: RoleUser, Content: []ContentBlock{{Type: BlockText, Text: fmt.Sprintf("step %d: read the files and run the tests", turn)}}}
		hashes = append(hashes, h(msg.Content[0].Text))
		req := &ModelRequest{RequestBytes: int64(2000 + 300*turn), SystemHash: h("sys"), ToolsHash: h("tools"),
			ToolNames: []string{"read", "bash"}, NewMessages: []Message{msg}}
		conv.Encode(req, hashes)
		add(turn, req)
		ids := []string{fmt.Sprintf("toolu_%03d_a", turn), fmt.Sprintf("toolu_%03d_b", turn), fmt.Sprintf("toolu_%03d_c", turn)}
		add(turn, &ModelResponse{
			Content: []ContentBlock{
				{Type: BlockText, Text: "Reading both files in parallel, then running the tests."},
				{Type: BlockToolUse, ID: ids[0], Name: "read", Input: json.RawMessage(`{"file_path":"a.go"}`)},
				{Type: BlockToolUse, ID: ids[1], Name: "read", Input: json.RawMessage(`{"file_path":"b.go"}`)},
				{Type: BlockToolUse, ID: ids[2], Name: "bash", Input: json.RawMessage(`{"command":"go test ./..."}`)},
			},
			StopReason: StopToolUse, StopReasonRaw: "tool_use",
			Usage:  Usage{InputTokens: 1200, OutputTokens: 90, CacheReadTokens: 800},
			TTFTMs: 120.5, DurationMs: 900,
		})
		for i, id := range ids[:2] {
			add(turn, &ToolCall{ToolRef: ToolRef{ToolUseID: id, Tool: "read"}, Input: json.RawMessage(`{"file_path":"a.go"}`), Index: i, Batch: 0, ConcurrencySafe: true})
			add(turn, &PermissionAllow{PermissionDecision{ToolRef: ToolRef{ToolUseID: id, Tool: "read"}, Source: SourceReadOnly, Step: StepReadOnly}})
		}
		for i, id := range ids[:2] {
			add(turn, &ToolSuccess{ToolRef{ToolUseID: id, Tool: "read"}})
			add(turn, &ToolEnd{ToolRef: ToolRef{ToolUseID: id, Tool: "read"}, DurationMs: float64(3 + 10*i), OutputBytes: 1400})
		}
		bash := ToolRef{ToolUseID: ids[2], Tool: "bash"}
		add(turn, &ToolCall{ToolRef: bash, Input: json.RawMessage(`{"command":"go test ./..."}`), Index: 2, Batch: 1})
		add(turn, &HookRun{ToolRef: bash, Phase: HookPre, Hook: "audit", Outcome: HookContinue, DurationMs: 4})
		add(turn, &PermissionAllow{PermissionDecision{ToolRef: bash, Source: SourceRule, Step: StepAllowRule, Rule: "Bash(go test:*)"}})
		add(turn, &ToolFailure{ToolRef: bash, FailureKind: FailureToolError, ErrorCode: "exit:1"})
		add(turn, &ToolEnd{ToolRef: bash, DurationMs: 1500, OutputBytes: 320})
		for _, id := range ids[:2] {
			add(turn, &ToolResult{ToolRef: ToolRef{ToolUseID: id, Tool: "read"}, Text: "1\tpackage main\n2\t\n3\tfunc main() {}\n", Display: DisplayFull})
		}
		add(turn, &ToolResult{ToolRef: bash, Text: "--- FAIL: TestX (0.00s)\nexit status 1", IsError: true, Display: DisplayFull})
		if turn%5 == 0 {
			add(turn, &Reminder{Kind: "state_refresh", DedupKey: h("git"), Role: RoleUser, Text: "<harness-reminder>git status is clean</harness-reminder>"})
		}
	}
	last := turns + 1
	hashes = append(hashes, h("final"))
	final := &ModelRequest{RequestBytes: 9000, SystemHash: h("sys"), ToolsHash: h("tools"), ToolNames: []string{"read", "bash"},
		NewMessages: []Message{}}
	conv.Encode(final, hashes)
	add(last, final)
	add(last, &ModelError{ErrorKind: ModelOverloaded, StatusCode: 529, Attempt: 1, WillRetry: true, RetryAfterMs: 1000, DurationMs: 40})
	add(last, &ModelResponse{Content: []ContentBlock{{Type: BlockText, Text: "Done."}}, StopReason: StopEndTurn, StopReasonRaw: "end_turn",
		Usage: Usage{InputTokens: 3000, OutputTokens: 10}, DurationMs: 400})
	add(last, &DefenseTrigger{Defense: DefenseRepeatedReadOnly, Action: ActionRemind, Count: 1, Evidence: map[string]string{"repeats": "3"}})
	add(last, &Compaction{Strategy: CompactDrop, MessagesBefore: 40, MessagesAfter: 12, TokensBefore: 150000, TokensAfter: 40000})
	add(last, &MCPServer{Server: "github", State: MCPConnected, Tools: []string{"mcp__github__create_issue"}, Added: []string{"mcp__github__create_issue"}})
	add(last, &SessionEnd{Reason: EndTurn, Turns: last, Usage: Usage{InputTokens: 4200, OutputTokens: 100}, ToolCalls: 3 * turns, ToolFailures: turns, DurationMs: 5000})
	return evs
}
