-- The views over the tables of each event type (raw_<type>) and raw_events,
-- their union; doc.go documents their columns.
CREATE OR REPLACE VIEW events AS SELECT * FROM raw_events;

CREATE OR REPLACE VIEW tool_calls AS
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
    FROM raw_events WHERE type IN ('permission_allow', 'permission_prompt', 'permission_deny')
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
    FROM raw_events WHERE type IN ('tool_success', 'tool_failure')
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
LEFT JOIN fin f USING (session, tool_use_id);

CREATE OR REPLACE VIEW model_turns AS
SELECT session, turn, stop_reason,
       CAST(usage->>'input_tokens' AS BIGINT) + CAST(usage->>'cache_read_tokens' AS BIGINT)
           + CAST(usage->>'cache_creation_tokens' AS BIGINT) AS context_tokens,
       CAST(usage->>'input_tokens' AS BIGINT) AS input_tokens,
       CAST(usage->>'output_tokens' AS BIGINT) AS output_tokens,
       CAST(usage->>'cache_read_tokens' AS BIGINT) AS cache_read_tokens,
       CAST(usage->>'cache_creation_tokens' AS BIGINT) AS cache_creation_tokens,
       duration_ms, ttft_ms
FROM raw_model_response;

CREATE OR REPLACE VIEW sessions AS
WITH starts AS (
    -- A session has one session_start; arg_min keeps the first should a
    -- file hold two.
    SELECT session, min(ts) AS started,
           arg_min(tags, seq) AS tags, arg_min(model, seq) AS model,
           arg_min(provider, seq) AS provider, arg_min(mode, seq) AS mode,
           arg_min(permission_mode, seq) AS permission_mode,
           arg_min(config_hash, seq) AS config_hash,
           arg_min(harness_version, seq) AS harness_version,
           arg_min(harness_revision, seq) AS harness_revision,
           arg_min(file, seq) AS file, arg_min(replay_of, seq) AS replay_of,
           arg_min(parent_session, seq) AS parent_session
    FROM raw_session_start GROUP BY session
), ends AS (
    SELECT session, any_value(ts) AS ended, any_value(reason) AS reason
    FROM raw_session_end GROUP BY session
), counts AS (
    SELECT session, max(turn) AS turns,
           count(*) FILTER (WHERE type = 'tool_call') AS tool_calls,
           count(*) FILTER (WHERE type = 'tool_failure') AS tool_failures
    FROM raw_events GROUP BY session
), tokens AS (
    SELECT session, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
           sum(cache_read_tokens) AS cache_read_tokens, sum(cache_creation_tokens) AS cache_creation_tokens
    FROM model_turns GROUP BY session
)
SELECT s.session, s.started, e.ended, e.reason, c.turns, c.tool_calls, c.tool_failures,
       coalesce(t.input_tokens, 0) AS input_tokens, coalesce(t.output_tokens, 0) AS output_tokens,
       coalesce(t.cache_read_tokens, 0) AS cache_read_tokens,
       coalesce(t.cache_creation_tokens, 0) AS cache_creation_tokens,
       s.tags, s.model, s.provider, s.mode, s.permission_mode, s.config_hash,
       s.harness_version, s.harness_revision, s.file, s.replay_of, s.parent_session
FROM starts s
LEFT JOIN ends e USING (session)
LEFT JOIN counts c USING (session)
LEFT JOIN tokens t USING (session);

CREATE OR REPLACE VIEW permissions AS
SELECT session, turn, tool_use_id, tool, replace(type, 'permission_', '') AS decision,
       source, step, coalesce(needed_prompt, false) AS needed_prompt, rule
FROM raw_events WHERE type IN ('permission_allow', 'permission_prompt', 'permission_deny');

CREATE OR REPLACE VIEW defenses AS
SELECT session, turn, defense, action, tool_use_id, count
FROM raw_defense_trigger;

CREATE OR REPLACE VIEW reminders AS
SELECT session, turn, kind, dedup_key, role, strlen(text) AS text_bytes
FROM raw_reminder;
