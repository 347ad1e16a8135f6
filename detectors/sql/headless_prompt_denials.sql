-- headless_prompt_denials: over the headless sessions of the corpus, one
-- tool whose calls were refused because they needed a person's
-- confirmation and nobody was there to give it (permission_deny with
-- source non_interactive), in min_sessions or more sessions and for
-- min_share or more of that tool's calls in headless sessions: a policy
-- gap, an allow rule or a narrower tool that is missing. One finding per
-- tool, citing every session that counts; the
-- evidence is each session's first such denial.
WITH headless AS (
    SELECT session FROM raw_session_start WHERE mode = 'headless'
), calls AS (
    SELECT c.tool, count(*) AS calls
    FROM raw_tool_call c JOIN headless USING (session)
    GROUP BY c.tool
), denials AS (
    SELECT d.session, d.turn, d.tool_use_id, d.tool, d.step, d.file, d.line, d.seq,
           CAST(c.input AS VARCHAR) AS input
    FROM raw_permission_deny d
    JOIN headless USING (session)
    JOIN raw_tool_call c USING (session, tool_use_id)
    WHERE d.source = 'non_interactive'
), inputs AS (
    SELECT tool, input, count(*) AS n FROM denials GROUP BY tool, input
), firsts AS (
    SELECT session, tool, min(seq) AS seq FROM denials GROUP BY session, tool
), gaps AS (
    SELECT d.tool, count(*) AS denials, count(DISTINCT d.session) AS sessions,
           string_agg(DISTINCT d.step, ', ' ORDER BY d.step) AS steps,
           arg_min(d.session, (d.file, d.line)) AS first_session,
           arg_min(d.turn, (d.file, d.line)) AS first_turn,
           arg_min(d.tool_use_id, (d.file, d.line)) AS first_call,
           to_json(list(DISTINCT d.session ORDER BY d.session)) AS cited
    FROM denials d
    GROUP BY d.tool
    HAVING count(DISTINCT d.session) >= ${min_sessions}
)
SELECT g.first_session AS session, g.first_turn AS turn, g.first_call AS tool_use_id,
       format('{} calls were refused as needing a confirmation nobody could give in {} headless sessions: {} of its {} calls in headless sessions ({:.1f}%; min_sessions ${min_sessions}, min_share ${min_share}), at chain step {}; the most refused input, {} times: {}',
              g.tool, g.sessions, g.denials, c.calls, 100.0 * g.denials / c.calls, g.steps,
              (SELECT max(n) FROM inputs i WHERE i.tool = g.tool),
              (SELECT CASE WHEN length(input) > 120 THEN left(input, 120) || '…' ELSE input END
               FROM inputs i WHERE i.tool = g.tool ORDER BY n DESC, input LIMIT 1)) AS message,
       (SELECT to_json(list({'file': d.file, 'line': d.line, 'seq': d.seq, 'type': 'permission_deny'} ORDER BY d.file, d.line))
        FROM denials d JOIN firsts f ON f.session = d.session AND f.tool = d.tool AND f.seq = d.seq
        WHERE d.tool = g.tool) AS evidence,
       g.cited AS sessions
FROM gaps g JOIN calls c USING (tool)
WHERE g.denials >= ${min_share} * c.calls
ORDER BY g.tool;
