package detectors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/retrace-dev/retrace/trajectory"
)

// Defaults of the detectors' thresholds that are also the runtime's own
// (the liveness table recomputes the defenses' conditions with them).
const (
	// emptyInputRetryCap is the most responses in a row with an
	// empty-input tool_use a capped retry allows: the first and
	// MAX_EMPTY_PARAM_RETRIES (2) retries.
	emptyInputRetryCap = 3
	// denialLoopMin is how many denials of the same call make a loop.
	denialLoopMin = 3
)

// catalog is every detector, in the order --list shows them: protocol and
// integrity first, then the museum, then the tool layer and observability.
var catalog = []Detector{
	// Protocol and integrity.
	&sqlDetector{file: "lost_call.sql", info: Info{
		ID: "lost_call", Severity: SeverityError, Title: "tool call without an outcome or end",
		About: "A tool_call has no tool_success or tool_failure, or no tool_end: the call vanished between " +
			"start and finish (a crash, a swallowed error, a return path that forgot to record). In a " +
			"session that was closed this is a harness bug (error); in one without session_end the " +
			"process died mid-call (warning).",
		NextStep: "Make every path after tool_call end in exactly one tool_success/tool_failure and one tool_end, at the one exit for results (docs/failure-modes.md).",
	}},
	&goDetector{check: unpairedToolUse, reads: []trajectory.EventType{trajectory.TypeModelRequest, trajectory.TypeModelResponse, trajectory.TypeCompaction}, info: Info{
		ID: "unpaired_tool_use", Severity: SeverityError, Title: "tool_use and tool_result do not pair",
		About: "An assistant message's tool_use has no tool_result in the user message that follows it, or a " +
			"tool_result answers no tool_use of the assistant message before it. Providers reject such " +
			"a request, or the model is told about a call it never made.",
		NextStep: "Give every tool_use exactly one tool_result in the next request, through one function that builds results (docs/failure-modes.md).",
	}},
	&goDetector{check: truncatedToolUseExecuted, reads: []trajectory.EventType{trajectory.TypeModelResponse, trajectory.TypeToolCall, trajectory.TypeToolSuccess, trajectory.TypeToolFailure}, info: Info{
		ID: "truncated_tool_use_executed", Severity: SeverityError, Title: "a tool_use cut off by max_tokens ran anyway",
		About: "A model_response stopped at max_tokens holds a tool_use (its input cut off), and a tool_call " +
			"for that tool_use ran to a result: the tool got an input the model never finished.",
		NextStep: "Do not run tool_use blocks of a max_tokens reply; answer them with an error asking for a smaller call (the truncated_tool_use defense; docs/failure-modes.md).",
	}},
	&goDetector{check: stopReasonAsDone, reads: []trajectory.EventType{trajectory.TypeModelResponse, trajectory.TypeSessionEnd}, info: Info{
		ID: "stop_reason_as_done", Severity: SeverityError, Title: "a session ended as finished on a reply that did not finish",
		About: "The session_end reason says the model finished (end_turn or stop_sequence), but the last " +
			"model_response's stop reason is missing, unknown, max_tokens or tool_use: an unrecognised " +
			"stop reason was treated as done, which is fail-open.",
		NextStep: "Treat only end_turn and stop_sequence as done, by whitelist; anything else ends the session as an error (docs/failure-modes.md).",
	}},
	&goDetector{check: endTurnWithToolUse, reads: []trajectory.EventType{trajectory.TypeModelResponse, trajectory.TypeToolCall, trajectory.TypeSessionEnd}, info: Info{
		ID: "end_turn_with_tool_use", Severity: SeverityError, Title: "end_turn with a tool_use that never ran",
		About: "A model_response says end_turn but still holds tool_use blocks, and no tool_call ran for " +
			"them: the loop stopped on the stop reason and the user got half a task.",
		NextStep: "Fall through: when an end_turn reply holds tool_use blocks, run them as for tool_use (the end_turn_fallthrough defense; docs/failure-modes.md).",
	}},
	&goDetector{check: hallucinatedTool, reads: []trajectory.EventType{trajectory.TypeSessionStart, trajectory.TypeModelRequest, trajectory.TypeModelResponse, trajectory.TypeToolCall, trajectory.TypeToolSuccess, trajectory.TypeToolFailure}, info: Info{
		ID: "hallucinated_tool", Severity: SeverityWarning, Title: "call to a tool that was not offered",
		About: "A model_response calls a tool whose name was not in the tool_names of the request it " +
			"answers and is not a deferred tool of the session's catalog. The finding says how the call was answered: info when the harness answered " +
			"not_found (the model's signal, handled), warning when it was answered some other way " +
			"or not at all, error when it ran and succeeded, since then the executor ran a tool the " +
			"model was never shown. In a session whose catalog was not logged (session_start tools_unknown, an imported " +
			"Codex rollout) the offered names are unknown, so the calls the client itself answered not_found are the " +
			"findings, at info.",
		NextStep: "Answer calls to unknown tools with a not_found failure naming the tools that exist; if the name is a deferred tool's, check that tool_search loaded it first (docs/failure-modes.md).",
	}},
	&goDetector{check: emptyInputRetry, reads: []trajectory.EventType{trajectory.TypeModelResponse}, info: Info{
		ID: "empty_input_retry", Severity: SeverityError, Title: "empty-input tool_use retried without a cap",
		About: "More than max_in_a_row model_responses in a row hold a tool_use with an empty input {}: the " +
			"harness kept injecting a retry prompt past MAX_EMPTY_PARAM_RETRIES, a loop that feeds " +
			"itself (more context, more degeneration).",
		Thresholds: []Threshold{{Name: "max_in_a_row", Default: emptyInputRetryCap, Count: true,
			Doc: "replies in a row with an empty-input tool_use that a capped retry allows: the first and MAX_EMPTY_PARAM_RETRIES (2) retries"}},
		NextStep: "Cap the empty-input retries (MAX_EMPTY_PARAM_RETRIES) and end the session as stuck when the cap is reached (docs/failure-modes.md).",
	}},
	// The museum.
	&deadDefense{info: Info{
		ID: "dead_defense", Severity: SeverityWarning, Title: "an enabled defense whose condition occurred and that never acted",
		About: "Over the corpus, a defense that session_start lists as enabled has no defense_trigger at all, " +
			"while its condition, recomputed from the events (an empty-input tool_use, a cut-off tool_use, " +
			"an end_turn reply with a tool_use, repeated identical read-only calls, a loop by shape, the same " +
			"call denied again and again), held in the sessions it cites: a zero that means broken, not quiet, a defense " +
			"that exists and is wired to nothing. A defense whose condition never occurred is never_needed " +
			"(a-type) and is not a finding; retrace detect --defenses prints the whole table. A warning, " +
			"not an error: the conditions are recomputed with the runtime's default thresholds, which the " +
			"trajectory does not carry, so a run configured with higher ones can be misjudged.",
		NextStep: "Open a cited session at the evidence lines and follow the defense's check for that event: a check that never runs on this path, a precondition that returns false for it, or a trigger recorded under another name (docs/failure-modes.md).",
		Corpus:   true,
	}},
	&goDetector{check: decisionCountedAsTrigger, reads: decisionReads, info: Info{
		ID: "decision_counted_as_trigger", Severity: SeverityWarning, Title: "a defense counter that moves with every check",
		About: "In one session a defense recorded min_triggers or more defense_triggers, as many as the times its check ran " +
			"(every denial, every reply or every call it looks at) and more than the times its condition, recomputed from " +
			"the events as the liveness table does, held: the counter sits in the predicate that decides, not in the branch " +
			"that acts, so it counts decisions, tens of times more than triggers, and looks just as plausible. Also a " +
			"defense whose triggers did nothing the events show: remind or retry with no reminder before the next reply, stop " +
			"with the session going on, execute with no tool_call for its call, skip with the call run. A warning: the " +
			"conditions are recomputed with the runtime's default thresholds. Defenses whose condition the contract does not " +
			"carry (reminder_cap) are not judged by count.",
		Thresholds: []Threshold{{Name: "min_triggers", Default: decisionTriggerMin, Count: true,
			Doc: "defense_triggers of one defense in one session, as many as its checks, before the counter is judged"}},
		NextStep: "Move the defense_trigger to the branch where the defense acts (the one place its paths meet), out of the predicate every check runs; ask what happened in the world when the counter moves (docs/failure-modes.md).",
	}},
	&sqlDetector{file: "denominator_shift.sql", info: Info{
		ID: "denominator_shift", Severity: SeverityInfo, Title: "a success rate that depends on its denominator",
		About: "Over the corpus, one tool's success rate over the calls requested (every tool_call) and over the calls " +
			"executed (a success, or a failure inside the tool) differ by more than max_gap, over min_calls or more calls: " +
			"denials, hook blocks, invalid inputs and unknown tools sit between the two denominators, so a curve of " +
			"\"success rate\" moves with the permission policy, not with the tool. The message counts the permission " +
			"modes, models and configurations the calls come from, and the rate per permission mode: a corpus that mixes " +
			"them moves a curve over requested calls for that reason alone. Info: the corpus is not wrong, a rate quoted " +
			"over it without its denominator is.",
		Thresholds: []Threshold{
			{Name: "min_calls", Default: 20, Count: true, Doc: "calls of one tool in the corpus before its rates are compared"},
			{Name: "max_gap", Default: 0.2, Doc: "the most the success rate over executed calls may exceed the rate over requested calls, as a fraction (0.2 is 20 percentage points)"},
		},
		NextStep: "Name the denominator in every rate (tool_success_rate_of_executed, not tool_success_rate), compare runs only over the same permission mode, model and configuration, and count denials in their own funnel (docs/failure-modes.md).",
		Corpus:   true,
	}},
	&goDetector{check: spillReadLoop, reads: []trajectory.EventType{trajectory.TypeToolCall, trajectory.TypeToolEnd}, info: Info{
		ID: "spill_read_loop", Severity: SeverityWarning, Title: "a spilled output read back or run again without ever being seen",
		About: "A tool_end was truncated with its full output spilled, and later calls read the spill (their input names " +
			"its digest) or ran the call again and got the same output. Error when a read of the spill was itself truncated " +
			"and spilled to the same blob: the mechanism that spills large outputs and the one that limits the read of a spill " +
			"make a loop, and the model can never see the output (the read: Infinity case). Warning when min_repeats " +
			"follow-ups brought nothing new: reads truncated again or repeating a read, re-runs that spilled the same output. " +
			"Paging through a spill with different offsets is what the notice asks for, and re-running a call after a change " +
			"that gives another output is work; neither counts.",
		Thresholds: []Threshold{{Name: "min_repeats", Default: spillRereadMin, Count: true,
			Doc: "follow-ups of one spill that brought nothing new (a read truncated again or repeating a read, a re-run with the same output) that make a loop"}},
		NextStep: "Exempt the read of a spill from the spill limit (the read tool limits itself by lines), and say in the truncation notice how to read a part of the spill (offset and limit) rather than the whole (docs/failure-modes.md).",
	}},
	&goDetector{check: prefixCollapseRisk, reads: []trajectory.EventType{trajectory.TypeSessionStart, trajectory.TypeModelRequest, trajectory.TypeModelResponse, trajectory.TypeToolCall}, info: Info{
		ID: "prefix_collapse_risk", Severity: SeverityWarning, Title: "deferred and resident tool names that can collapse into each other",
		About: "A resident and a deferred tool share min_prefix or more leading characters, the necessary condition of the " +
			"prefix collapse: under constrained decoding, a model that means the deferred tool, absent from this turn's " +
			"schema, can only continue into the resident one, and makes a valid, permitted, wrong call that no layer " +
			"reports. Info for the pair alone; a warning when the system prompt (the static prefix) also lists the deferred " +
			"name on a line without a \"not loaded\" label, in the form of a callable tool, and for every call of a resident " +
			"tool in a reply right after its deferred neighbour, not loaded, was named (in the reply's text or the " +
			"messages just added).",
		Thresholds: []Threshold{{Name: "min_prefix", Default: prefixCollapseMin, Count: true,
			Doc: "leading characters a resident and a deferred tool name share before they count as neighbours"}},
		NextStep: "Rename one of the pair so the prefixes differ, or make the deferred tool resident; label every deferred tool in the system prompt as not loaded, in a form unlike the callable tools', and add a test that fails when a new deferred tool shares a prefix with a resident one (docs/failure-modes.md).",
	}},
	&goDetector{check: lowYieldSpin, reads: []trajectory.EventType{trajectory.TypeSessionStart, trajectory.TypeModelResponse, trajectory.TypeToolCall, trajectory.TypeToolEnd, trajectory.TypeToolResult, trajectory.TypeDefenseTrigger}, info: Info{
		ID: "low_yield_spin", Severity: SeverityWarning, Title: "the same command returning the same number, turn after turn",
		About: "min_turns or more turns in a row ran the same calls, byte for byte, and each got back a single number " +
			"(a grep -c, a wc -l, an error count), the same as the turn before at least once (a count that changes now and " +
			"then is one spin, such as 139 ×22, 136 ×7, 113 ×9), with no file written (no call carried a snapshot) and " +
			"no text for the user, and the low_yield_spin defense did not act on any of those turns or was not enabled: a loop driven by " +
			"low-information observations, where the model gets nothing to act on and can only think again. The four " +
			"conditions are the runtime defense's, recomputed from the events; the liveness table uses the same recomputation.",
		Thresholds: []Threshold{{Name: "min_turns", Default: lowYieldSpinMin, Count: true,
			Doc: "turns in a row with the same calls and the same single-number results; the runtime's defense acts at the second, one repeat can be a deliberate re-check"}},
		NextStep: "Enable the low-yield spin defense, and steer the model to commands whose output says what to do next (save the output to a file, then count and list the lines to act on) instead of a bare count (docs/failure-modes.md).",
	}},
	&goDetector{check: repeatedReadOnly, reads: []trajectory.EventType{trajectory.TypeToolCall, trajectory.TypeToolSuccess, trajectory.TypeToolResult, trajectory.TypeDefenseTrigger}, info: Info{
		ID: "repeated_readonly", Severity: SeverityWarning, Title: "the same call returned the same result again and again",
		About: "One tool with the same input returned the same tool_result text min_repeats times in a row, no " +
			"other call between and no repeated_readonly defense acting on any of them: the model keeps " +
			"re-reading a fact it already has, typically because a frozen snapshot (the system prompt's) " +
			"and the live state disagree and it cannot tell which is current. bash counts too: the " +
			"repetition is the symptom. Re-reads spread over a task, with other calls between, are ordinary and do not count.",
		Thresholds: []Threshold{{Name: "min_repeats", Default: repeatedCallMin, Count: true,
			Doc: "identical calls in a row with the same result; past the guard's threshold (3) and its two reminders, since re-reading a file two or three times is ordinary"}},
		NextStep: "Enable the repeated-readonly guard, and put live state (git status, the file's content) in a reminder on the user side, marked as current, instead of leaving the model to arbitrate against the frozen system-prompt snapshot (docs/failure-modes.md).",
	}},
	&goDetector{check: staleSnapshot, reads: []trajectory.EventType{trajectory.TypeSessionStart, trajectory.TypeModelRequest, trajectory.TypeToolCall, trajectory.TypeToolSuccess, trajectory.TypeToolFailure, trajectory.TypeToolResult}, info: Info{
		ID: "stale_snapshot", Severity: SeverityWarning, Title: "the system prompt's frozen git status contradicts the live one, and the model keeps checking",
		About: "The system prompt (session_start.system_prompt, else the first request's system) carries a git status " +
			"frozen at the start (git status lines after a line naming git status); a git status -s/--short/--porcelain " +
			"the model ran returned other lines, and it ran the same command min_rechecks more times with the same " +
			"answer: two sources of truth disagree and the model cannot tell which is live. At info: a call on a file " +
			"the snapshot lists that failed with ENOENT (the model acted on the frozen snapshot). Only git status is " +
			"compared: the workspace_snapshot event is a blob reference, and other file listings in the prompt are not judged.",
		Thresholds: []Threshold{{Name: "min_rechecks", Default: staleRechecksDefault, Count: true,
			Doc: "git status runs after the first one that contradicted the snapshot, each with the same answer"}},
		NextStep: "Keep the snapshot frozen (it is the cached prefix) but send the live git status in a reminder on the user side, marked as current, whenever it changes (docs/failure-modes.md).",
	}},
	&goDetector{check: phantomUserMessage, reads: []trajectory.EventType{trajectory.TypeReminder, trajectory.TypeModelRequest, trajectory.TypeCompaction}, info: Info{
		ID: "phantom_user_message", Severity: SeverityWarning, Title: "harness text the model may take for the user's",
		About: "A reminder with the user role reached the model without a harness label around it (a tag such as " +
			"<harness-reminder> or <system-reminder>), or was injected again while the first is still in the context " +
			"(the same dedup_key, or the same text when it has none; only a compaction that removed or summarised " +
			"messages clears it), or more than max_per_kind reminders of one kind were injected in one session. The " +
			"model reads each as the user speaking, and comes to replay requests the user never made. A " +
			"reminder whose text the next request does not carry is not judged for its label.",
		Thresholds: []Threshold{{Name: "max_per_kind", Default: reminderCapDefault, Count: true,
			Doc: "reminders of one kind in a session; the runtime's own cap is 3"}},
		NextStep: "Deduplicate reminders by key, cap each kind per session, and wrap each one in a harness tag the system prompt explains (docs/failure-modes.md).",
	}},
	&sqlDetector{file: "definition_drift.sql", info: Info{
		ID: "definition_drift", Severity: SeverityWarning, Title: "one tool with two definitions",
		About: "Within a session, the catalog names one tool twice with different definition_hash values (error), or a " +
			"tool_search result line that is a definition gives a catalog tool another description than session_start's " +
			"recorded definition (warning: the path that loads a deferred tool built it differently). Across " +
			"the corpus, sessions of the same harness_version sent one tool with different definitions (warning, " +
			"corpus-level, citing the sessions of each): two paths build the definition and one changed it, often by " +
			"dropping most of the description. Where definitions are recorded the message gives the description " +
			"sizes and the share the shorter one lost. Different harness versions are not compared; a development " +
			"build reports one version for every commit, so a corpus mixing builds can show a drift that is a release.",
		NextStep: "Build every tool definition through one function from one source, and compare the definitions the paths produce in CI (docs/failure-modes.md).",
		Corpus:   true,
	}},
	&goDetector{check: pendingAsMissing, reads: []trajectory.EventType{trajectory.TypeSessionStart, trajectory.TypeModelRequest, trajectory.TypeToolFailure, trajectory.TypeToolSuccess, trajectory.TypeToolResult}, info: Info{
		ID: "pending_as_missing", Severity: SeverityWarning, Title: "a tool of a server still connecting was reported as missing",
		About: "A call to a tool that is not in session_start's catalog was answered not_found with an error_code other " +
			"than pending or not_loaded (and a result text that does not say its server is connecting or that it is not loaded), while the request before it " +
			"lists the tool's MCP server in pending_sources, or, for trajectories without pending_sources, the tool was " +
			"there later in the session (a request offered it or a call to it succeeded). The server was still " +
			"connecting and the model was told the tool does not exist, so it stops looking for it. An error when " +
			"pending_sources shows the server connecting, a warning when the late arrival is what shows it.",
		NextStep: "Answer a call to a tool of a server still connecting with a pending failure that names the server and says to retry, not with \"does not exist\" (docs/failure-modes.md).",
	}},
	// The tool layer and observability.
	&sqlDetector{file: "latency_flattened.sql", info: Info{
		ID: "latency_flattened", Severity: SeverityWarning, Title: "a parallel batch whose calls all report the same duration",
		About: "Two or more calls of one batch report exactly the same duration_ms (to the microsecond), of " +
			"min_duration_ms or more: the durations are a batch total divided among the calls, which hides " +
			"the slow one. Quicker calls are left out: two sub-millisecond reads can agree on their own.",
		Thresholds: []Threshold{{Name: "min_duration_ms", Default: 1,
			Doc: "milliseconds a batch's equal durations must reach to count; below it, measured calls meet by chance"}},
		NextStep: "Record each call's own run time in tool_end, measured where the call runs; aggregate only at the top (docs/failure-modes.md).",
	}},
	&sqlDetector{file: "unbounded_label.sql", info: Info{
		ID: "unbounded_label", Severity: SeverityWarning, Title: "a label that carries data",
		About: "An error_code (of tool_failure or session_end), a hook name or a reminder kind looks like it " +
			"carries a path, an id, a number or a message (a run of 6+ digits, 8+ hex digits, 3+ " +
			"dotted segments or more than max_length characters), or one tool gives more than " +
			"max_codes_per_tool distinct error codes over the corpus: labels must be a closed set, or " +
			"the metric backend's cardinality explodes.",
		Thresholds: []Threshold{
			{Name: "max_length", Default: 32, Count: true, Doc: "characters a label may have"},
			{Name: "max_codes_per_tool", Default: 16, Count: true, Doc: "distinct error codes one tool may give over the corpus"},
		},
		NextStep: "Give error codes from a closed set at the call site (ENOENT, exit:2, timeout); keep paths, commands and messages in the tool_result text, never in a label (docs/failure-modes.md).",
	}},
	&sqlDetector{file: "denial_loop.sql", info: Info{
		ID: "denial_loop", Severity: SeverityWarning, Title: "the same call denied again and again without the fuse acting",
		About: "The same tool with the same input was denied min_denials or more times in a session and no " +
			"denial_fuse defense_trigger followed the first denial: the model keeps asking, the " +
			"harness keeps refusing, and nothing breaks the loop.",
		Thresholds: []Threshold{{Name: "min_denials", Default: denialLoopMin, Count: true,
			Doc: "denials of the same call (tool and input) in one session that make a loop"}},
		NextStep: "Enable the denial fuse (it turns repeated denials into a confirmation or a stop) and check that it fires in a session like this one (docs/failure-modes.md).",
	}},
	&sqlDetector{file: "headless_prompt_denials.sql", info: Info{
		ID: "headless_prompt_denials", Severity: SeverityWarning, Title: "headless sessions keep refusing calls that needed a person",
		About: "Over the headless sessions of the corpus (session_start mode headless), one tool's calls were refused " +
			"as needing a confirmation nobody could give (permission_deny with source non_interactive) in " +
			"min_sessions or more sessions, and for min_share or more of that tool's calls in headless sessions. " +
			"In a headless run a prompt can only end as a denial, so a prompt that recurs is a policy gap: the " +
			"configuration delegates to a person who is not there, and every such call costs a turn and fails " +
			"the task. One session refusing a few calls is not a gap (the thresholds keep it out); the finding " +
			"cites every session that counts, the chain steps that asked and the most refused input.",
		Thresholds: []Threshold{
			{Name: "min_sessions", Default: 3, Count: true, Doc: "headless sessions in which the tool had a call refused for want of a person"},
			{Name: "min_share", Default: 0.25, Doc: "share of the tool's calls in headless sessions that were refused for want of a person, from 0 to 1"},
		},
		NextStep: "Decide these calls in the policy instead of by prompt: an allow rule for the commands the task needs (Bash(npm test:*)), a deny rule for what it must not do, or a narrower tool; and tell the model the stable rules up front (docs/failure-modes.md).",
		Corpus:   true,
	}},
	&goDetector{check: emptyOutputUnexplained, reads: []trajectory.EventType{trajectory.TypeModelRequest, trajectory.TypeToolCall, trajectory.TypeToolSuccess, trajectory.TypeToolFailure, trajectory.TypeToolEnd, trajectory.TypeToolResult}, info: Info{
		ID: "empty_output_unexplained", Severity: SeverityError, Title: "a successful call answered with an empty tool_result",
		About: "A call succeeded (tool_success) and its tool_result text is empty or only blanks and newlines, with no \"(no output)\"-style " +
			"explanation: the model cannot tell a search that found nothing from a tool that broke or an output " +
			"that was lost, and retries, changes its approach or concludes the wrong thing. An error when the " +
			"next model_request carries the empty block (the model certainly saw nothing); a warning when no " +
			"later request carries it. When tool_end says the tool produced output, the finding says so: the " +
			"output was lost on the way, not merely unexplained.",
		NextStep: "Replace an empty success with text that says both that the call succeeded and that the result is empty, per tool (\"(no matches)\", \"(command succeeded with no output)\"), in the one place results are shaped (docs/failure-modes.md).",
	}},
	&goDetector{check: truncationUnannounced, reads: []trajectory.EventType{trajectory.TypeToolCall, trajectory.TypeToolSuccess, trajectory.TypeToolFailure, trajectory.TypeToolEnd, trajectory.TypeToolResult}, info: Info{
		ID: "truncation_unannounced", Severity: SeverityWarning, Title: "a truncated output the model was not told about",
		About: "A call's tool_end says its output was truncated, and the tool_result names neither where the full " +
			"output is (the spill blob's digest, which its path holds) nor the full output's size (tool_end's " +
			"output_bytes as a number): the model does not know how much it missed or how to get it back, and " +
			"treats a part as the whole. A warning, since whether the text tells the model is read from the " +
			"text; a runtime whose notice gives the size in characters of a non-ASCII output, with no spill, is " +
			"misjudged. Truncation a tool does itself (read's line window) is not recorded in tool_end and is " +
			"not observable here.",
		NextStep: "Cut over the limit as head 70 % and tail 30 %, say how many characters were left out, save the full output and tell the model the path and the tool to read it with (docs/failure-modes.md).",
	}},
	&goDetector{check: hookChangedInputSilently, reads: []trajectory.EventType{trajectory.TypeModelResponse, trajectory.TypeToolCall, trajectory.TypeHookRun, trajectory.TypeToolSuccess, trajectory.TypeToolFailure, trajectory.TypeToolResult}, info: Info{
		ID: "hook_changed_input_silently", Severity: SeverityWarning, Title: "a call ran with a rewritten input and the model was not told",
		About: "A call ran (a success, or a tool_error, exception or timeout) with an input other than the one the " +
			"model sent: a PreToolUse hook_run of the call says input_changed, or the tool_call's input differs, " +
			"as decoded JSON, from the model's tool_use input with no hook_run saying so. Its tool_result does " +
			"not mention a hook, so the model reads the result as the answer to its own input and builds on a " +
			"false picture (the model asked for /etc/passwd and was given /tmp/fake_passwd). A warning: \"told\" " +
			"is read from the text (a notice names the hook that rewrote the input). Calls denied or blocked " +
			"after the rewrite are not judged.",
		NextStep: "When a hook really changed the input (deep equality of the decoded JSON, not bytes), put a notice before the tool_result saying that a hook changed the input and the result is for the changed one; record input_changed on the hook_run (docs/failure-modes.md).",
	}},
	&goDetector{check: cacheBreaker, reads: []trajectory.EventType{trajectory.TypeModelRequest, trajectory.TypeModelResponse, trajectory.TypeCompaction}, info: Info{
		ID: "cache_breaker", Severity: SeverityWarning, Title: "a byte-stable part of the request prefix changed within a session",
		About: "Between two requests of a session the system prompt changed (system_hash), the tools changed order, set " +
			"or bytes (tool_names, tools_hash), or a message already sent changed (message_hashes; in v2 a request keeps fewer of them, messages_kept) with no compaction " +
			"between: every request after it pays for the whole prefix again. Tools appended at the end (a deferred " +
			"tool loaded by tool_search, a late MCP server's tools) are the runtime's design and not reported. At " +
			"info: min_unexplained_drops or more responses whose cache-read share of input tokens fell below " +
			"min_cache_read_share after reaching it, with no prefix change, no compaction and no gap over cache_ttl_seconds " +
			"to explain it.",
		Thresholds: []Threshold{
			{Name: "min_cache_read_share", Default: cacheWarmShare, Doc: "cache-read tokens over all input tokens (input, cache read, cache creation) of a response at which the cache counts as warm"},
			{Name: "cache_ttl_seconds", Default: cacheTTLSeconds, Doc: "seconds from a response to the next request after which the provider's cache has expired"},
			{Name: "min_unexplained_drops", Default: cacheMinDrops, Count: true, Doc: "unexplained cache-read drops in a session before they are reported; one alone is most often the provider evicting the cache"},
		},
		NextStep: "Keep the system prompt and the tool list byte-stable for the session (sorted MCP tools, appended loads, runtime state only in the messages) and never rewrite sent messages outside a compaction (docs/failure-modes.md).",
	}},
	&goDetector{check: contextRunaway, reads: []trajectory.EventType{trajectory.TypeModelResponse, trajectory.TypeCompaction}, info: Info{
		ID: "context_runaway", Severity: SeverityWarning, Title: "the context grows faster than linear or nears the window without a compaction",
		About: "The context a request carries (its response's usage: input_tokens plus cache reads and writes) " +
			"either reached window_share of the model's window (window_tokens: the contract does not carry the " +
			"window) with no compaction event right before it (once per session), or, over min_turns or more requests " +
			"without a compaction, grew faster than linear: the second half of the stretch added growth_factor " +
			"times what the first half added, the per-turn growth rose steadily (Kendall's tau of the " +
			"increments at least min_trend), and the context reached min_tokens. An agent's context grows about " +
			"linearly, each turn adding its output and results; faster growth means something is re-sent and " +
			"piles up, and either way the session is heading for a failed request or a compaction that drops " +
			"what the model still needs. session_start's limits.context_tokens bounds the runtime's estimate " +
			"of the history, not a request, so it is not taken as the window.",
		Thresholds: []Threshold{
			{Name: "window_tokens", Default: 200000, Count: true, Doc: "tokens in the model's context window"},
			{Name: "window_share", Default: 0.8, Doc: "share of the window, from 0 to 1, a request may reach with no compaction right before it"},
			{Name: "min_turns", Default: 10, Count: true, Doc: "requests without a compaction between them that a growth judgement needs"},
			{Name: "growth_factor", Default: 2, Doc: "how many times the first half's growth the second half must add to be faster than linear (linear 1, quadratic from zero 3)"},
			{Name: "min_trend", Default: 0.6, Doc: "Kendall's tau, from -1 to 1, of the per-turn increments with their order: how steadily the growth must rise"},
			{Name: "min_tokens", Default: 50000, Count: true, Doc: "context tokens the stretch must reach for its growth to matter"},
		},
		NextStep: "Find what every turn re-sends (reminders not deduplicated or capped, results that repeat earlier ones, whole files read again) and stop it; compact before the window, at a share of it, not when a request fails (docs/failure-modes.md).",
	}},
}

