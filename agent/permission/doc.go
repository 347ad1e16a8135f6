// Package permission decides whether the agent may run one tool call: allow
// it, ask the user, or deny it (seed §8).
//
// The decision is a chain of steps where the first step that decides wins,
// so the order of the steps is the security semantics (seed §8.2): a
// PreToolUse hook's decision; the session's memory of calls a person
// allowed; deny rules; hard-blocked dangerous commands; disallowed tools;
// path validation (symlinks resolved, writes outside the workspace denied,
// secrets and reads outside it asked); ask rules; the bash read-only fast
// path; protected paths such as .git/hooks, which need confirmation even in
// bypass mode; bypass mode; allow rules; plan mode; the read-only
// auto-allow; accept_edits; and finally "ask", so that whatever no step
// covers fails closed. Deny rules, dangerous commands and path validation
// come before every mode and allow rule so that no configuration, hook or
// mode can release them.
//
// Bash calls are analysed with package shell: a deny or ask rule matching
// any simple command of a compound command (looking through sudo, env,
// timeout and other wrappers) applies to the whole call, while an allow
// rule applies only if every simple command is allowed.
//
// The Checker also remembers, per exact input, the calls a person allowed,
// and counts denials per exact input: after FuseThreshold denials of the
// same call its fuse trips and further checks ask the user instead of
// letting the model retry in a loop (seed §8.7).
package permission
