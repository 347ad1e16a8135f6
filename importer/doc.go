// Package importer turns the session transcripts that third-party agents
// write about themselves — Claude Code's, the Codex CLI's and opencode's
// (its export and its run events; docs/import.md maps them) — into
// retrace trajectories, so that validate, metrics, detect and report work
// on them like on one of retrace's own sessions (`retrace import`).
//
// A transcript is not a recording: it says what the client chose to log,
// not everything that happened. The importer therefore writes only what
// the transcript states or what follows from it, and says which is which:
// every tool event carries observed: transcript (the client logged it) or
// observed: inferred (the importer derived it, e.g. a tool_call from a
// tool_use block, an outcome from is_error). Every event read from a line
// of the transcript carries that line (origin_line; session_start names
// the file in origin_file), so a finding's evidence can be shown as the
// client's own file:line.
//
// A call's outcome is read by package tooloutcome, the classifier of each
// client's results that `mock serve --record` uses on the wire too, so a
// session recorded on the wire and imported from its transcript give
// every call the same outcome; what only the transcript states (a
// permission decision, an interruption, the exact size of a saved output,
// an exit code in Codex's own events) refines it. A value the transcript does
// not hold is never made up: a tool call's duration comes only from the
// client's own measurement of that call, and is otherwise 0 with
// duration_unknown, since splitting the wall time of a batch between its
// calls would invent numbers.
//
// # Writing
//
// Each session is written through the recorder (so redaction and fsync
// hold) into a staging directory beside the runs directory and then
// renamed into place. Its session id is the session's start time and four
// bytes of a hash of the client and its own session id, so importing the
// same transcript again gives the same id: the file is left alone when
// the bytes are the same (Unchanged) and replaced when the transcript grew
// (Updated); a shorter copy of it (a backup taken earlier, a copy that
// lost its end) never replaces a longer import (Kept). There is never a
// duplicate. Event times are the transcript's
// own timestamps, never earlier than the event before.
//
// Sessions are written as trajectory v2: the conversation an importer
// rebuilds only grows, so every model_request keeps all the messages of
// the one before (messages_kept) and records the new ones' hashes and the
// chained prefix_hash (trajectory.Conversation). The file grows linearly
// with the turns, and so does the import's cost.
//
// # Reading
//
// Transcript lines are decoded with segmentio/encoding's json, a drop-in
// for encoding/json with the same rules for the loose records an importer
// reads (unknown fields ignored; the same types), at about twice the CPU
// throughput of the whole import (measured on one core: 33-37 MB/s with
// encoding/json, 74-77 MB/s with it): encoding/json's two scans of every
// value, and of the large records the importer skips (attachments, prompt
// snapshots), were most of the cost.
// BenchmarkImportClaudeCode measures MB of transcript per CPU-second on
// a synthetic session of 200 and 2000 turns against a baseline that only
// decodes each line with encoding/json.
//
// A line that is not a JSON object, or a record that contradicts the
// format (a tool_use without id, a repeated tool_use id, a timestamp that
// is not RFC 3339), is a *LineError naming file:line; it is skipped and
// the rest of the file is imported, unless Options.Strict refuses the
// file. Record types the importer does not know are counted in
// Report.Unknown and skipped, never fatal. A file with no record of the
// format is ErrNotTranscript.
//
// # Claude Code (2.1; ~/.claude/projects/<project>/<session>.jsonl)
//
//	trajectory field               Claude Code record and field
//	session_start.harness_version  "claude-code " + version (every record)
//	session_start.provider         "anthropic"
//	session_start.model            params.model of the first api-request, else message.model of the first assistant record
//	session_start.mode             headless when entrypoint is sdk-cli/sdk-ts/sdk-py (claude -p), else interactive
//	session_start.permission_mode  permissionMode of the user records: default, plan, acceptEdits → accept_edits, bypassPermissions → bypass
//	session_start.system_prompt    shape.system[].text of the first api-request-shape, joined by newlines
//	session_start.tools            shape.tools of the first api-request-shape: name, Hash of the definition as logged, mcp__ names as mcp
//	session_start.workspace        cwd
//	session_start.tags             source=import, client, client_version, source_session (sessionId; <sessionId>/<agentId> for a subagent),
//	                               agent_type
//	session_start.parent_session   a subagent's parent session, and parent_tool_use_id its <agent>.meta.json toolUseId
//	model_request (one per response)  ts: the api-request whose id is the response's requestRef; new_messages: the user
//	                               records since the previous response (text prompts and tool_result blocks) as one user message;
//	                               max_tokens: params.max_tokens; system/tools hashes from session_start
//	model_response.content         the content blocks (text, thinking, tool_use) of the assistant records sharing one message.id,
//	                               which Claude Code writes one block per record
//	model_response.stop_reason     message.stop_reason, normalised by whitelist (raw kept)
//	model_response.usage           message.usage: input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens
//	model_response.duration_ms     last block record's timestamp − its api-request's timestamp (0 without an api-request)
//	model_error                    each system record of subtype api_error before a response: error.status → error_kind
//	                               (429 rate_limited, 529 overloaded, 5xx server_error, 401/403 auth, none connection, else
//	                               bad_request), retryAttempt → attempt, retryInMs → retry_after_ms; duration_ms 0 (not logged);
//	                               the synthetic assistant record of a request that failed for good ("error":"server_error",
//	                               apiErrorStatus) → a model_request with its model_errors and no model_response
//	tool_call (inferred)           each tool_use block: id, name, input, index among the response's tool_uses
//	permission_allow/deny (transcript)  permissionDecision of the tool_result's record: decision accept → allow, reject → deny;
//	                               reasonType rule → rule/allow_rule or deny_rule, subcommandResults → rule/tool_check,
//	                               mode → mode/default, source hook → hook/hook, source user → user/default,
//	                               other denials → non_interactive/default in headless mode; toolDenialKind alone → a denial
//	tool_success/tool_failure (inferred)  tooloutcome.ClaudeCode of the tool_result block (is_error and the wording:
//	                               not_found, invalid_input, permission_denied, tool_error exit:N or ENOENT); a
//	                               denying permissionDecision → permission_denied, toolUseResult.interrupted → aborted
//	tool_end (inferred)            output_bytes: the result text's length, or toolUseResult.persistedOutputSize with truncated
//	                               for an output saved to a file; duration_unknown (no per-call duration is logged)
//	tool_result (transcript)       the tool_result block: content (text blocks joined), is_error
//	session_end                    reason from the last response's stop reason (end_turn, max_tokens, refused, else aborted);
//	                               totals summed from the events; duration: last − first timestamp
//	subagents                      <session>/subagents/agent-<id>.jsonl, each its own session linked by tags
//
// Known and skipped on purpose: attachment (rendered reminders, prompt
// snapshots), api-request-blob, queue-operation, atis-latch, last-prompt,
// tools-used, cost-state, system, summary, file-history-snapshot,
// progress, custom-title.
//
// What a Claude Code transcript cannot tell us: how long a tool call ran
// (only the time its result was logged, which includes permission checks,
// hooks and the wait for parallel siblings); hook runs (no record); the
// exact request bytes and the system-reminder attachments' place in each
// request (the messages are rebuilt from the user records, so
// message_hashes are of that rebuild, not of the bytes sent); how long a
// failed attempt took; time to first token; subagents of versions
// that wrote them into the session file (isSidechain records there are
// skipped).
//
// # Codex (0.171; ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl)
//
//	trajectory field               Codex line and field
//	session_start.harness_version  "codex " + session_meta.cli_version
//	session_start.provider         "openai"
//	session_start.model            turn_context.model
//	session_start.mode             headless when session_meta.originator is codex_exec, else interactive
//	session_start.permission_mode  bypass when turn_context has approval_policy never and sandbox danger-full-access, else default
//	session_start.system_prompt    session_meta.base_instructions.text and the developer messages before the first response
//	session_start.tools            not logged: empty, with tools_unknown (no catalog is made up from the calls seen;
//	                               hallucinated_tool then uses the calls Codex answered not_found)
//	session_start.workspace        session_meta.cwd
//	session_start.tags             source=import, client, client_version, source_session (session_meta.id)
//	model_request (one per response)  ts: the last input item before the response; new_messages: the user and later
//	                               developer messages and function_call_output items since the previous response
//	model_response.content         the output items of one response: message (assistant) → text, reasoning summary → thinking,
//	                               function_call / custom_tool_call / local_shell_call → tool_use (call_id, name, arguments)
//	model_response.stop_reason     not logged: tool_use when the response has calls, else end_turn (raw left empty)
//	model_response.usage           token_usage_record.usage (else event_msg token_count last_token_usage): input_tokens minus
//	                               cached_input_tokens and cache_write_input_tokens, output_tokens, cached → cache_read,
//	                               cache_write → cache_creation; a response ends at its token_usage_record
//	model_response.duration_ms     0: the rollout does not log when a request was sent
//	tool_call (inferred)           each call item: call_id, name, input (arguments when a JSON object, else {"arguments": text};
//	                               a custom tool's input as {"input": text})
//	tool_success/tool_failure (inferred)  tooloutcome.Codex of the output: its header's exit code (non-zero → tool_error
//	                               exit:N), "unsupported call" → not_found, unparsable arguments → invalid_input, the approval
//	                               policy's refusal → permission_denied (with a permission_deny: non_interactive when headless);
//	                               where that leaves it unknown, the exit code of item_completed CommandExecution (or
//	                               exec_command_end), else for a command tool with no completion event tool_error not_run
//	tool_end                       duration_ms: the header's Wall time (observed: transcript), not the CommandExecution's own
//	                               duration, a few µs for a command that ran for seconds; otherwise duration_unknown;
//	                               truncated when Codex cut the output ("Warning: truncated output")
//	tool_result (transcript)       function_call_output.output (text, or an object's output/content) after its "Output:" line
//	model_error                    task_complete's error (other than a cut reply): a model_request with a model_error of
//	                               the kind codex_error_info names and no model_response; a reply cut at max_output_tokens
//	                               is the last response's stop_reason max_tokens
//	session_end                    end_turn after task_complete and a final answer; totals summed from the events
//
// Known and skipped on purpose: world_state, compacted, and the event_msg
// types other than those above.
//
// What a Codex rollout cannot tell us: the tool catalog (a call to a tool
// Codex does not have is known only by Codex's not_found answer); stop
// reasons but a cut reply's;
// when each request was sent, so model durations (task_complete's
// duration and time to first token cover a whole task); permission
// decisions in exec mode (approval requests appear only interactively and
// are not mapped; a command the sandbox refused shows only as its failing
// exit code; one Codex's approval policy refused only by its wording);
// the duration of a call whose output has no header;
// subagents, which this importer does not link.
package importer
