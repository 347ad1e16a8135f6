// Package detectors finds the "green but broken" failure modes docs/failure-modes.md explains
// in recorded trajectories, deterministically, from the recorded
// events alone (no model judges), and points every finding at the lines of
// the JSONL that prove it.
//
// A Detector is either SQL over the metrics package's DuckDB views (an
// embedded sql/*.sql file, for set logic: joins, counts, groups across a
// corpus) or Go over one session's event stream (for sequential logic:
// pairing, runs, what came after what). Both implement the one Detector
// interface; Catalog is the registry, Select picks detectors by id, and
// Detect loads trajectories into a metrics database and runs them in one
// pass: the Go detectors over each session's events as the load's check
// decodes them (metrics.DB.LoadObserved), exactly the events the load
// keeps, the SQL detectors over the views once it is done. What several
// Go detectors derive from a session (each tool input made canonical, the
// calls with their outcomes, the liveness conditions) is computed once per
// session and shared (memo.go). Run runs them
// over a database loaded before, reading the files again. Every
// detector returns Findings: the detector id, a severity, the session, the
// turn and tool_use_id, the evidence (file, line, seq and type of each
// event that proves it), a message with the numbers seen and the
// threshold, and the next step.
// Corpus-level findings also list the sessions that count.
//
// Through a store (metrics.Options.Path, package store) Detect keeps what
// it found: the Go detectors' findings and dead_defense's liveness rows per
// trajectory file, under the file's mark as the store knows it (its stat,
// where its last complete line ends, hashes of its ends) and a hash of the
// build, the catalog and the thresholds; the SQL detectors' findings under
// a mark of every row the store holds (metrics.DB.RowsMark). A detect over
// files that did not change takes them from the store and reads no file
// and runs no query; a file that changed, grew or was replaced has another
// mark, and is judged again. A store opened read-only that lacks some
// (the first detect after a metrics-only update) is metrics.ErrStale, and
// store.Open runs the detect again on the store opened for writing, where
// they are found and kept (cache.go).
//
// Detectors use only what the trajectory contract carries, so they work on
// any valid trajectory: recorded by retrace run, by mock serve --record,
// or imported. Parquet exports are seen by the SQL detectors only
// (Report.Unread lists them), and so, with Run, are stdin and pipes, which
// cannot be read twice.
//
// The catalog (retrace detect --list prints the same):
//
// Protocol and integrity.
//
//   - lost_call (error; warning without session_end): a tool_call without
//     a tool_success/tool_failure or without a tool_end.
//   - unpaired_tool_use (error): a tool_use without a tool_result in the
//     user message after it, or a tool_result answering nothing.
//   - truncated_tool_use_executed (error): a tool_use of a max_tokens reply
//     was run.
//   - stop_reason_as_done (error): the session ended as finished while the
//     last reply's stop reason was missing, unknown or not end-like.
//   - end_turn_with_tool_use (error): an end_turn reply's tool_use never
//     ran.
//   - hallucinated_tool (warning; info when answered not_found, error when
//     the call succeeded): a call to a tool the request did not offer and
//     the catalog does not hold as deferred, and how it was answered.
//   - empty_input_retry (error): more than 3 replies in a row with an empty
//     tool_use input, a retry without MAX_EMPTY_PARAM_RETRIES.
//
// The museum.
//
//   - dead_defense (warning, corpus): an enabled defense with no
//     defense_trigger in the corpus while its condition, recomputed from
//     the events, held. ComputeLiveness builds the
//     whole table (retrace detect --defenses): per defense the sessions
//     that enabled it, its triggers, how often its check ran and its
//     condition held, and the verdict live, never_needed (a-type: the
//     condition never occurred), dead, or not_observable (the contract
//     does not carry the condition: reminder_cap).
//   - decision_counted_as_trigger (warning): a defense with as many
//     defense_triggers in a session as times its check ran, and more than
//     its recomputed condition held: a counter of decisions.
//   - denominator_shift (info, corpus): a tool's success rate over
//     requested and over executed calls differs by more than max_gap,
//     with the permission modes, models and configurations mixed.
//   - spill_read_loop (warning; error when the read of a spill spilled
//     to the same blob): a spilled output read back or run again without
//     being seen.
//   - prefix_collapse_risk (info; warning with an unlabelled deferred
//     name, and for a call after a deferred neighbour was named): resident
//     and deferred tool names sharing min_prefix characters.
//   - low_yield_spin (warning): the same calls returning the same single
//     number min_turns turns in a row, nothing written or said, and the
//     defense did not act.
//   - repeated_readonly (warning): one tool with the same input returned
//     the same result 5 times in a row, no other call between, and no
//     repeated_readonly defense acted on any of them.
//   - stale_snapshot (warning): the system prompt's frozen git status
//     disagrees with a git status the model ran, and it ran it again
//     min_rechecks (2) times with the same answer; info for a call on a
//     file the snapshot lists that failed with ENOENT.
//   - phantom_user_message (warning): a user-role reminder without a
//     harness label, one injected again while still in the context, or
//     more than max_per_kind (3) of one kind in a session.
//   - definition_drift (error within a session, warning across a corpus):
//     one tool with two definitions in one catalog, a tool_search result
//     that describes a catalog tool otherwise (warning), or sessions of
//     one harness version that disagree, with how much the shorter
//     description lost.
//   - pending_as_missing (warning; error when the request's
//     pending_sources names the server): a tool not in the starting
//     catalog, answered not_found as unknown, while its MCP server was
//     still connecting, or that a later request offered.
//
// Tool layer and observability.
//
//   - latency_flattened (warning): the calls of a batch all report the same
//     duration, of min_duration_ms (1) or more.
//   - unbounded_label (warning): an error code, hook name or reminder kind
//     that carries data, or a tool with more than 16 distinct error codes.
//   - denial_loop (warning): the same call denied min_denials (3) times without the
//     denial fuse acting. 3 is the runtime's default fuse_threshold;
//     a session configured higher is not told apart yet.
//   - headless_prompt_denials (warning, corpus): one tool's calls refused
//     in headless sessions as needing a person, in 3+ sessions and for a
//     quarter or more of its headless calls: a policy gap.
//   - empty_output_unexplained (error; warning when no request carries
//     it): a successful call answered with an empty tool_result.
//   - truncation_unannounced (warning): a truncated output whose
//     tool_result states neither the full size nor where the rest is.
//   - hook_changed_input_silently (warning): a call that ran with an input
//     a hook (or anything) changed, and a tool_result that does not say
//     so.
//   - cache_breaker (warning; info for 2+ unexplained cache-read drops): the
//     system prompt, the tools' order, set or bytes, or a message already
//     sent changed between two requests of a session; tools appended at
//     the end (a deferred tool loaded) and compactions are not breakers.
//   - context_runaway (warning): the context nears the model's window
//     without a compaction, or grows faster than linear in turns.
//
// # Thresholds
//
// Every number a detector compares against is a Threshold declared in
// its Info, with a documented default; retrace detect --list prints them
// with the values in force. A run's Settings (retrace.yaml's detectors:
// section) set them per detector, and Settings.Check refuses a detector
// or threshold name the catalog does not have. Go detectors read them
// from their Params; SQL detectors name them as ${name} in the query.
package detectors
