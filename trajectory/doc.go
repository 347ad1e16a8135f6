// Package trajectory is retrace's one shared contract: the JSONL format in
// which every agent session is recorded, and the code that writes, reads and
// checks it. The runtime emits into a Sink; the recorder writes lines with
// AppendEvent; replay, metrics, detectors and reports read them with a
// Decoder; `retrace validate` runs ValidateFile. Nothing else defines the
// format, and the JSON Schema in schema/v2.json is generated from these Go
// types (go test ./trajectory -run TestSchemaFileIsUpToDate -update);
// schema/v1.json is version 1's, kept as released.
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
//	session_start      harness, provider/model, modes, config hash (see SessionStart.ConfigHash for what it covers), base system prompt and its hash as sent, tool catalog, defenses enabled, every limit and price, workspace snapshot, the sandbox (mode, Landlock ABI, network, limits, or why it was unavailable); the effective configuration (config, redacted) with the layer each setting came from (config_sources), and the recording user's signature
//	workspace_snapshot the workspace snapshot's manifest reference, file and byte counts, taken after session_start is on disk
//	model_request      hashes of system and tools (in order); the messages as a change since the previous request (see Linear requests)
//	model_response     content blocks as received, stop reason (normalised and raw), usage, ttft_ms, duration_ms
//	model_error        a failed model call attempt: error_kind, status code, attempt, will_retry
//	tool_call          the executor took up a tool_use: input, index in the response, batch, concurrency_safe, stream_offset_ms (started while the reply streamed)
//	hook_run           one hook run: phase, outcome, input_changed, duration_ms, exit_code, stderr (redacted, cut to 2 KB)
//	permission_allow   /permission_prompt /permission_deny: source and chain step of the decision, needed_prompt, rule; source and step sandbox when the kernel sandbox refused what a running call tried
//	tool_success       the call succeeded
//	tool_failure       the call failed: failure_kind given at the call site (unknown when it could not be classified), error_code (a label of a closed format, IsErrorCode)
//	tool_end           the tool's own duration_ms, output bytes, truncated, spill; the process id it started (pid); not_run (and no duration) when the tool never started
//	tool_result        the model-side text, is_error, the user-side display mode
//	defense_trigger    a defense acted (not merely evaluated): defense, action, evidence
//	reminder           a harness message injected into the conversation
//	compaction         the loop relieved context pressure
//	mcp_server         an MCP server changed state (pending, connected, failed, reconnecting, reconnected): its tools, the ones new to the session (added, announced to the model), reconnect attempt, error
//	compaction         the loop relieved context pressure: strategy, tokens before and after, how they were measured, the window
//	user_prompt        a person's prompt entering a session that has a conversation already (a follow-up, a continued session)
//	session_end        end reason, turns, token and call totals, recorder errors
//
// A session_end's reason is one of end_turn, stop_sequence, max_turns,
// max_tokens, token_budget, cost_budget, refused, stuck, aborted, error
// and record_failed. record_failed says the recorder could not write (a
// full disk, an I/O error, a removed run directory) and the runtime
// stopped before the next effect started instead of running it
// unrecorded: the calls that were running finished, none started after.
// It is in the file only when the recorder managed to write the last
// events after the failure (the space came back); otherwise the file
// stops at the failure, like a crash.
//
// Events about a tool call that retrace did not run itself (an imported
// transcript) say where they come from in the optional observed field:
// transcript when the client's own transcript states the event, inferred
// when it was derived from what the transcript shows. A tool_end whose
// source tells no run time for the call has duration_unknown, and its
// duration_ms of 0 is then no measurement. An imported session names the
// client's file it was read from in session_start's origin_file, and each
// event read from a line of it carries that line as origin_line, so a
// finding can cite the client's own file:line. A session whose source
// does not log the tool catalog says so with session_start.tools_unknown.
//
// A tool_failure of failure_kind unknown is a call whose outcome could not
// be classified from what was observed (a result on a wire with no error
// flag, in a wording no client classifier knows): it is never taken for a
// success, and says nothing more about why. Package tooloutcome holds the
// one classifier of each client's results that the wire recorder and the
// importers share.
//
// A call whose tool never started (denied, blocked by a hook, invalid
// input, an unknown tool, aborted before it began) has a tool_end with
// not_run and duration_ms 0: it is never a latency sample. Ran is the one
// rule of whether a call ran, which metrics' tool_calls.ran computes the
// same way; a file written before not_run is read by its failure kinds,
// an aborted call with exactly 0 ms being one that never started.
//
// # Linear requests
//
// A request resends the whole conversation, but a model_request records
// only what changed since the previous request of its session, so a file
// grows linearly with the turns (version 2; see Conversation):
//
//	messages_kept   how many leading messages of the previous request this one keeps unchanged (all of them while the conversation grows; fewer after a compaction or a rewrite; 0 first)
//	message_hashes  the Hash of each message after the kept ones
//	new_messages    the full content of the last len(new_messages) of them
//	prefix_hash     ChainHash over the hashes of all the request's messages, from EmptyPrefixHash
//
// The chain makes a request's prefix_hash depend on every message, so a
// reader verifies the whole prefix with one comparison (Checker reports a
// broken chain as a messages violation), two requests with equal prefix
// hashes send the same messages, and any prefix's hash is a step of the
// chain. Conversation.Next rebuilds each request's full message-hash list
// from the requests before it; every reader uses it rather than
// re-deriving the lists. A chain rather than one hash of the whole list
// because a writer extends it by the new messages only: hashing the full
// list per request would keep the quadratic cost the format removes.
//
// In version 1 message_hashes holds every message's hash and there is no
// messages_kept or prefix_hash; Conversation reads both.
//
// # Invariants
//
// Checker verifies what the runtime guarantees: seq strictly increasing from
// 1 without gaps; one session_start first and at most one session_end last;
// every tool_call followed by exactly one tool_success or tool_failure and
// then exactly one tool_end; every tool_use of a model_response answered by
// exactly one tool_result before the next model_request, unless a
// defense_trigger naming it took it out of the flow; session_end totals that
// match the events; no duration for a call whose failure kind never runs,
// and no not_run on a call that succeeded (ran); every tool_failure's
// error_code in the closed format of IsErrorCode (error_code: reported in
// files of every version, which the loaders still read); in version 2, model_requests whose messages_kept and
// prefix_hash chain (after an unreadable line the chain is not checked
// further, since a request may be lost in it).
//
// # Strictness and versions
//
// Closed sets (event type, failure kind, permission source, chain step,
// defense, stop and end reasons, display mode, …) are string types with a
// Valid method; the decoder rejects unknown values, unknown fields, missing
// required fields (those without omitempty) and any v but 1 and 2
// (MinVersion to Version); the writers write Version. Adding a field or a
// closed-set value is therefore a new Version, and an older version stays
// readable: v 1 lines decode into the same types (a v 1 model_request must
// not have the v 2 fields, a v 2 one must have prefix_hash). Labels — error
// codes, reminder kinds, hook names, tag and evidence keys — must pass
// IsLabel, so a path, a command or a message can never become a metric
// label. Every error is a *LineError ("file:line: reason")
// wrapping one of the sentinels, for errors.Is. A last line torn by a crash
// mid-write is a Warning, never an error: the events before it are intact.
//
// # Decoding speed
//
// Strictness does not go through reflection on the plain path: a fast
// decoder (fastdecode.go) decodes the payloads it can in the same pass that
// finds a line's members, and gives anything unusual to encoding/json,
// which then accepts or rejects it with the same error as always
// (FuzzFastDecoderAgreesWithReference). A Decoder hands its buffers on to
// the next one, so a corpus of many small files allocates about three
// objects per event (the payload, its lists and long strings);
// BenchmarkDecodeCorpus measures events per CPU second against the
// encoding/json decoder (SetReferenceDecoding).
package trajectory
