// Package trajectory is retrace's one shared contract: the JSONL format in
// which every agent session is recorded, and the code that writes, reads and
// checks it. The runtime emits into a Sink; the recorder writes lines with
// AppendEvent; replay, metrics, detectors and reports read them with a
// Decoder; `retrace validate` runs ValidateFile. Nothing else defines the
// format, and the JSON Schema in schema/v1.json is generated from these Go
// types (go test ./trajectory -run TestSchemaFileIsUpToDate -update).
//
// # Lines
//
// A trajectory file holds one session, one JSON object per line. Each line
// starts with the envelope — v (schema version), session, seq (1, 2, 3, …
// without gaps), ts (RFC 3339, UTC), turn (0 before the first model request)
// and type — followed by the fields of the type's payload, flat, so that
// `jq .tool_use_id` and a single column schema in DuckDB both work. A field
// name shared by two payloads has the same JSON type in both.
//
// # Event types
//
//	session_start      harness, provider/model, modes, config hash (see SessionStart.ConfigHash for what it covers), base system prompt and its hash as sent, tool catalog, defenses enabled, every limit and price, workspace snapshot
//	workspace_snapshot the workspace snapshot's manifest reference, file and byte counts, taken after session_start is on disk
//	model_request      hashes of system, tools (in order) and every message; full content of only the messages added since the previous request
//	model_response     content blocks as received, stop reason (normalised and raw), usage, ttft_ms, duration_ms
//	model_error        a failed model call attempt: error_kind, status code, attempt, will_retry
//	tool_call          the executor took up a tool_use: input, index in the response, batch, concurrency_safe, stream_offset_ms (started while the reply streamed)
//	hook_run           one hook run: phase, outcome, input_changed, duration_ms, exit_code, stderr (redacted, cut to 2 KB)
//	permission_allow   /permission_prompt /permission_deny: source and chain step of the decision, needed_prompt, rule
//	tool_success       the call succeeded
//	tool_failure       the call failed: failure_kind given at the call site, error_code (a label)
//	tool_end           the tool's own duration_ms, output bytes, truncated, spill
//	tool_result        the model-side text, is_error, the user-side display mode
//	defense_trigger    a defense acted (not merely evaluated): defense, action, evidence
//	reminder           a harness message injected into the conversation
//	compaction         the loop relieved context pressure
//	session_end        end reason, turns, token and call totals, recorder errors
//
// Events about a tool call that retrace did not run itself (an imported
// transcript) say where they come from in the optional observed field:
// transcript when the client's own transcript states the event, inferred
// when it was derived from what the transcript shows. A tool_end whose
// source tells no run time for the call has duration_unknown, and its
// duration_ms of 0 is then no measurement.
//
// # Invariants
//
// Checker verifies what the runtime guarantees: seq strictly increasing from
// 1 without gaps; one session_start first and at most one session_end last;
// every tool_call followed by exactly one tool_success or tool_failure and
// then exactly one tool_end; every tool_use of a model_response answered by
// exactly one tool_result before the next model_request, unless a
// defense_trigger naming it took it out of the flow; session_end totals that
// match the events.
//
// # Strictness and versions
//
// Closed sets (event type, failure kind, permission source, chain step,
// defense, stop and end reasons, display mode, …) are string types with a
// Valid method; the decoder rejects unknown values, unknown fields, missing
// required fields (those without omitempty) and any v but Version. Adding a
// field or a closed-set value is therefore a new Version. Labels — error
// codes, reminder kinds, hook names, tag and evidence keys — must pass
// IsLabel, so a path, a command or a message can never become a metric
// label (seed §14.5). Every error is a *LineError ("file:line: reason")
// wrapping one of the sentinels, for errors.Is. A last line torn by a crash
// mid-write is a Warning, never an error: the events before it are intact.
package trajectory
