-- One row per tool_call, with what became of it: permission, pre-hook,
-- outcome, failure and tool_end (doc.go lists the columns). The columns
-- ran, duration_ms (latency) and tool_label are the glossary's one
-- definition of those terms (doc.go, docs/glossary.md); every consumer
-- reads them here, never from the raw events.
WITH calls AS (
    SELECT session, turn, tool_use_id, tool, batch, "index" AS call_index,
           strlen(CAST(input AS VARCHAR)) AS input_bytes, input, file, line, seq
    FROM raw_tool_call
), perm AS (
    SELECT session, tool_use_id,
           CASE WHEN bool_or(type = 'permission_deny') THEN 'deny'
                WHEN bool_or(type = 'permission_allow') THEN 'allow' END AS permission,
           arg_max(source, seq) FILTER (WHERE type IN ('permission_allow', 'permission_deny')) AS permission_source,
           bool_or(type = 'permission_prompt' OR coalesce(needed_prompt, false)) AS permission_prompted
    -- The three tables, not raw_events: its union of every table costs a
    -- third of the refresh even with the type filter.
    FROM (SELECT session, tool_use_id, type, source, seq, needed_prompt FROM raw_permission_allow
          UNION ALL SELECT session, tool_use_id, type, source, seq, needed_prompt FROM raw_permission_prompt
          UNION ALL SELECT session, tool_use_id, type, source, seq, needed_prompt FROM raw_permission_deny)
    GROUP BY session, tool_use_id
), hook AS (
    SELECT session, tool_use_id,
           CASE max(CASE outcome WHEN 'block' THEN 5 WHEN 'timeout' THEN 4 WHEN 'error' THEN 3
                                 WHEN 'modified' THEN 2 WHEN 'continue' THEN 1 END)
                WHEN 5 THEN 'block' WHEN 4 THEN 'timeout' WHEN 3 THEN 'error'
                WHEN 2 THEN 'modified' WHEN 1 THEN 'continue' END AS hook_outcome
    FROM raw_hook_run WHERE phase = 'pre'
    GROUP BY session, tool_use_id
), res AS (
    SELECT session, tool_use_id,
           bool_or(type = 'tool_success') AS succeeded,
           bool_or(type = 'tool_failure') AS failed,
           any_value(failure_kind) FILTER (WHERE type = 'tool_failure') AS failure_kind,
           any_value(error_code) FILTER (WHERE type = 'tool_failure') AS error_code
    FROM (SELECT session, tool_use_id, type, NULL AS failure_kind, NULL AS error_code FROM raw_tool_success
          UNION ALL SELECT session, tool_use_id, type, failure_kind, error_code FROM raw_tool_failure)
    GROUP BY session, tool_use_id
), fin AS (
    -- A duration the source did not measure (duration_unknown: an
    -- imported or wire-seen call) is NULL, never a 0 ms call.
    SELECT session, tool_use_id,
           any_value(duration_ms) FILTER (WHERE NOT coalesce(duration_unknown, false)) AS measured_ms,
           bool_or(duration_unknown) AS duration_unknown,
           bool_or(not_run) AS not_run,
           any_value(output_bytes) AS output_bytes,
           bool_or(coalesce(truncated, false)) AS truncated,
           bool_or(spill IS NOT NULL) AS spilled
    FROM raw_tool_end
    GROUP BY session, tool_use_id
), joined AS (
    SELECT c.session, c.turn, c.tool_use_id, c.tool, c.batch, c.call_index, c.input_bytes,
           p.permission, p.permission_source, coalesce(p.permission_prompted, false) AS permission_prompted,
           h.hook_outcome,
           CASE WHEN r.succeeded THEN 'success' WHEN r.failed THEN 'failure' ELSE 'lost' END AS outcome,
           r.failure_kind, r.error_code,
           f.measured_ms, f.duration_unknown, f.not_run,
           f.output_bytes, f.truncated, f.spilled,
           c.input, c.file, c.line, c.seq
    FROM calls c
    LEFT JOIN perm p USING (session, tool_use_id)
    LEFT JOIN hook h USING (session, tool_use_id)
    LEFT JOIN res r USING (session, tool_use_id)
    LEFT JOIN fin f USING (session, tool_use_id)
), ran AS (
    -- ran: the tool's code started (trajectory.Ran is the same rule in
    -- Go). NULL for a lost call, of which nobody knows. A failure kind
    -- decided before the tool starts never ran (but a permission_denied
    -- of code sandbox is the kernel refusing a running command); a tool_end marked
    -- not_run did not; an aborted call with a measured 0 ms is one the
    -- runtime abandoned before starting it, in files older than not_run.
    SELECT *,
           CASE WHEN outcome = 'lost' THEN NULL
                WHEN failure_kind IN ('not_found', 'hook_blocked', 'invalid_input', 'permission_denied')
                     AND NOT (failure_kind = 'permission_denied' AND coalesce(error_code, '') = 'sandbox') THEN false
                WHEN not_run THEN false
                WHEN failure_kind = 'aborted' AND coalesce(measured_ms, 0) = 0 AND NOT coalesce(duration_unknown, false) THEN false
                ELSE true END AS ran
    FROM joined
)
SELECT session, turn, tool_use_id, tool,
       -- tool_label: the tool as a metric label, a closed set: a name the
       -- executor found no tool for (the model made it up) is one
       -- '(unknown tool)'; the names are in the unknown_tools metric.
       CASE WHEN failure_kind = 'not_found' AND error_code = 'unknown_tool' THEN '(unknown tool)' ELSE tool END AS tool_label,
       batch, call_index, input_bytes,
       permission, permission_source, permission_prompted, hook_outcome,
       outcome, failure_kind, error_code, ran,
       -- latency: the own duration of a call that ran, never a sample
       -- for one that did not (nor an unmeasured one).
       CASE WHEN ran THEN measured_ms END AS duration_ms,
       output_bytes, truncated, spilled,
       input, file, line, seq
FROM ran
