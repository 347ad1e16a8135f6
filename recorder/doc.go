// Package recorder writes the trajectory of one agent session: it is the
// trajectory.Sink the runtime emits into, and the only code that writes
// trajectory files.
//
// Each session gets one file, <dir>/<session-id>.jsonl, created exclusively
// so that two sessions never share a file. It is made under a hidden name
// and takes its real one with its first write, which holds session_start
// whole, so no trajectory file is ever empty: a process that dies before
// its first event leaves only a hidden .pending file that no reader looks
// at. Session ids start with the UTC start time, so listing a run
// directory in name order lists sessions in start order. The envelope
// (version, session, seq, time) is filled in under one mutex at one point,
// Emit, so seq numbers the lines of the file from 1 without gaps even when
// parallel tools emit at once: a seq number is spent only on an event that
// was encoded.
//
// # Durability
//
// The recorder writes ahead: an event that announces or completes an effect
// is in the file, written with write(2), before Emit returns, and the
// runtime emits it before the effect starts (or as soon as it ended). These
// are session_start, model_request (before the request is sent),
// model_response and model_error, tool_call (before any hook or the tool
// runs), permission_allow, permission_prompt and permission_deny (before the
// tool runs or a person is asked), tool_end (as soon as the call ended,
// after its PostToolUse hooks), defense_trigger, compaction and
// session_end. The other five types (tool_success, tool_failure, hook_run,
// tool_result, reminder) wait in a 64 KiB buffer for the next event that is
// written ahead, which the runtime always emits before the next effect
// starts: an outcome is followed at once by its tool_end, a hook_run by the
// decision or the tool_end of its call, a tool_result or reminder by the
// next model_request or session_end. Batching them saves a system call each
// and never lets a side effect precede its events in the file; nor does the
// live transcript show any event that is not yet in the file.
//
// What that promises:
//
//   - If retrace is killed (SIGKILL, a panic, the OOM killer), the file
//     holds every event up to the last one written ahead before the kill;
//     only batched events emitted after it are lost, and no effect started
//     after them. So a tool whose side effect happened has its tool_call
//     and permission decision in the file, and a call that ended (its
//     PostToolUse hooks included) has its outcome and tool_end, unless the
//     kill fell in the microseconds between the call returning and
//     tool_end's write. The last line is torn only if the kill interrupted
//     a write, which readers report as a warning; no complete line is lost
//     and seq has no gaps. Written bytes are in the kernel's page cache, so
//     they survive the process.
//   - If the machine loses power or the kernel crashes, only what was
//     fsynced is certain: session_end is fsynced, and so are Sync, Close and
//     SyncOnSignal (SIGINT, SIGTERM). Events written since the last fsync
//     may be lost, how many and which depends on the file system. Fsyncing
//     every event would add a disk flush, often milliseconds, to every tool
//     call; a recorder whose files already survive the process's crash
//     does not pay that by default.
//
// When the recorder cannot write (a full disk, an I/O error) the error is
// sticky: Err returns it from then on, and the runtime checks Err before
// every effect (a hook, a tool, a model request) and starts none after a
// failure. A tool never runs without its tool_call in the file. Err also
// notices a file whose directory was deleted, which write(2) does not
// report. The session then ends with reason record_failed. What could not
// be written since the failure (the rest of a torn line, the outcomes of
// the calls that were running, session_end) is kept, up to 1 MiB, and
// written in one go with session_end and at Close, so the file ends whole
// when the space came back; otherwise it stops at the failure, maybe in a
// torn line, which readers take for a crash. A file that never got its
// first line keeps no name (see above), so no path is reported for it.
//
// The tool processes a session starts (bash commands, hooks, stdio MCP
// servers) run in process groups tied to retrace's life (package
// agent/procgroup), so when retrace dies, by SIGKILL included, they die
// with it, their children too, and nothing keeps running unrecorded.
//
// Every line passes through a Redactor before it is written: known secret
// shapes (API keys, tokens, private keys, passwords in URLs, credential
// headers, env-file secrets, secret-named JSON and YAML fields) and any
// user patterns are replaced by [REDACTED:<name>], matched on decoded
// values too: a key spelled with JSON, shell or URL escapes, or in base64,
// is found (redact_hidden.go; docs/secrets.md lists the forms tested). The redaction sits in this facade rather than in the
// callers because a rule callers may skip is a rule that eventually leaks: there is no way to write a line around it. The blob store
// redacts every blob it stores the same way; a caller that shortens text
// (a truncated output, a summary) redacts it first with Blobs.Redact, since
// half a secret is no longer recognised. Trajectory files and blobs are
// created 0600 in directories created 0700.
//
// Label fields (error codes, reminder kinds, hook names, evidence and tag
// keys) must be short tokens from closed sets, never paths, commands or
// messages. A label that fails trajectory.IsLabel is written as
// "invalid_label" and counted, so free text never reaches the file through a
// label, and the caller's payload is left untouched.
//
// Beside each trajectory file, <session-id>.blobs/ is a content-addressed
// store (Blobs) of spilled tool outputs, the files saved before a call
// changed them, and the workspace snapshot taken at session start:
// SnapshotWorkspace records the tree (gitignore-aware, symlinks recorded and
// never followed, a size cap that warns instead of silently truncating,
// files that hold secrets listed as SkippedSecret rather than stored) as a
// manifest blob whose reference goes into the workspace_snapshot event that
// follows session_start, and
// RestoreWorkspace recreates it elsewhere, refusing any entry that would
// land outside its destination.
//
// Emit never returns an error and never panics: telemetry must not break the
// main flow. Problems (encode failures, write failures, events emitted after
// Close) are counted in Stats, reported in session_end's recorder_errors and
// returned by Close for the CLI to show; a write failure is also what Err
// returns, which is how the runtime learns it must stop.
package recorder
