// Package procgroup ties the processes a session starts (bash commands,
// hooks, stdio MCP servers) to the life of retrace, so that when retrace
// dies, by SIGKILL included, nothing it started keeps running and changing
// files that no trajectory records.
//
// A process's parent-death signal (Linux's PR_SET_PDEATHSIG, which Go sets
// with SysProcAttr.Pdeathsig) is not enough on its own: it reaches only the
// direct child, not the subshells and background jobs a command line
// starts, and it fires when the OS thread that started the child exits,
// not the process (golang/go#27505). So every command runs in a process
// group of its own whose first member is a sentinel: a /bin/sh that does
// nothing but wait on a pipe whose write end only retrace holds, and kills
// its whole group (itself included) when that pipe closes. The kernel
// closes the pipe when retrace exits for any reason, so the group dies with
// it; retrace closes it itself to kill a group on purpose. The sentinel
// also keeps the group id reserved: it is reaped only after the last kill
// sent to its group, even when something else killed it first, so no kill
// can reach an unrelated process that reused the id.
//
// When a command ends on its own, Release lets its group go: the sentinel
// exits once no process is left in the group but itself, and stays while
// background children run (a `server &`), so that they too die with
// retrace, whenever that is. Release lists the groups' members from /proc
// at most once a second, so a sentinel may outlive its group's last child
// by about that long. Without /proc (other Unix systems) a released
// group's sentinel stays until retrace exits: one sleeping sh per command. On
// systems without process groups (Windows), Start does nothing and only
// the command itself is killed on cancellation; its children may outlive
// retrace.
package procgroup
