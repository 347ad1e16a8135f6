// Package metrics loads trajectories into an embedded DuckDB database and
// answers questions about them in SQL: the numbers that make a run that looks
// green but is broken visible. Every named metric carries its
// denominator in its name and header, because a rate without its
// denominator cannot be compared across runs.
//
// Trajectory files are checked line by line with the trajectory Decoder
// first, on every core (a large file in parts), and the lines that decode
// are staged, one chunk file per event type, for DuckDB's read_json, which
// reads them with an explicit column schema derived from the Go payload
// types (never auto-detected, so a file cannot change the schema) into a
// table per event type (raw_tool_call, raw_tool_end, ...) holding only that
// type's columns; the view raw_events puts them together with every
// column. Narrow tables matter: read_json's cost grows with the columns it
// looks for and DuckDB inserts into a narrow table several times faster.
// The chunks are read inside the load's transaction and deleted once read;
// when a check worker's open chunks pass 256 MB the largest is read while
// the check goes on, so the staging on disk stays under (2 × workers + 2) ×
// 256 MB whatever the corpus (Progress.StagedPeak reports it). Reading
// while checking costs CPU (DuckDB's threads and the check share the cores:
// +15% at 1M events), so a smaller corpus is staged whole and read after
// its check. The chunks are read on one DuckDB thread fewer than the cores
// (at least one): the thread that runs a statement spins while it waits
// for the statement's other threads, which on two cores cost about a
// third of the read's CPU. A check runs the Go collector at 400%, as it
// drops a payload per event over a small heap (one that feeds an Observer
// too: what it holds for it is a few parts' events).
// Appending rows with DuckDB's Appender instead was measured and
// cost more CPU (typed values: about +25%; whole lines split by
// json_transform: about +15% and more memory).
//
// Memory: Options.MemoryLimit is DuckDB's memory_limit, past which it
// spills to Options.TempDir (the system's temporary directory by
// default), an in-memory database too. Without a limit, a store and a
// load of more than 64 MiB of trajectories into memory cap DuckDB at
// 500MB, a load at 300MB while it reads (loadMemory), the derived
// tables of a load into memory of more than 1 GiB at 300MB while they
// are made (derivedMemory, lowerCapsBytes), and an export at 256MB
// while it writes (exportMemory), an in-memory database spilling its
// rows too to a directory of its own, removed by Close, so the memory
// DuckDB holds does not grow with the corpus (see boundedMemory for
// what it leaves). That directory and a load's staged lines are scratch
// directories: one a killed process left is removed by the next load
// that makes one (package scratch). A load's check also runs under a
// soft limit on the Go heap (checkMemory, set with debug.SetMemoryLimit
// and put back after, a lower limit the process set kept);
// BenchmarkLoadAndMetrics measures time, CPU and peak RSS at
// the sizes RETRACE_BENCH_EVENTS names. The retrace CLI takes
// --memory-limit or RETRACE_MEMORY_LIMIT; without them its detect and
// report hold the Go heap under a soft limit of their own for the whole
// command, as their detectors keep Go values a load's check does not.
// LoadObserved also hands the decoded events the load keeps to an
// Observer, in order, so that a caller needing the events themselves (the
// detectors) does not decode every file a second time.
// A malformed line, a seq that repeats or goes back within its session, a
// file that cannot be read and a file without events refuse the load with
// an error naming every bad file (file:line for a line); with
// Options.Lenient bad lines are skipped, repeated events dropped and bad
// files left out, all counted per file. Named pipes and stdin are read as
// streams; the entries of directories that are not regular files are
// skipped. WriteArrow writes any query as an Arrow IPC stream in builds
// with the duckdb_arrow tag.
//
// # The Parquet lake
//
// ExportParquet writes the events as a Parquet lake: hive-partitioned by
// UTC date, zstd files per event type in each partition, rows ordered by
// session and seq in row groups of 16,384 rows, and lake.json naming the
// layout's version (LakeVersion) and every column. It streams: the
// sessions, in order, in parts of about half a million events, one COPY
// per event type and part, each sorting only that part's rows of the
// type, with DuckDB's memory capped at 256MB (unless Options.MemoryLimit
// says otherwise); each part adds a file per type to the partitions it
// reaches. A load whose inputs are all Parquet, into a
// database holding no rows, reads the lake in place (lake.go): each event
// type's table becomes a temporary view over read_parquet of its files,
// nothing is copied, and the views, the derived views and the named
// metrics answer with the rows the trajectories give
// (TestALakeIsReadInPlaceWithTheSameRowsAsTheTrajectories). Over 1M
// events (BenchmarkLakeMetrics, medians of three on two cores shared with
// other work), opening the lake and asking every named metric took 2.3
// CPU-s against 10.1 for the JSONL (0.22×; 0.26× in wall time), at 362 MB
// of peak RSS against 735 MB; copying the Parquet into the tables had
// been slower than the JSONL. Of the 2.3 s, making the derived tables
// takes 1.8 (tool_calls' joins 1.2): DuckDB's own aggregation over the
// lake takes 0.18. Parquet given with trajectories, or to a database that
// holds rows, is copied into the tables as before.
//
// A session found in two files of one load (the same run given twice, a
// copy of its file) is loaded once, from the first file in the load's
// order, and named in LoadReport.Duplicates, so that a comparison never
// counts it twice; Options.StrictDupes refuses it instead. A session both
// in Parquet and in another input (an export and the trajectories it was
// made of, two exports) is always refused, a LoadError of
// ErrDuplicateSession: the export's rows are read in bulk, so it cannot be
// loaded once, and it may be an older copy of a trajectory that grew.
//
// # The store
//
// A database kept in a file (Options.Path) is a store: it answers for
// exactly the runs each load is given, reading only what changed. Its
// store_files table knows every file by path, size, modification time,
// inode, the offset just past its last complete line, the lines before
// it, and hashes of the 4 KiB at each end of what was read. A file whose
// stat did not change is not opened; one that only grew (same inode,
// larger, the same bytes at both ends of what was read: a session still
// being written) is read from that offset, the rows of a last line that
// had no newline yet deleted and read again with what follows (lenient and
// observed loads read it whole: they need its events before); any other
// change reads the file again whole, and the rows of a file not given any
// more are dropped. The derived tables are kept in a store, never plain
// views: a load deletes the derived rows of the sessions whose rows it
// changes and selects them again from the views' queries restricted to
// those sessions (every derived row depends on its own session's rows
// only), within its transaction. A load that finds nothing changed opens
// no transaction, so the file does not change. A crash mid-update leaves
// the store as it was: the update is one DuckDB transaction. The
// store_sessions table lists, per file, the sessions its rows hold and
// the highest seq of each, kept up to date by every load: a load of a few
// files asks it, not the rows, which sessions the files it replaces hold
// and which of the sessions it reads came before. A store is written
// without FSST compression (DuckDB's costliest to try and to write; the
// file is about a fifth larger for it).
// Options.ReadOnly opens a store read-only, as many processes may at once;
// its Load returns ErrStale instead of changing anything. Package store
// puts stores in the cache directory and shares them between processes.
// A store answers with a cold load's rows, row for row, through every
// kind of change (TestStoreAnswersAsAColdLoadThroughEveryChange). Parquet
// inputs are read again on every load, and while a store holds rows from
// Parquet its derived tables are made again whole. A store holds the rows
// of one mode (Options.Lenient, Options.StrictDupes): a load in another
// reads every file again. What a file's read had to say (warnings,
// skipped lines, copies left out) is kept with it and said again, in
// LoadReport.Held, by the loads that do not read it.
//
// Through the store, at 1M events on the 2-core machine shared with two
// other sessions' work (store.BenchmarkStoreWarm, medians of 3 in one
// run; wall ratios move with the other work, CPU ratios much less): a
// named metric over the unchanged corpus took 0.012-0.021× the cold run
// of the same command and an ad hoc join 0.016-0.018×, the store's file
// unchanged (0 bytes grown). The store's first build took 1.5× cold's CPU
// (1.8-3.0× its wall time; it was 6.5× at a quiet moment before the first
// load stopped asking for the sessions held, of which there are none):
// on top of the cold load, DuckDB compressing and writing every row at
// the commit (1-2.5 CPU-s at 1M events; its wall time weighs more than
// its CPU time, so much of it runs in one thread) and remembering the
// files (0.3 CPU-s). Adding 1% new files takes 0.08-0.09× cold's CPU at
// 1M events (0.39-0.41 CPU-s against 4.5), all of it fixed costs of an
// update, most of them DuckDB's, per statement (1-3 ms each, some 60 an
// add) and per
// table written (a few ms each, however few its new rows; an add writes
// 22: a table per event type, the four derived tables, store_sessions and
// store_files): DuckDB's commit (0.06 CPU-s) and checkpoint (0.045 in the
// v1.5 storage format a store is now made in, 0.09 in DuckDB's default
// one), opening the store three times (read-only, for writing, read-only
// again: 0.05 with their settings and checks), the new lines read with a
// read_json statement per event type (0.03), the new rows' own tables
// (see addedTable), store_sessions and the derived rows taken from them
// (0.06), what the store remembers of its files (0.015), and in Go
// listing the corpus once (DB.Continue hands the read-only pass's listing
// to the update), a stat per file (0.015) and the check of the new lines
// (0.03). A small update runs DuckDB on one thread from its first
// statement to its checkpoint (smallUpdateBytes): on two cores the second
// thread spent some 0.05 CPU-s an add waiting for work. Reading every
// event type's new lines with one read_json into one table with every
// type's columns was tried and cost twice the 16 statements it replaced.
// At 10M events an add of 1% took 3.9 CPU-s against 65 cold (0.06×), 3
// of them the stat of 100k files and the answer that an unchanged corpus
// costs too. Keeping added events as Parquet
// files beside the store, so that the commit writes little, was built and
// measured: it saved 0.01× at 1M and nothing at 10M, for a second place
// the rows live in, and was left out.
//
// # Glossary
//
// Every number retrace prints about tool calls is made of these terms.
// Each is one SQL definition, a column of the tool_calls view
// (derived/tool_calls.sql), that the named metrics, eval thresholds and
// diff rows (Aggregate), the report's data model and the detectors read;
// none of them derives a term again from the raw events.
// docs/glossary.md says the same for users.
//
//   - called: a tool_call event; every row of tool_calls. The denominator
//     of a rate that names no other.
//   - decided: the permission decision, permission: 'allow', 'deny', or
//     NULL when none was recorded (a call refused before the permission
//     check: unknown tool, hook block). asked: permission_prompted, the
//     decision needed a prompt (answered by a person or refused because
//     nobody could answer). denied: permission = 'deny'.
//   - ran: the tool's code started (column ran; trajectory.Ran is the same
//     rule in Go). A success ran. A failure of kind tool_error, timeout or
//     exception ran; not_found, hook_blocked, invalid_input and
//     permission_denied never ran; an aborted call ran when the abort
//     came while it ran. The recorder marks a call that did not run with
//     tool_end not_run and no duration; in files older than not_run, an
//     aborted call whose tool_end says 0 ms did not run. NULL for a lost
//     call (nobody knows). retrace diff's and the thresholds'
//     among=executed means ran.
//   - succeeded: outcome = 'success' (a tool_success). A call that
//     succeeded ran.
//   - failed: outcome = 'failure' (a tool_failure), by failure_kind; the
//     kinds that mean "ran" are above. error_code is a label of a closed
//     format (trajectory.IsErrorCode: exit:N, signal:NAME, http:NNN, an
//     errno name, or a named code).
//   - lost: outcome = 'lost': a call with neither a tool_success nor a
//     tool_failure (a harness bug, or a process that died mid-call).
//   - latency: duration_ms, the own run time of a call that ran, from its
//     tool_end; never a batch average, and never a sample for a call that
//     did not run (NULL), so a stricter policy cannot make a tool look
//     faster. p95(bash) is over these samples; with none it has no value
//     (NULL), never 0.
//   - failure rate among X: failed calls among X, with X named: among
//     called (every call, the default) or among ran (among=executed: the
//     failures that ran among the calls that ran).
//   - tool label: tool_label, the tool as a metric label, a closed set: a
//     tool name the executor found no tool for (not_found with error_code
//     unknown_tool: the model made it up) is one '(unknown tool)'; the
//     unknown_tools metric lists the names. The funnel and latency group
//     by it.
//
// The named metrics are the embedded sql/*.sql files (Metrics, Metric);
// each file's header comment says what it counts and its denominator.
//
// The views, and their columns:
//
// events: every event: the envelope (v, session, seq, ts, turn, type), one
// column per top-level payload field of any event type (NULL where the event
// does not carry it; nested values as JSON), file, the path it was loaded
// from, and line, its line in that file (from 1; NULL for events from a
// Parquet export that predates the column), so findings can point at it.
//
// tool_calls: one row per tool_call event: session, turn, tool_use_id, tool,
// tool_label (the tool as a metric label: '(unknown tool)' for a name the
// model made up), batch, call_index, input_bytes (the size of the input as DuckDB
// re-serialises it), permission ('allow', 'deny' or NULL when no decision was
// recorded), permission_source (the source of that decision),
// permission_prompted (a prompt was needed), hook_outcome (the worst outcome
// of the call's pre hooks, in the order block, timeout, error, modified,
// continue; NULL without hooks), outcome ('success', 'failure', or 'lost'
// when the call has neither), failure_kind, error_code, ran (the tool's
// code started; NULL for a lost call), duration_ms (the call's latency:
// its own run time from its tool_end, never a batch average, and NULL
// for a call that did not run or whose run time its source did not
// measure), output_bytes, truncated, spilled (the full output went to a blob), input
// (the call's input as recorded, after the recorder's redaction; JSON), and
// file, line and seq of the tool_call event, for a finding to point at.
//
// sessions: one row per session_start: session, started, ended (NULL when
// the session has no session_end), reason (the end reason, NULL likewise),
// turns (the highest turn seen), tool_calls, tool_failures, input_tokens,
// output_tokens, cache_read_tokens, cache_creation_tokens (sums over the
// session's model responses), then from its session_start: tags (the run
// labels of retrace run --tag and eval's eval_scenario and eval_repeat;
// JSON, read one with tags->>'prompt'), model, provider, mode,
// permission_mode, config_hash, harness_version, harness_revision (NULL
// when the harness did not know its revision), file (the file the session
// was loaded from), replay_of (the session this one replays, NULL for an
// original) and parent_session (the session that started this one as a
// subagent, NULL for a top-level one).
//
// model_turns: one row per model_response: session, turn, stop_reason,
// context_tokens (all the input the model was sent: input_tokens +
// cache_read_tokens + cache_creation_tokens), input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens,
// duration_ms, ttft_ms.
//
// permissions: one row per permission event: session, turn, tool_use_id,
// tool, decision ('allow', 'prompt' or 'deny'), source, step,
// needed_prompt, rule.
//
// defenses: one row per defense_trigger: session, turn, defense, action,
// tool_use_id, count.
//
// reminders: one row per reminder the harness injected: session, turn,
// kind, dedup_key, role, text_bytes.
//
// model_costs: one row per model_response: session, turn, model (its
// session's), cost_usd (its usage at the model's prices, in US dollars;
// NULL when the model has no price). The prices are the table prices
// (model, input_per_mtok, output_per_mtok, cache_read_per_mtok,
// cache_write_per_mtok), empty until SetPrices fills it (cost.go).
//
// tool_calls, model_turns, sessions and defenses are derived views (see
// derived.go): the first query or metric naming one after the rows
// changed puts their rows into tables of their own (derived_tool_calls and
// so on) that the views then read, so the join of every call with its
// permission, hooks, outcome and end, the parse of every response's usage
// and the sums per session are made once per change of the rows, not once
// per query. In memory, a load, or a Query or WriteArrow statement that
// may write, makes them plain views again in the same transaction, so they
// never show rows the raw tables no longer hold; a load or a query that
// does not read them does not pay for them. A store keeps them (see The
// store above); a statement that may write into a store opened for
// writing makes them again whole. Over 1M events the named metrics took
// 1.9-2.4 s over plain views and take 0.8-0.86 s, the tables' making
// (about 0.55 s) included; over one session, loading it and asking every
// metric took 466 ms and takes 186 ms (BenchmarkLoadAndMetrics,
// BenchmarkStartup).
//
// # Paying start-up once
//
// A *DB is the entry point that loads once and answers many questions:
// Open creates the schema (its fixed cost; BenchmarkStartup measures it
// beside DuckDB's own start-up), Load reads the trajectories once, and
// then any number of Metric, Query, detectors.Run and report.Gather calls
// share those rows. retrace report loads once for its detectors and its
// metrics, and the eval runner loads a suite's recordings into one
// database for all its detectors and thresholds. Metric prepares each
// named metric on its first call and reuses the plan while the rows are
// unchanged; a Load, or a Query that is not plainly read-only, drops the
// plans, because DuckDB plans with the statistics of the rows present. A
// Query is read-only when it opens with SELECT, FROM, DESCRIBE, SHOW or
// SUMMARIZE, or when DuckDB parses it as SELECT statements only (a WITH
// ... SELECT, which every SQL detector is): those keep the derived tables
// too, so the detectors of one detect share one making of them.
package metrics