// endLike reports whether r is a stop reason that means the model finished.
func endLike(r trajectory.StopReason) bool {
	return r == trajectory.StopEndTurn || r == trajectory.StopStopSequence
}

// unpairedToolUse pairs the tool_use blocks of each assistant message with
// the tool_result blocks of the user message after it, following the
// messages the requests add (the assistant message may be a response's,
// when the next request does not repeat it).
func unpairedToolUse(d *goDetector, s *Session, _ Params) []Finding {
	type use struct {
		id, tool string
		at       Located
	}
	var out []Finding
	// pending is emptied, not dropped, between replies: its array is
	// used again.
	var pending []use
	// compacted is set between a compaction and the next request: the
	// request then resends the kept tail of the conversation, whose first
	// tool_results may answer an assistant message that was dropped.
	compacted := false
	for _, e := range s.Events {
		switch p := e.Payload.(type) {
		case *trajectory.Compaction:
			pending, compacted = pending[:0], true
		case *trajectory.ModelResponse:
			pending = pending[:0]
			for b := range toolUses(p) {
				pending = append(pending, use{b.ID, b.Name, e})
			}
		case *trajectory.ModelRequest:
			for k, m := range p.NewMessages {
				if compacted && k == 0 && m.Role == trajectory.RoleUser {
					continue
				}
				if m.Role == trajectory.RoleAssistant {
					pending = pending[:0]
					for _, b := range m.Content {
						if b.Type == trajectory.BlockToolUse {
							pending = append(pending, use{b.ID, b.Name, e})
						}
					}
					continue
				}
				answered := map[string]bool{}
				for _, b := range m.Content {
					if b.Type != trajectory.BlockToolResult {
						continue
					}
					answered[b.ToolUseID] = true
					if !slices.ContainsFunc(pending, func(u use) bool { return u.id == b.ToolUseID }) {
						f := d.finding(s, fmt.Sprintf("a tool_result for %s in the request of turn %d answers no tool_use of the assistant message before it", b.ToolUseID, e.Turn), e)
						f.ToolUseID = b.ToolUseID
						out = append(out, f)
					}
				}
				// A user message without any tool_result after tool_use
				// blocks is the harness dropping them all; one with some
				// results and not others drops the rest.
				for _, u := range pending {
					if !answered[u.id] {
						ev := []Located{u.at}
						if u.at.Seq != e.Seq {
							ev = append(ev, e)
						}
						f := d.finding(s, fmt.Sprintf("tool_use %s (%s) of turn %d got no tool_result in the user message that follows it (request of turn %d)", u.id, u.tool, u.at.Turn, e.Turn), ev...)
						f.ToolUseID = u.id
						out = append(out, f)
					}
				}
				pending = pending[:0]
			}
			compacted = false
		}
	}
	return out
}

