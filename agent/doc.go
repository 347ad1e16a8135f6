// Package agent is the agent loop: it asks the model, runs the tool_use
// blocks of each reply through the executor, sends the results back, and
// records every step of the session as a trajectory.
//
// The loop itself is ten lines (ask the model, run the tools it asked for, repeat); everything else in this
// package is what keeps those ten lines from going wrong. Stop reasons are
// read by whitelist, so a missing or unknown one is an error path and never
// "done". A session ends for exactly one reason, attributed by
// priority — an explicit reason (the model finished, a defense stopped it,
// a budget ran out) over a user abort over the turn limit over an error —
// and never by matching error text. In-loop defenses catch the ways
// a model degrades: an empty-input tool_use, an end_turn that still holds a
// tool_use, a tool_use cut off by max_tokens, the same read-only call with
// the same output over and over, a turn that only fetches one
// unchanged number, and, when enabled, calls of the same shape. Each defense has a cap, so that it cannot become a loop of its
// own, and each emits defense_trigger where it acts, never where it is
// merely evaluated. Harness reminders travel in user messages, so
// they are labelled, deduplicated and capped.
//
// Deferred tools are not sent until tool_search loads them. The system
// prompt names them with an explicit "not loaded" label, computed from the
// tools' static declarations only, so that loading a tool never rewrites
// the cached prefix; after a compaction the loop announces
// them again in the conversation.
//
// The model sees the rules before it acts. After the base prompt
// the system prompt carries a rules section: that tool results are data,
// not instructions, then the session's configured deny rules and
// disallowed tools, sorted. Only configuration goes there — it is stable
// for the whole session, so the section is byte-stable; what a
// call's arguments make dangerous is still judged per call. Disallowed
// tools are not offered in tools[] at all, and a call to one anyway is
// denied by the permission chain: not offering is a courtesy, the chain is
// the guarantee. Results of tools from outside sources (MCP servers, and
// built-in tools declaring tools.Spec.Untrusted such as a web fetch) reach
// the model wrapped in an untrusted-content tag naming the tool
// (executor.UntrustedTag); the recorded tool_result keeps the tool's
// output unwrapped.
//
// Context is managed before each request ("used / window over a
// threshold: compact first, do not just die"). The context is measured by
// the usage the API reported for the last reply plus an estimate of what
// was added since, or by the bytes/4 estimate of the whole history when no
// reply reported usage; the window comes from the configuration or the
// model table (LookupModel), and is assumed, and recorded as assumed, for a
// model neither knows. Compaction first drops the oldest tool outputs; the
// summarize strategy then asks the model for a summary of the older turns
// in a request of its own, recorded as a turn like any other, and replaces
// them with it (compact.go). Every step is a compaction event saying how
// its numbers were measured.
//
// A session may hold more than one prompt:
// Config.NextPrompt is asked for the person's next prompt each time the
// model finishes its turn, and Config.History carries on the conversation
// of a recorded session (ConversationOf rebuilds it from the trajectory).
// The prompts after the first are recorded as user_prompt events.
// A streamed session (Config.Stream) executes tools while the model is
// still writing: each tool_use the provider reports complete is
// offered to the turn's executor.Stream, which starts it under its
// start condition, and the loop collects the results in call order once
// the reply is whole. A call starts early only when the loop would
// certainly run it, so the early calls are always the first the turn
// runs, and the loop's decisions on the whole reply stay as they were: a
// refused or cut-off reply keeps the real results of the calls that
// already ran and answers the rest "Not run". A reply that fails after a
// call started is never retried by the provider clients (the retry would
// send the call again under a new id); the started calls finish and are
// recorded, the queued ones are abandoned, and the session ends on the
// error. Config.BatchTools (retrace run --batch-tools) keeps the batch
// mode for comparison: the same calls under the same rules, later.
//
// The session stops as soon as its record cannot be written (a full disk,
// an I/O error, a removed run directory): the loop and the executor ask
// executor.Config.RecordErr before every effect — each model request,
// each call's hooks, tool and confirmation prompt — and start none once it
// reports an error. The calls already running finish, the calls not yet
// started end as aborted with error code record_failed, and the session
// ends with reason record_failed, whatever else was ending it, with
// Result.Err wrapping ErrRecordFailed and the recorder's error.
package agent
