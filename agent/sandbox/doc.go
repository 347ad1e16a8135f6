// Package sandbox confines every process a tool starts with the kernel,
// so that what a command may change does not depend on how well the
// permission chain understood its text. The chain decides what to ask;
// the sandbox is the guarantee, in every permission mode (bypass skips
// the questions, never the sandbox), in replays and in evals.
//
// On Linux it is built on Landlock, which restricts the calling thread
// and everything it starts. A tool's process is therefore not started
// directly: Start hands it to the session's spawner, a process that was
// started once, by the session's first tool process, as a re-exec of the
// running binary with the hidden subcommand ExecArg (`retrace
// __sandbox-exec PLAN -- retrace __sandbox-spawner`), which restricted
// itself and then executed the spawner (SpawnerArg). The spawner forks
// and executes each process it is sent over its socket (argv, env,
// directory, process group, and the standard files as SCM_RIGHTS), so the
// process inherits its restrictions, and does so with CLONE_PARENT, so
// that the process is retrace's child, which retrace waits for and kills
// like any other. The package's init runs the re-exec and the spawner,
// so retrace and every test binary that links the package can be the
// re-exec target without wiring.
//
// The re-exec, in order: joins the session's pids and memory cgroups (a
// fork bomb exhausts its own limit, not the machine), makes the file
// system read-only but the writable directories in a mount namespace of
// its own (as root), sets no_new_privs,
// drops every capability (bounding, ambient, inheritable, permitted,
// effective) and locks the securebits, so a command holds none even when
// retrace runs as root, and enforces the Landlock ruleset: read
// everywhere except the secret paths (SecretPaths under the home
// directory, .env* files), write only the workspace (in workspace-write
// mode), the session's private temporary directory and the trusted
// writable extras; no TCP connect or bind unless the policy allows the
// network or a port; and, from Landlock ABI 6, no signal or abstract
// socket towards a process outside the sandbox. Each call's processes
// are forked from a thread in a Landlock domain of their own nested in
// the spawner's, so they cannot signal the spawner or another call's
// processes. A spawner that died is replaced for the next process, and
// so is one whose mount namespace no longer matches the paths it was
// made from (mountKey); a process is never started outside it.
//
// Landlock only grants. To deny a secret path while granting the rest,
// the plan grants each directory on the way to a secret only the right
// to be listed and covers its other entries one by one (readRules); the
// plan is computed once per session and written to the private
// directory, which the re-exec reads.
//
// Where the kernel cannot sandbox (no Landlock, an ABI older than MinABI)
// New still returns a Sandbox, which refuses every process with an
// *UnavailableError saying why and how to opt out; Info records it for
// session_start. Nothing runs unsandboxed silently: ModeOff, the only way
// to run without the sandbox, comes from trusted configuration or
// --no-sandbox and is recorded too.
//
// A refused write is an error of the program that tried it. Refused reads
// the failed command's output (and the command's known write targets)
// for a refused-access error on a path outside what is writable, so that
// the executor can record it as permission_deny with source sandbox and
// tell the model what is writable. docs/sandbox.md describes the limits.
package sandbox
