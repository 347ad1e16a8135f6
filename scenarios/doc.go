// Package scenarios defines regression evals for tool-using agents and
// runs them: a scenario is one txtar archive holding a task, a scripted
// model, the starting files of a workspace and the expectations about
// what the agent does with them; the runner plays each scenario through
// the real runtime (harness.Build) in a fresh temporary workspace,
// records the session, runs the detectors on the recording and checks
// every expectation, then renders a summary, JSON results or a JUnit
// file for CI.
//
// # The format
//
// A scenario file holds a comment, a scenario.yaml section and the
// workspace's files, each file under workspace/:
//
//	The demo: a scripted model fixes a bug.
//	-- scenario.yaml --
//	name: demo                      # default: the file's base name; a label (A-Z a-z 0-9 _ . : -)
//	description: Fixes Add.
//	tags: [demo, permissions]
//	prompt: Fix the bug in calc.go.
//	repeat: 1                       # runs of the scenario (--repeat overrides)
//	limits: {max_turns: 10, timeout: 30s}
//	config:                         # the session's trusted retrace.yaml (see retrace run --help)
//	  permissions: {mode: accept_edits}
//	model:                          # a script in the mock LLM's format (retrace mock serve --help)
//	  turns:
//	    - content: [{tool_use: {name: read, input: {file_path: calc.go}}}]
//	    - content: [{text: Done.}]
//	expect:
//	  outcome: {reason: end_turn, exit_code: 0, turns: {min: 1, max: 4}}
//	  files:
//	    - {path: calc.go, contains: "a + b"}    # also exists, equals, matches (a regexp), unchanged
//	  events:
//	    - {tool_called: read, input: {file_path: calc.go}}
//	    - {tool_not_called: write}
//	    - {permission: deny, source: non_interactive, tool: bash}
//	    - {permission: deny, step: deny_rule, tool: bash}   # the chain step that decided
//	    - {failure: permission_denied, tool: bash}
//	    - {defense: denial_fuse}                # or defense_not_triggered, with action
//	    - {reminder: KIND}
//	    - {event: model_error, min: 1, max: 3}  # any event type, counted
//	  detectors:
//	    fire: {denial_loop: 1}                  # detector id: the fewest findings
//	    not_fire: [hallucinated_tool]
//	    no_others: true                         # no detector but those under fire
//	-- workspace/calc.go --
//	package calc
//
// Every event expectation counts the events it matches; min, max and
// count bound the number (default: at least one; the _not_ forms and
// defense_not_triggered mean none). input matches a tool call whose input
// has each key with an equal JSON value; input_matches gives a regular
// expression per key for string values.
//
// Each run gets a fresh workspace, a directory named by the repeat (1,
// 2, ...), written from the scenario's files; the workspace's own
// retrace.yaml, when the scenario gives one, is layered over the
// scenario's config restrict-only, as retrace run does. A suite is trusted
// like a --config file: its config's hooks and MCP servers run. The
// session is headless (a call that needs a person is refused) and its
// exit code (expect.outcome.exit_code) is retrace run's: 0 finished, 4
// stopped before finishing, 1 an error. The detectors that judge one
// session run over every recording of a Run at once; those that judge a
// corpus (dead_defense) are not a run's expectations, only an exhibit's.
//
// An exhibit of the failure museum carries recorded trajectories
// (-- recording.jsonl --, or several -- recordings/NAME.jsonl -- for the
// detectors that judge a corpus) instead of a model script and a
// workspace; the runner checks its event and detector expectations over
// the recordings without running the runtime (see Recording).
//
// Parse is strict: an unknown key, a value of the wrong kind, an unknown
// event type, failure kind, permission source, defense or detector id is
// refused, and every problem of every scenario is reported as
// file:line: what is wrong, before anything runs.
//
// # Results
//
// Each scenario gets a verdict over its runs: pass (every run passed),
// fail (none did), flaky (some did: never a pass) or error (retrace could
// not run it). Results are JSON (Results), so that shards of one suite
// run on several machines can be merged (Merge) into what one run would
// have reported.
package scenarios
