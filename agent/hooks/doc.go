// Package hooks runs the commands a user configured around tool calls:
// PreToolUse hooks before the permission chain and
// PostToolUse hooks after the result is shaped (⑨).
//
// The wire protocol is Claude Code's, so hooks users already have keep
// working: each hook is run with /bin/bash -c in the workspace, gets one JSON
// object on stdin (session_id, cwd, hook_event_name, tool_name, tool_input,
// tool_use_id, and for PostToolUse tool_response), and answers with its exit
// code and, optionally, a JSON object on stdout. Exit 0 with empty stdout
// means continue; exit 0 with JSON may block the call ("decision":"block"),
// rewrite its input (hookSpecificOutput.updatedInput), give the permission
// chain a decision (hookSpecificOutput.permissionDecision) or add context for
// the model; exit 2 blocks with stderr as the reason.
//
// A hook is the user's code, so it is treated as untrusted and fallible: any
// other exit code, unparsable output, a crash or a timeout is recorded as an
// error or timeout run and the call proceeds as if the hook had said
// continue. A broken hook must never stop the agent; only a hook that
// deliberately blocks can. A hook that outlives its timeout is killed with
// its whole process group, and its stdout is capped so it cannot exhaust
// memory.
//
// Several hooks may match one call. They run one after another in config
// order: a PreToolUse block stops the chain, an updatedInput feeds the next
// hook, and the strictest permission decision wins (deny > ask > allow).
// Whether the input changed is decided by deep equality of the decoded JSON,
// never by bytes, because hooks commonly re-serialise an input they did not
// change and the model must be told only about real rewrites.
//
// Firing each hook exactly once per call is the executor's
// contract: it calls Pre and Post once per call, and this package never
// retries a hook.
package hooks
