// Package executor runs the tool_use blocks of one assistant turn through
// its eleven stages (listed below) and returns the tool_result blocks for the
// next user message, emitting every event of the trajectory on the way.
//
// The model only asks; the executor does. For each call it looks
// the tool up (an unknown or not-yet-loaded tool is an is_error result that
// says what to do next, never an exception), runs the PreToolUse hooks,
// walks the permission chain, validates the input against the tool's JSON
// Schema, snapshots the files the call will change, runs the tool with a
// timeout and cancellation, shapes the output (explicit text for empty
// output; head 70 % / tail 30 % with the full output spilled to the blob
// store over a tool's limit, in characters or, for Spec.ResultTokens, in
// estimated tokens), runs the PostToolUse hooks (an MCP tool's get the raw
// output, a built-in tool's what the model sees) and serialises the
// model-side result. Calls are partitioned by greedy contiguous merging of
// concurrency-safe calls; safe batches run in a bounded pool,
// the rest one at a time in the model's order, and context modifiers are
// applied in the calls' original order. A failed bash call skips the
// later bash calls of the turn, but no other tool. A user abort
// stops everything and still gives every call exactly one result.
//
// Every path that produces a result ends in one function, finish, which
// emits tool_success or tool_failure with the failure kind its caller gave,
// then tool_end with the tool's own duration: no path can skip
// an event, and the trajectory invariants checker verifies it in the tests.
//
// Nothing runs unrecorded: before a call's PreToolUse hooks, before a
// person is asked to confirm it, before the tool and before its
// PostToolUse hooks, the executor asks Config.RecordErr whether the
// events so far are on disk. Once the recorder has failed to write, the
// call ends there, as aborted with error code RecordFailedCode (its
// PostToolUse hooks are skipped; the tool's outcome is still what is
// recorded), and so does every later call.
//
// Every final denial also goes through one function, deny, which counts it
// for the permission checker's denial fuse and, at the denial
// that trips the fuse, records a denial_fuse defense_trigger with what the
// fuse does from then on: needs_confirmation when the call came through an
// ask (later attempts go to a person), continue when the chain denied it
// outright (a deny rule or a hard block stays a deny and nothing is asked;
// the model is told to stop retrying). Count is the fuse's triggers in the
// session, and the evidence names the tool and the deciding source.
//
// Stream is the scheduler of a streamed turn: calls are offered
// as their tool_use blocks complete and pass through four states —
// queued, executing, completed, yielded. A call starts when
// nothing runs, or when it and everything running are concurrency-safe, and never before an earlier call; it then runs call.run, the
// same pipeline as Execute's, so hooks fire once and the single exit is
// the same. Results are yielded in call order. A repeated tool_use
// id is matched to the call already offered, a tool_use without complete
// input is never taken, and when the reply fails the queued calls are
// abandoned (tool_failure aborted, error_code stream_abandoned) while the
// running ones finish. A tool_call recorded before its model_response
// carries stream_offset_ms, the time since the request.
package executor
