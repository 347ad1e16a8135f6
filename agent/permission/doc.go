// Package permission decides whether the agent may run one tool call: allow
// it, ask the user, or deny it.
//
// The decision is a chain of steps where the first step that decides wins,
// so the order of the steps is the security semantics. As
// implemented, and tested pair by pair in chain_test.go:
//
//  1. a PreToolUse hook's deny;
//  2. deny rules (for bash also Edit/Write rules on the paths it writes and
//     Read rules on the paths it reads);
//  3. hard-blocked dangerous commands, and bash commands that cannot be
//     parsed (what cannot be parsed cannot be checked);
//  4. disallowed tools;
//  5. path validation's denials: a write whose target, resolved as the tool
//     will open it, is outside the workspace or cannot be resolved, is a
//     git hook (.git/hooks, or the repository's core.hooksPath) or git's
//     configuration (code git runs later), or is a
//     regular file with more than one hard link (the same file as another
//     name, which may be outside the workspace);
//  6. a PreToolUse hook's ask;
//  7. the session's memory of this exact call being approved by a person;
//  8. path validation's questions: reads outside the workspace, reads of
//     secrets (~/.ssh, .env, keys), bash paths only known at run time;
//  9. a PreToolUse hook's allow, which still asks for a protected path;
//  10. ask rules;
//  11. the bash read-only fast path (never for a command with write
//     targets or with writes only its run will show);
//  12. protected paths such as .git/HEAD, which need confirmation even in
//     bypass mode (writes to .git/hooks and .git/config are denied at
//     step 5);
//  13. bypass mode;
//  14. allow rules;
//  15. plan mode, which denies what is not read-only;
//  16. the read-only tool auto-allow;
//  17. accept_edits, for the built-in file tools' writes inside the
//     workspace (never bash);
//  18. finally "ask", so that whatever no step covers fails closed.
//
// Steps 1 to 5 are the hard stops: no hook answer, remembered approval,
// mode or allow rule comes before them, so none can release them. A hook
// may skip the questions of rules and modes (steps 10 and later) but not
// the person's questions of steps 8 and 12. Writes outside the workspace
// are denied in every mode, bypass included; the tools refuse them too.
//
// How bash commands are classified is described in docs/permissions.md.
//
// Every path, the file tools' and the paths a bash command reads and
// writes (shell.Analysis Reads and Writes), is resolved with
// workspace.Root.Resolve, the same function the tools open files with, so
// the path that is checked is the path that is opened.
//
// Bash calls are analysed with package shell: a deny or ask rule matching
// any simple command of a compound command (looking through sudo, env,
// timeout and other wrappers) applies to the whole call, while an allow
// rule applies only if every simple command is allowed.
//
// The Checker also remembers, per exact input, the calls a person allowed,
// and counts denials per exact input: after FuseThreshold denials of the
// same call its fuse trips and further checks ask the user instead of
// letting the model retry in a loop. Whether an ask reaches a
// person is the executor's business: headless, it denies.
package permission
