// Package shell analyses a bash command before the agent runs it, so that
// the permission chain and the scheduler can decide per call rather than per
// tool.
//
// The analysis parses the command with a real shell parser
// (mvdan.cc/sh/v3/syntax) and walks the syntax tree; it never matches the
// command text with regular expressions, because text matching misses
// compound commands (ls && rm -rf x), redirections (cat a > /etc/passwd),
// pipes into a shell (echo x | sh) and expansions (rm -rf $HOME).
//
// # What bash will run
//
// Every word is expanded statically before it is checked: quotes and
// backslashes are removed, line continuations joined, $'…' decoded, braces
// expanded (at most 256 words per word; more makes the word dynamic), and
// variables and arrays assigned earlier in the same command line
// substituted (X=rm; $X -rf /, a=(rm -rf /); "${a[@]}", ${x:1}), with
// splitting on IFS for unquoted ones (rm${IFS}-rf${IFS}/). $HOME expands
// to "~", and so do ${HOME%/}, ${HOME:?} and the other forms that cannot
// change it; other transformations of HOME and the XDG_*_HOME variables
// stay dynamic but are checked for danger as the directory they usually
// name (rm -rf "${XDG_CONFIG_HOME:-$HOME/.config}" is rm_root). A quoted
// "~" is a file named ~. A for loop over static words is
// checked once per word for danger. Nothing is run: command
// substitution, arithmetic and unknown variables leave a word dynamic.
// Wrappers are looked through (sudo, env, timeout, nice, nohup, command,
// builtin, exec, busybox, xargs, find -exec), and the scripts that other
// commands run are parsed in turn up to a depth of four: sh -c, bash -c,
// su -c, eval, trap, alias, watch, env -S, heredocs and here-strings fed to
// a shell, echo or printf text piped into a shell or into xargs, and the
// command lines programs run from their own options (tar --to-command,
// rsync -e, zip -TT, ssh -o ProxyCommand).
//
// # Dangerous classes
//
// Danger is set when the command falls in one of the classes listed as the
// Danger* constants (DangerClasses): rm_root, find_delete, mkfs,
// dd_device, device_write, fork_bomb, kill_all, setuid, download_exec,
// reverse_shell, credential_exfil, persistence, git_config_exec,
// chmod_root, mv_system, shutdown and unparseable. The permission layer
// denies such a command in every mode, bypass included, and tells the model
// Danger.Reason. A path operand that starts with a variable that may be
// unset counts as what it is when the variable is empty ("$DIR/" is /). A
// program name that stays dynamic is tried as each of a few dangerous
// programs (rm, chmod, dd, kill, git, sh…): if its arguments would be
// dangerous for one of them, the command is. A command that does not parse
// is unparseable, because bash would still run the lines before the error.
// Writing a git hook (.git/hooks/…) is persistence and writing
// .git/config is git_config_exec: code git runs later is hard-blocked,
// not asked about. git configuration given through the environment
// (GIT_CONFIG_COUNT/KEY_n/VALUE_n, GIT_CONFIG_PARAMETERS,
// GIT_CONFIG_GLOBAL, GIT_SSH_COMMAND…) is git_config_exec like git -c.
// Benign look-alikes (rm -rf ./build, chmod +x x.sh, curl -o f url without
// running f, echo "rm -rf /") are not dangerous.
//
// # Read-only
//
// Read-only is decided by a whitelist that fails closed: a command is
// read-only only when every simple command in it is a known read-only
// program whose options are checked (sed and awk programs are scanned for
// writes, pipes and system(); find has no -exec or -delete; tar only
// lists; git only reads and, where it could diff, says --no-ext-diff
// --no-textconv), and nothing else in the line can write or run code.
// These make a command not read-only: a background job (cmd &), which runs
// on after the call returns; an output redirection to anything but
// exactly /dev/null (descriptor duplications such as 2>&1 are fine);
// bash's network paths /dev/tcp and /dev/udp; command and process
// substitution, functions, coproc, eval, source, exec, interpreters;
// arithmetic on variables ($((x)), ((…)), let, [[ x -eq y ]], [[ -v ]],
// array subscripts and substring offsets), which can run code through
// a[$(cmd)]; ${x@P} and other transformations, and ${!x}; an assignment
// prefix or export other than LC_*, LANG, TZ, NO_COLOR and a few other
// display settings (a plain x=1 may also set a name with a lowercase
// letter); a program name given as a path (./ls); an argument known only
// at run time where it could be an option or a path; control characters;
// and programs that reach the network or a daemon or that a file of the
// workspace can make run code (go, npm, cargo, docker, make, git fetch,
// git diff without the two flags, gofmt, which writes telemetry). Version
// flags alone (--version) are read-only. A wrong "true" is a security bug
// and a wrong "false" only a prompt.
//
// Known limits: git read commands trust the repository's own
// configuration for core.fsmonitor (git status runs it) and
// log.showSignature (gpg); the pager never starts because the bash tool
// runs without a terminal. git status may rewrite the stat cache in
// .git/index, which changes no content. A glob in Reads must be expanded
// by the caller to check what it matches.
//
// # Paths for the permission layer
//
// Reads lists the path operands that read-only programs read and the
// inputs of < redirections; Writes lists the static files the command
// writes, through redirections or writing programs (cp, mv, rm, tee,
// sed -i, touch, ln, chmod, install, mkdir, truncate, dd of=, tar…) or a
// program's own output options (curl -o/-D/-c, wget -O/-o, sed w and
// s///w, find -fprint/-fprintf/-fls, sort -o, strace -o…); a hard link
// (ln without -s, cp -l, link) writes the file it links to as well;
// WritesFiles says that some step writes files by what it is, the one
// answer the low-yield-spin defense reads;
// WritesUnknown says that Writes may be incomplete (a dynamic target, a
// glob, xargs or find -exec feeding a writer, an unknown program). See the
// fields of Analysis for the exact contract, and docs/permissions.md for
// the classifications in plain words.
package shell