// resultOf returns the tool_success or tool_failure event for id after
// index from, or false.
func resultOf(s *Session, from int, id string) (Located, bool) {
	for _, e := range s.Events[from:] {
		switch p := e.Payload.(type) {
		case *trajectory.ToolSuccess:
			if p.ToolUseID == id {
				return e, true
			}
		case *trajectory.ToolFailure:
			if p.ToolUseID == id {
				return e, true
			}
		}
	}
	return Located{}, false
}

// callOf returns the index of the tool_call event for id after index from,
// or -1.
// notFoundCall is hallucinated_tool's finding for tool_use b of the
// response at index i in a session whose catalog is unknown: a finding
// when the call's outcome is a not_found failure, the client's own word
// that no such tool exists.
func notFoundCall(d *goDetector, s *Session, i int, e Located, b trajectory.ContentBlock) (Finding, bool) {
	j := callOf(s, i+1, b.ID)
	if j < 0 {
		return Finding{}, false
	}
	res, ok := resultOf(s, j+1, b.ID)
	if p, failed := res.Payload.(*trajectory.ToolFailure); !ok || !failed || p.FailureKind != trajectory.FailureNotFound {
		return Finding{}, false
	}
	f := d.finding(s, "", e, s.Events[j], res)
	f.ToolUseID, f.Severity = b.ID, SeverityInfo
	f.Message = fmt.Sprintf("turn %d calls %q, which the client answered as a tool it does not have (not_found); the session's catalog was not logged", e.Turn, b.Name)
	return f, true
}

