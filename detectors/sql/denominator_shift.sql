-- denominator_shift: one tool's success rate over the calls requested
-- (every tool_call) and over the calls executed (those that ran:
-- tool_calls.ran, the glossary's one definition)
-- differ by more than max_gap, over at least min_calls calls in the
-- corpus. The calls between the two denominators (denied,
-- blocked by a hook, invalid input, unknown tool, aborted) are policy and
-- protocol, not capability; a corpus that mixes permission modes, models
-- or configurations moves a curve over requested calls for that reason
-- alone, so the message counts those too, with the rate per permission
-- mode. One corpus-level finding per tool, at the first call that did not
-- run.
WITH calls AS (
    -- executed is the glossary's ran (tool_calls.ran), never derived here.
    SELECT c.session, c.turn, c.tool_use_id, c.tool, c.file, c.line, c.seq,
           s.permission_mode, s.model, s.config_hash,
           c.outcome = 'success' AS ok,
           coalesce(c.ran, false) AS executed,
           c.failure_kind, tf.file AS ffile, tf.line AS fline, tf.seq AS fseq
    FROM tool_calls c
    JOIN raw_session_start s USING (session)
    LEFT JOIN raw_tool_failure tf USING (session, tool_use_id)
), tools AS (
    SELECT tool, count(*) AS requested, count(*) FILTER (WHERE executed) AS executed,
           count(*) FILTER (WHERE ok) AS succeeded,
           count(*) FILTER (WHERE failure_kind IN ('permission_denied', 'hook_blocked')) AS denied,
           count(DISTINCT permission_mode) AS modes, count(DISTINCT model) AS models,
           count(DISTINCT config_hash) AS configs
    FROM calls
    GROUP BY tool
    HAVING count(*) >= ${min_calls} AND count(*) FILTER (WHERE executed) > 0
       AND count(*) FILTER (WHERE ok) / count(*) FILTER (WHERE executed) - count(*) FILTER (WHERE ok) / count(*) > ${max_gap}
), per_mode AS (
    SELECT tool, string_agg(format('{} {}% of {} requested, {}% of {} executed', permission_mode,
                                   round(100.0 * succeeded / requested, 1), requested,
                                   CASE WHEN executed = 0 THEN 'n/a' ELSE CAST(round(100.0 * succeeded / executed, 1) AS VARCHAR) END, executed),
                            '; ' ORDER BY permission_mode) AS modes_text
    FROM (
        SELECT tool, permission_mode, count(*) AS requested, count(*) FILTER (WHERE executed) AS executed,
               count(*) FILTER (WHERE ok) AS succeeded
        FROM calls WHERE tool IN (SELECT tool FROM tools)
        GROUP BY tool, permission_mode
    )
    GROUP BY tool
), unrun AS (
    SELECT tool,
           arg_min(session, ffile || lpad(CAST(fline AS VARCHAR), 12, '0')) AS session,
           arg_min(turn, ffile || lpad(CAST(fline AS VARCHAR), 12, '0')) AS turn,
           arg_min(tool_use_id, ffile || lpad(CAST(fline AS VARCHAR), 12, '0')) AS tool_use_id,
           to_json(list({'file': ffile, 'line': fline, 'seq': fseq, 'type': 'tool_failure'}
                        ORDER BY ffile, fline)[1:8]) AS evidence,
           to_json(list(DISTINCT session ORDER BY session)) AS sessions
    FROM calls
    WHERE NOT executed AND ffile IS NOT NULL AND tool IN (SELECT tool FROM tools)
    GROUP BY tool
)
SELECT u.session, u.turn, u.tool_use_id,
       format('{} succeeded in {}% of its {} requested calls but in {}% of its {} executed ones (max_gap ${max_gap}): {} were denied or blocked by a hook and {} did not run for other reasons (invalid input, unknown tool, aborted), so a success rate of {} depends on its denominator; the calls come from {} permission mode(s), {} model(s) and {} configuration(s) (by permission mode: {})',
              t.tool, round(100.0 * t.succeeded / t.requested, 1), t.requested,
              round(100.0 * t.succeeded / t.executed, 1), t.executed,
              t.denied, t.requested - t.executed - t.denied, t.tool, t.modes, t.models, t.configs, m.modes_text) AS message,
       u.evidence, u.sessions
FROM tools t
JOIN unrun u USING (tool)
JOIN per_mode m USING (tool)
ORDER BY t.tool;
