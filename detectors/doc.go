// Package detectors finds the "green but broken" failure modes of seed §13
// and §14 in recorded trajectories, deterministically, from the recorded
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
// keeps, the SQL detectors over the views once it is done. Run runs them
// over a database loaded before, reading the files again. Every
// detector returns Findings: the detector id, a severity, the session, the
// turn and tool_use_id, the evidence (file, line, seq and type of each
// event that proves it), a message with the numbers seen and the
// threshold, and the next step with the seed section that explains it.
// Corpus-level findings also list the sessions that count.
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
//     a tool_success/tool_failure or without a tool_end (§14.1).
//   - unpaired_tool_use (error): a tool_use without a tool_result in the
//     user message after it, or a tool_result answering nothing (§2.4).
//   - truncated_tool_use_executed (error): a tool_use of a max_tokens reply
//     was run (§4.4, §4.5).
//   - stop_reason_as_done (error): the session ended as finished while the
//     last reply's stop reason was missing, unknown or not end-like (§4.5).
//   - end_turn_with_tool_use (error): an end_turn reply's tool_use never
//     ran (§4.5 F2).
//   - hallucinated_tool (warning; info when answered not_found, error when
//     the call succeeded): a call to a tool the request did not offer and
//     the catalog does not hold as deferred, and how it was answered
//     (§10.5).
//   - empty_input_retry (error): more than 3 replies in a row with an empty
//     tool_use input, a retry without MAX_EMPTY_PARAM_RETRIES (§4.5 F1).
//
// Tool layer and observability.
//
//   - latency_flattened (warning): the calls of a batch all report the same
//     duration (§14.7).
//   - denial_loop (warning): the same call denied 3+ times without the
//     denial fuse acting (§8.7). 3 is the runtime's default fuse_threshold;
//     a session configured higher is not told apart yet.
//   - unbounded_label (warning): an error code, hook name or reminder kind
//     that carries data, or a tool with more than 16 distinct error codes
//     (§14.5).
//
// The museum (§13).
//
//   - dead_defense (warning, corpus): an enabled defense with no
//     defense_trigger in the corpus while its condition, recomputed from
//     the events, held (§13.1, §14.4 b-type). ComputeLiveness builds the
//     whole table (retrace detect --defenses): per defense the sessions
//     that enabled it, its triggers, how often its check ran and its
//     condition held, and the verdict live, never_needed (a-type: the
//     condition never occurred), dead, or not_observable (the contract
//     does not carry the condition: low_yield_spin, reminder_cap).
//   - repeated_readonly (warning): one tool with the same input returned
//     the same result 5 times in a row, no other call between, and no
//     repeated_readonly defense acted on any of them (§13.9).
//
// Thresholds are constants for now; per-detector thresholds in
// retrace.yaml (detectors:) are planned.
package detectors
