// Package harness builds agent sessions: from a declared Spec — the
// workspace, the resolved configuration (permission rules and mode, hooks,
// MCP servers, limits, defenses), the model, the system prompt and task,
// the tool catalog and where the session is recorded — Build makes the
// tool registry, the permission checker, the hook runner, the MCP
// connections, the executor's configuration, the recorder and the
// agent.Config, and Session.Close releases them again.
//
// It is the one place a session is assembled. `retrace run` turns its
// flags into a Spec, `retrace replay` turns a recording's session_start
// plus a what-if configuration into one, and the test suites and the eval
// runner do the same, so that the copies cannot drift apart: a setting
// that changes a recorded session is a Spec field, and the replay sets it
// from what the recording says.
//
// The inputs a Spec is made of are shared too: the configuration is
// layered by agent/config.Resolve for run, eval and replay alike; a
// continued session's conversation comes from LoadContinuation for
// retrace run --continue and for the replay of what it recorded; an eval's
// planted fault is a Plant, recorded in session_start's tags and planted
// again by the replay; and Spec.Key signs the recording as its user's own
// (recorder.Key), which a replay checks.
//
// The package is called harness, at the top level, rather than
// agent/session, because it sits above the runtime: it imports agent and
// its subpackages, recorder and trajectory, and the runtime's own packages
// must not import it back (agent's internal tests therefore assemble their
// sessions by hand). Trust is decided by the caller, not here: a Spec's
// configuration is what the session runs under, already layered and
// restricted (agent/config.Resolve, config.Restrict).
package harness
