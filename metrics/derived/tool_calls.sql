-- One row per tool_call, with what became of it: permission, pre-hook,
-- outcome, failure and tool_end (doc.go lists the columns).
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
           any_value(duration_ms) FILTER (WHERE NOT coalesce(duration_unknown, false)) AS duration_ms,
           any_value(output_bytes) AS output_bytes,
           bool_or(coalesce(truncated, false)) AS truncated,
           bool_or(spill IS NOT NULL) AS spilled
    FROM raw_tool_end
    GROUP BY session, tool_use_id
)
SELECT c.session, c.turn, c.tool_use_id, c.tool, c.batch, c.call_index, c.input_bytes,
       p.permission, p.permission_source, coalesce(p.permission_prompted, false) AS permission_prompted,
       h.hook_outcome,
       CASE WHEN r.succeeded THEN 'success' WHEN r.failed THEN 'failure' ELSE 'lost' END AS outcome,
       r.failure_kind, r.error_code,
       f.duration_ms, f.output_bytes, f.truncated, f.spilled,
       c.input, c.file, c.line, c.seq
FROM calls c
LEFT JOIN perm p USING (session, tool_use_id)
LEFT JOIN hook h USING (session, tool_use_id)
LEFT JOIN res r USING (session, tool_use_id)
LEFT JOIN fin f USING (session, tool_use_id)