func callOf(s *Session, from int, id string) int {
	for j := from; j < len(s.Events); j++ {
		if c, ok := s.Events[j].Payload.(*trajectory.ToolCall); ok && c.ToolUseID == id {
			return j
		}
	}
	return -1
}

// ran reports whether a tool result event means the tool ran: it
// succeeded, or failed inside the tool.
func ran(e Located) bool {
	switch p := e.Payload.(type) {
	case *trajectory.ToolSuccess:
		return true
	case *trajectory.ToolFailure:
		return p.FailureKind == trajectory.FailureToolError || p.FailureKind == trajectory.FailureException ||
			p.FailureKind == trajectory.FailureTimeout
	}
	return false
}

func truncatedToolUseExecuted(d *goDetector, s *Session, _ Params) []Finding {
	var out []Finding
	for i, e := range s.Events {
		r, ok := e.Payload.(*trajectory.ModelResponse)
		if !ok || r.StopReason != trajectory.StopMaxTokens {
			continue
		}
		for b := range toolUses(r) {
			// A tool_use whose input closed before the cut is whole; only
			// one with a partial input was cut off.
			if b.PartialInput == "" {
				continue
			}
			j := callOf(s, i+1, b.ID)
			if j < 0 {
				continue
			}
			res, ok := resultOf(s, j+1, b.ID)
			if !ok || !ran(res) {
				continue
			}
			f := d.finding(s, fmt.Sprintf("tool_use %s (%s) of a max_tokens reply, cut off after %d bytes of its input, ran: %s", b.ID, b.Name, len(b.PartialInput), res.Type()), e, s.Events[j], res)
			f.ToolUseID = b.ID
			out = append(out, f)
		}
	}
	return out
}

