// Package recorder writes the trajectory of one agent session: it is the
// trajectory.Sink the runtime emits into, and the only code that writes
// trajectory files.
//
// Each session gets one file, <dir>/<session-id>.jsonl, created exclusively
// so that two sessions never share a file. Session ids start with the UTC
// start time, so listing a run directory in name order lists sessions in
// start order. The envelope (version, session, seq, time) is filled in under
// one mutex at one point, Emit, so seq numbers the lines of the file from 1
// without gaps even when parallel tools emit at once: a seq number is spent
// only on an event that was encoded.
//
// Lines are buffered (64 KiB) because most events come in bursts between
// long model waits. The buffer is flushed after every model_request, so
// everything that happened before the model is asked again is in the file
// while the model thinks, and flushed and fsynced after session_end and on
// Close. SyncOnSignal adds a flush and fsync when the process is told to
// stop, so an interrupted session keeps what it already emitted.
//
// Every line passes through a Redactor before it is written: known secret
// shapes (API keys, tokens, private keys, passwords in URLs, credential
// headers, env-file secrets) and any user patterns are replaced by
// [REDACTED:<name>]. The redaction sits in this facade rather than in the
// callers because a rule callers may skip is a rule that eventually leaks
// (seed §14.5): there is no way to write a line around it. The blob store
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
// manifest blob whose reference goes into session_start, and
// RestoreWorkspace recreates it elsewhere, refusing any entry that would
// land outside its destination.
//
// Emit never returns an error and never panics: telemetry must not break the
// main flow. Problems (encode failures, write failures, events emitted after
// Close) are counted in Stats, reported in session_end's recorder_errors and
// returned by Close for the CLI to show.
package recorder
