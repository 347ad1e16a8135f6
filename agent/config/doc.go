// Package config reads the runtime's configuration file, retrace.yaml: the
// permission policy, the hooks, the session limits, the MCP servers, the
// in-loop defenses turned on or off and prompt caching,
// each owned by its own package and embedded here under its key. Unknown keys are errors that name the key
// and its line, because a misspelt "deny:" silently ignored is a policy
// that silently does not apply.
//
// # Trust
//
// A configuration file can widen what the agent may do (a permissive mode,
// allow rules, higher limits) and run code (hooks, MCP servers), so where a
// file comes from decides what it may say. The user's own files are
// trusted: the file given with --config, and retrace.yaml in the user's
// configuration directory (UserFile: $XDG_CONFIG_HOME/retrace/retrace.yaml
// or ~/.config/retrace/retrace.yaml on Linux, ~/Library/Application
// Support/retrace/retrace.yaml on macOS). A workspace is not: a cloned
// repository's retrace.yaml was written by whoever wrote the repository, and
// a recording someone sent carries the retrace.yaml of their workspace.
//
// Resolve layers the sources. The trusted base is the --config file when
// one is given, else the user's file when it exists, else the defaults.
// The workspace's retrace.yaml is layered over it with Restrict: its deny
// and ask rules, disallowed tools, protected paths and the defenses it
// turns on are added, its mode
// applies only when it is at least as strict as the trusted one (plan >
// default > accept_edits > bypass; the stricter wins), and its limits only
// when they are lower. Everything else it asks for — allow rules, hooks,
// MCP servers, a more permissive mode, higher limits, a defense turned
// off — is refused with an
// *UntrustedError that names each setting's file, line and field and says
// how to trust it. With Sources.TrustWorkspace (--trust-workspace) the
// workspace's file is layered like a trusted one instead (Overlay: lists
// are added, the settings it gives replace the base's). A workspace file
// that is itself the --config file is read once, as trusted.
//
// Resolve also records in Resolved.Sources which layer each setting came
// from (the defaults, or a file's "path:line"), and Effective encodes the
// result as session_start records it (retrace.yaml's keys as JSON, zero
// values and the home directory left out, secret headers and environment
// values redacted), so that a replay starts from exactly what the session
// ran under.
//
// A replay resolves through the same function: Sources.Recorded is the
// recording's configuration, applied as far as its Trust allows (all of
// it; the user's own recording without its hooks and MCP servers; or, for
// anyone else's, through Restrict with accept_edits as the ceiling), and
// the --config file is layered over it as the what-if, whose changed
// settings Resolved.WhatIf lists. What was left out is in Resolved.Refused,
// reported, not fatal.
//
// The replay section (Replay: normalisation rules and per-tool comparison
// levels) is layered as it is by both Overlay and Restrict: it only
// loosens how two sessions are compared, runs nothing and permits
// nothing, and a replay's report names every rule that applied with its
// file and line, so a rule that hides a change is visible.
//
// The cache section (Cache) turns prompt caching on or off and sets its
// ttl; caching is on when no file says otherwise. Overlay replaces what a
// trusted file sets; Restrict lets a workspace file turn caching off or
// shorten the ttl, which only keeps less of the session at the provider,
// and refuses the reverse.
package config
