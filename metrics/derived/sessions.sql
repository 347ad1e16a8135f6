-- One row per session, from its session_start, with its end, counts and
-- token sums (doc.go lists the columns).
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
LEFT JOIN tokens t USING (session)