func stopReasonAsDone(d *goDetector, s *Session, _ Params) []Finding {
	var last *Located
	for i := range s.Events {
		e := &s.Events[i]
		switch p := e.Payload.(type) {
		case *trajectory.ModelResponse:
			last = e
		case *trajectory.SessionEnd:
			if last == nil || (p.Reason != trajectory.EndTurn && p.Reason != trajectory.EndStopSequence) {
				continue
			}
			r := last.Payload.(*trajectory.ModelResponse)
			if endLike(r.StopReason) {
				continue
			}
			raw := r.StopReasonRaw
			if raw == "" {
				raw = "none"
			}
			return []Finding{d.finding(s, fmt.Sprintf("session_end says %s, but the last reply's stop reason is %s (raw %q); only end_turn and stop_sequence mean done", p.Reason, r.StopReason, raw), *last, *e)}
		}
	}
	return nil
}

func endTurnWithToolUse(d *goDetector, s *Session, _ Params) []Finding {
	var out []Finding
	for i, e := range s.Events {
		r, ok := e.Payload.(*trajectory.ModelResponse)
		if !ok || r.StopReason != trajectory.StopEndTurn {
			continue
		}
		var unrun []string
		for b := range toolUses(r) {
			if callOf(s, i+1, b.ID) < 0 {
				unrun = append(unrun, b.ID+" ("+b.Name+")")
			}
		}
		if len(unrun) == 0 {
			continue
		}
		ev := []Located{e}
		if n := len(s.Events); s.Events[n-1].Type() == trajectory.TypeSessionEnd {
			ev = append(ev, s.Events[n-1])
		}
		f := d.finding(s, fmt.Sprintf("the end_turn reply of turn %d holds tool_use blocks that never ran (%d): %s", e.Turn, len(unrun), strings.Join(unrun, ", ")), ev...)
		f.ToolUseID = strings.Fields(unrun[0])[0]
		out = append(out, f)
	}
	return out
}

