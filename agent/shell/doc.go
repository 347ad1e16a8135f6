// Package shell analyses a bash command before the agent runs it, so that
// the permission chain and the scheduler can decide per call rather than per
// tool (seed §6.2, §8.4).
//
// The analysis parses the command with a real shell parser
// (mvdan.cc/sh/v3/syntax) and walks the syntax tree; it never matches the
// command text with regular expressions, because text matching misses
// compound commands (ls && rm -rf x), redirections (cat a > /etc/passwd),
// pipes into a shell (echo x | sh) and expansions (rm -rf $HOME). From the
// tree it lists every simple command, the files that output redirections
// write, whether the whole command is read-only, and whether it matches one
// of a short list of hard-blocked dangerous patterns.
//
// Read-only is decided by a whitelist that fails closed: a command that is
// not known to be read-only, a construct that can run arbitrary code
// (command or process substitution, eval, source, a pipe into a shell), a
// dangerous environment assignment (LD_PRELOAD, PATH…), an argument that could
// hide an option from the whitelist's checks, or a parse error all make the
// command not read-only. The answer is used to run calls in parallel and to
// skip a permission prompt, so a wrong "true" is a security bug and a wrong
// "false" is only a prompt.
package shell
