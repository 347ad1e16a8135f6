// Package scenarios defines regression evals for tool-using agents and
// runs them: a scenario is one txtar archive holding a task, a scripted
// model, the starting files of a workspace and the expectations about
// what the agent does with them; the runner plays each scenario through
// the real runtime (harness.Build) in a fresh temporary workspace,
// records the session, runs the detectors on the recording and checks
// every expectation. What it found is a *results.Results (package
// results), which cmd/retrace writes as results.json and renders for a
// person or for CI.
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
//	person: approve                 # answers every permission question (approve or deny); default: nobody, headless
//	stream: true                    # streamed replies: each call starts once its tool_use is complete
//	batch_tools: true               # with stream: calls start only once the reply is whole (the comparison mode)
//	follow_ups: [Now add a test.]   # the person's next prompts, one each time the model finishes
//	agent: claude-code              # optional: run this agent CLI instead of retrace's runtime (see Agent CLIs)
//	plant: {cache_breaker: tools_reordered, from_turn: 3}  # optional: a fault planted in the requests (see Planted faults)
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
//	    - {tool_called: read, streamed: true}   # started while the reply streamed (stream_offset_ms)
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
//	  reply: {contains: Fixed, matches: "calc\\.go"}  # the final reply (see Replies and sequences)
//	  #   or a list: [{turn: 2, equals: "..."}, {json_schema: {type: object, required: [status]}}]
//	  sequence:                                 # tool calls in this order, other calls between allowed
//	    - {tool: read, input: {file_path: calc.go}}
//	    - {tool: edit, input_contains: {new_string: "a + b"}}
//	    - {tool: bash, input_matches: {command: "^go test"}}
//	  #   or {strict: true, steps: [...]}: each step the call right after the previous one
//	  metrics:                                  # thresholds over all the runs (below)
//	    - p95(bash) < 2s
//	    - rate(failure, tool=bash) <= 0.1
//	    - {threshold: "mean(turns) <= 6", min_runs: 5}
//	    - sum(cost_usd) <= 0.05                 # at config: prices: (below)
//	  divergences:                              # against -- reference.jsonl -- (below)
//	    - {class: tool_output_changed}          # or count: 0, or min and max
//	-- workspace/calc.go --
//	package calc
//
// Every event expectation counts the events it matches; min, max and
// count bound the number (default: at least one; the _not_ forms and
// defense_not_triggered mean none). input matches a tool call whose input
// has each key with an equal JSON value; input_matches gives a regular
// expression per key for string values.
//
// # Replies and sequences
//
// expect.reply checks the text the model answered with (its text blocks,
// joined by newlines; thinking is not text): by default the final reply,
// the last model response that holds text; with turn: N, the last
// response of model turn N (from 1, as the trajectory numbers them).
// reply takes one mapping or a list of them. contains and matches (a
// regular expression) take a string or a list; equals compares the whole
// text with surrounding white space trimmed on both sides; json_schema
// (a JSON Schema, draft 2020-12 unless it says otherwise, written as YAML
// or as a string of JSON) requires the text to be a JSON document valid
// against it, where a reply that is one Markdown code block (```json
// ... ```) is judged by the block. A failure gives the expectation and the
// reply as the model gave it: trimmed, cut at 160 bytes, on one line with
// control characters escaped (package terminal), and the trajectory line
// of the response. A live run (--provider) is checked the same way.
//
// expect.divergences compares each run with the recording the scenario
// carries as a -- reference.jsonl -- section, by compare.Sessions, the
// comparison retrace replay makes of a replay and its recording (the
// reference's workspace path standing for the run's), and bounds the
// divergences of each class (a compare.Class such as tool_output_changed
// or call_extra; at least one unless count, min or max say otherwise). A
// failure gives the count and every class the run showed. retrace
// scenario from --keep divergence:CLASS writes both.
//
// expect.sequence is an ordered list of tool calls, in the order of the
// recording's tool_call events: each step names a tool and may match its
// input: input (each key with an equal JSON value), input_contains (each
// key's string value contains the text) and input_matches (each key's
// string value matches the regular expression). Other calls may come
// between two steps; with {strict: true, steps: [...]} each step must be
// the call right after the previous step's (the first may be any call).
// A failure names the step not found and the call it was looked for
// after: "step 2 (bash with command matching /go test/)", "not found after
// step 1, call 2 (edit {...} in turn 2): no call came after it".
//
// Each run gets a fresh workspace, a directory named by the repeat (1,
// 2, ...), written from the scenario's files; the workspace's own
// retrace.yaml, when the scenario gives one, is layered over the
// scenario's config restrict-only, as retrace run does. A suite is trusted
// like a --config file: its config's hooks and MCP servers run. The
// session is headless (a call that needs a person is refused) unless the
// scenario gives a person, who answers every question the same way (an
// approved call is then remembered for the session), and its
// exit code (expect.outcome.exit_code) is retrace run's: 0 finished, 4
// stopped before finishing, 1 an error. The detectors that judge one
// session run over every recording of a Run at once; those that judge a
// corpus (dead_defense) are not a run's expectations, only an exhibit's.
//
// # Planted faults
//
// Some failure modes come from a harness that breaks a rule retrace's own
// runtime keeps, so no script can make the runtime show them. plant
// names one, and the runtime applies it to each request from from_turn
// on before it records the request (agent.Config.Plant), so the
// trajectory holds what was really sent. The planted cache breakers are tools_reordered (the first two tool definitions swap
// places, as MCP servers connecting in another order make them) and
// system_timestamp (the current time in the system prompt, a different
// one every turn). The mock's prompt cache then reads less, which the
// cache and cache_by_turn metrics show, and cache_breaker fires; see the
// cache_breaker_*_fires scenarios and their twin cache_stable_quiet. An
// exhibit or an agent CLI takes no plant.
//
// # Live models
//
// With Options.Provider set (retrace eval --provider), every run talks to
// a real model instead of its scenario's script: the scripted turns are
// unused, and the outcome, file, event, detector and metric expectations
// are checked as for a scripted run (none of them is about the script, so
// none is skipped); Options.Model is the model recorded in each
// session_start. `model: live` in scenario.yaml gives no script: such a
// scenario runs only against a real model, and retrace eval without
// --provider skips it with a note. Run without a Provider gives its runs
// the error verdict.
//
// # Agent CLIs
//
// `agent:` runs a third-party agent instead of retrace's runtime, with
// the same task, workspace and expectations:
//
//	agent: claude-code                     # Claude Code: claude -p PROMPT --output-format stream-json --verbose
//	agent: codex                           # Codex CLI: codex exec -s workspace-write -m MODEL --json PROMPT
//	agent: opencode                        # opencode: opencode run --format json -m anthropic/MODEL PROMPT
//	agent:                                 # a profile with more flags
//	  profile: claude-code
//	  args: [--allowedTools, "Read,Bash(ls:*)"]
//	  env: {CLAUDE_CODE_MAX_OUTPUT_TOKENS: "4096"}
//	  isolation: required                  # refuse to run without a network namespace (default: preferred)
//	  main: longest                        # the session: first (default), longest (opencode's), last, route:NAME
//	agent:                                 # an agent of your own
//	  command: [my-agent, --task, $RETRACE_PROMPT]
//	  wire: anthropic                      # or openai-responses, openai-chat
//	  env: {MY_AGENT_MODE: ci}
//
// The runner serves the scenario's model: script from the mock LLM (a
// conversations: script routes a subagent's requests to its own turns),
// recording the wire as retrace mock serve --record does, and runs the
// agent in the run's fresh workspace with the mock as its base URL
// (ANTHROPIC_BASE_URL, OPENAI_BASE_URL with /v1, RETRACE_MOCK_URL; the
// prompt in RETRACE_PROMPT, and $RETRACE_PROMPT and $RETRACE_MOCK_URL in
// a command's words are replaced), a home directory of the run's own
// (HOME, CODEX_HOME: no user's configuration or credentials are read,
// and the client's transcript lands there), an offline API key and only
// PATH, TERM and LANG from the environment. Where the platform allows
// (Linux, unshare -n or -rn), the agent runs in a network namespace of
// its own that holds nothing but loopback, where a helper (this binary,
// re-executed) carries 127.0.0.1:18080 to the mock's Unix socket: the
// agent can reach nothing else. Elsewhere it runs with a loud warning
// (Options.Warn, RunResult.Warnings), or not at all with isolation:
// required or Options.RequireIsolation (retrace eval
// --require-isolation). The agent's process group is killed when the
// run's limits.timeout runs out.
//
// When the agent exits, its own transcript is imported (package
// importer: Claude Code's projects directory, Codex's sessions directory)
// and merged into the wire session, which stays the backbone: the
// transcript adds the permission decisions (observed: transcript), the
// run times the client measured, and the failures the wire could not see
// (a denial, a command Codex refused to run and answered as plain text);
// every event keeps the origin that observed it. Each subagent
// conversation is its own session, linked to the parent's session and
// tool_use. The outcome is the session's end and the agent's exit code;
// the file, event, detector and metric expectations are checked as for
// any run. config: and person: belong to retrace's runtime and are
// refused beside agent:, as is model: live; Options.Provider (retrace
// eval --provider) does not reach an agent CLI, which always talks to the
// mock serving its script. A scenario whose CLI is not
// on PATH is skipped by retrace eval with the reason (MissingAgent), or
// fails with --require-agents.
//
// agent.main picks, of the run's conversations that are no subagent's,
// the session the scenario judges (MainFirst, MainLongest, MainLast,
// MainRoute); the others (opencode's title request) are kept and listed
// in RunResult.SideSessions. A request the script refused (out of turns,
// a missed expect, no conversation matched) is the run's first failure,
// naming the request and the first line of what it sent. The profiles
// cap their client's retries where it has a setting (AgentMaxRetries),
// and each profile's client is asked its version once per eval: it is
// recorded in RunResult.AgentVersion and the session_start tag
// agent_version, and a version other than the profile's tested one is
// warned of in one line (Options.Warn). docs/agents.md has the profiles.
//
// An exhibit of the failure museum carries recorded trajectories
// (-- recording.jsonl --, or several -- recordings/NAME.jsonl -- for the
// detectors that judge a corpus) instead of a model script and a
// workspace; the runner checks its event and detector expectations over
// the recordings without running the runtime (see Recording).
//
// # Metric thresholds
//
// expect.metrics holds thresholds over all of a scenario's runs, checked
// once after they ran (as k6 does), over the recordings loaded into the
// metrics package's DuckDB views, so that a number is the one retrace
// metrics reports. A threshold is a condition of package condition (the
// grammar and decision retrace diff's gates share; docs/conditions.md):
// an aggregate, a comparison and a number, such as p95(bash) < 2s.
//
// pN, mean, min and max aggregate one of: a tool's name (p95(bash) is
// p95(duration, tool=bash)); duration, each tool call's own run time
// from its tool_end (never a batch's average), optionally tool=T;
// model_duration, context_tokens and output_tokens, per model response;
// turns, per run; tool_calls, a run's tool calls, optionally tool=T. pN
// interpolates as the latency metric does (quantile_cont, rounded to
// the microsecond).
//
// rate(S) is the share of the tool calls (optionally tool=T: the
// denominator) that S: failure (optionally failure_kind=K), success,
// lost, truncated, spilled, denied, prompted; a fraction or a
// percentage. A failed rate's message names its denominator: "1: 2 of 2
// bash calls (the denominator) failed, over 2 runs".
//
// sum adds up the samples of any of these; cost_usd is a run's cost in
// US dollars, its recorded usage (each model response's input, output,
// cache-read and cache-write tokens) at the prices of the scenario's
// config: prices: section, per model id as session_start records it
// (mock-1 for a script that names none), in US dollars per million
// tokens:
//
//	config:
//	  prices:
//	    mock-1: {input_per_mtok: 3, output_per_mtok: 15, cache_read_per_mtok: 0.3, cache_write_per_mtok: 3.75}
//
// so sum(cost_usd) is what all the runs cost and mean(cost_usd) what one
// did. The cost is the metrics package's (the model_costs view, the one
// definition); a run whose model has no price has no cost, so a cost
// threshold over it is inconclusive, naming the model, never a pass. A
// workspace's own retrace.yaml cannot set the prices; an agent CLI's
// scenario (no config:) has none.
//
// count(E) counts the events of type E over all the runs (not per run:
// mean(tool_calls, tool=read) is per run), optionally filtered by tool,
// failure_kind, defense, action, kind, source, reason or stop_reason.
//
// A threshold over too few runs or samples to decide is inconclusive,
// never a pass: fewer runs that recorded a session than its min_runs
// (default 1), a rate without calls in its denominator, no samples (a
// duration over calls none of which ran says "no bash call ran"), or a
// pN over fewer than 1/(1-N) samples (p95: 20; below that it is only the
// largest sample). A bad threshold is refused with the suite, as
// file:line:col: what is wrong, each problem of it listed.
//
// # Golden scenarios
//
// A scenario tagged golden may have its expectations rewritten from what
// its runs did (Golden, and retrace eval --update): the outcome, a count
// per tool called, and a files entry per file the run created, changed
// (equals) or deleted (exists: false); the other expectations and the
// comments stay. A scenario that errored, whose runs did different
// things, or that is built in is refused.
//
// # From a recording
//
// From turns a native recording (retrace run, retrace eval --out) into a
// scenario (retrace scenario from): the recorded responses as the
// script, each turn expecting the tool results its recorded request
// carried; the workspace from the snapshot; session_start's effective
// configuration as config; and the expectations of what happened, or
// only the Property kept (detector:ID, failure:KIND[,tool=T],
// defense:NAME, permission:DECISION[,tool=T][,step=S][,source=S],
// event:TYPE[,tool=T][,streamed=B], outcome, or "no " before one but outcome for its
// absence). With MinimizeOptions it reduces the turns, the calls within
// them, the config overlay's keys, the workspace files and the lines of
// large files by ddmin, re-running the scenario in-process,
// deterministically. A recording the runtime cannot play again (an
// exhibit eval --out marked not replayable, a synthetic session, a
// recording whose snapshot blobs are gone) becomes an exhibit scenario
// that carries its lines, minimized over turns and events. A recording
// that is torn, not a trajectory or without a snapshot is refused with
// ErrFrom.
//
// A session of another client (imported by package importer, or
// recorded by mock serve --record; session_start.tags.client names the
// client) becomes a scenario of the same client by its agent profile
// (fromclient.go): the recorded responses as its script, each subagent
// session beside the recording (parent_session) as a conversation
// matched by its task, tool-input paths under the recorded working
// directory made relative, Claude Code's --allowedTools for the calls a
// rule or a person allowed, and, for want of a snapshot, a workspace of
// the files the session read (a whole Read, a cat of one file) as it saw
// them, the archive's comment naming where each came from (the
// recording's line and the transcript's file:line) and listing what could
// not be reconstructed. FromOptions.Runtime RuntimeBuiltin plays it
// through retrace's runtime instead, with the client's tools mapped onto
// retrace's; only then can it be minimized. A torn session, a client
// with no profile or none named (without RuntimeBuiltin), a subagent's
// own session and one without a snapshot that read no file are refused
// with ErrFrom, saying what is missing.
//
// Parse is strict: an unknown key, a value of the wrong kind, an unknown
// event type, failure kind, permission source, defense or detector id is
// refused, and every problem of every scenario is reported as
// file:line: what is wrong, before anything runs.
//
// # Results
//
// Each scenario gets a verdict over its runs and thresholds: pass (every
// run and threshold passed), fail (no run passed, or a threshold failed),
// flaky (some runs did: never a pass; the summary then gives pass^k and
// pass@k, as it does for a live scenario run several times),
// inconclusive (every run passed but
// a threshold could not be decided: never a pass) or error (retrace
// could not run it). A scenario run n >= 2 times has PassK: pass^k, the
// chance that k runs all pass, and pass@k, that at least one does,
// estimated without bias from its c passing runs (package stats) at k =
// 1, 2, 4, ... below n and at n. Results are JSON (Results), so that shards of one
// suite run on several machines can be merged (Merge) into what one run
// would have reported, and compared with a baseline run's (Compare): a
// scenario whose runs all passed there and not all do now is a
// regression (a live one only beyond chance, by Fisher's exact test);
// retrace diff reports the same Compare. Merge refuses shards that are
// not one whole run of one suite (ShardSetError). An interrupted Run
// returns the runs that finished, marked Interrupted. LockOut keeps two
// evals from writing one --out directory at once. A scenario's summary
// line names the thresholds that decided a verdict its runs do not
// explain.
package scenarios