func hallucinatedTool(d *goDetector, s *Session, _ Params) []Finding {
	var out []Finding
	var offered []string
	// deferred are the catalog's deferred tools: a call to one before
	// tool_search loaded it is a name the model was told about, not one
	// it made up (the deferred-tool detectors look at those).
	deferred := map[string]bool{}
	haveRequest := false
	// toolsUnknown: the source logged no catalog (an imported Codex
	// rollout), so tool_names say nothing; the calls the client itself
	// answered not_found are the ones to a tool that does not exist.
	toolsUnknown := false
	for i, e := range s.Events {
		switch p := e.Payload.(type) {
		case *trajectory.SessionStart:
			toolsUnknown = p.ToolsUnknown
			for _, t := range p.Tools {
				if t.Deferred {
					deferred[t.Name] = true
				}
			}
		case *trajectory.ModelRequest:
			offered, haveRequest = p.ToolNames, true
		case *trajectory.ModelResponse:
			if !haveRequest {
				continue
			}
			for b := range toolUses(p) {
				if toolsUnknown {
					if f, ok := notFoundCall(d, s, i, e, b); ok {
						out = append(out, f)
					}
					continue
				}
				if slices.Contains(offered, b.Name) || deferred[b.Name] {
					continue
				}
				f := d.finding(s, "", e)
				f.ToolUseID = b.ID
				answer := "it was never taken up (no tool_call)"
				if j := callOf(s, i+1, b.ID); j >= 0 {
					f.Evidence = append(f.Evidence, s.Evidence(s.Events[j]))
					answer = "it has no outcome"
					if res, ok := resultOf(s, j+1, b.ID); ok {
						f.Evidence = append(f.Evidence, s.Evidence(res))
						switch p := res.Payload.(type) {
						case *trajectory.ToolSuccess:
							answer, f.Severity = "it ran and succeeded", SeverityError
						case *trajectory.ToolFailure:
							answer = "it was answered with a " + string(p.FailureKind) + " failure"
							if p.FailureKind == trajectory.FailureNotFound {
								// The harness did its part: this is the
								// model's signal, worth knowing, not a defect.
								f.Severity = SeverityInfo
							}
						}
					}
				}
				f.Message = fmt.Sprintf("turn %d calls %q, which is not among the %d tools the request offered; %s", e.Turn, b.Name, len(offered), answer)
				out = append(out, f)
			}
		}
	}
	return out
}

// emptyInput reports whether a tool_use block's input is an empty object.
func emptyInput(b trajectory.ContentBlock) bool {
	if b.PartialInput != "" {
		return false
	}
	// An object with a key holds a quote; most inputs are told apart
	// without decoding them.
	in := bytes.TrimSpace(b.Input)
	if len(in) < 2 || in[0] != '{' || bytes.IndexByte(in, '"') >= 0 {
		return false
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(in, &m) == nil && len(m) == 0
}

func emptyInputRetry(d *goDetector, s *Session, p Params) []Finding {
	limit := p.Int("max_in_a_row")
	var out []Finding
	var run []Located
	flush := func() {
		if len(run) > limit {
			f := d.finding(s, fmt.Sprintf("%d replies in a row (turns %d to %d) hold a tool_use with an empty input; a capped retry stops after %d (max_in_a_row)", len(run), run[0].Turn, run[len(run)-1].Turn, limit), run...)
			for _, b := range run[0].Payload.(*trajectory.ModelResponse).ToolUses() {
				if emptyInput(b) {
					f.ToolUseID = b.ID
					break
				}
			}
			out = append(out, f)
		}
		run = nil
	}
	for _, e := range s.Events {
		r, ok := e.Payload.(*trajectory.ModelResponse)
		if !ok {
			continue
		}
		if anyToolUse(r, emptyInput) {
			run = append(run, e)
			continue
		}
		flush()
	}
	flush()
	return out
}
