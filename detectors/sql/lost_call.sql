-- lost_call: a tool_call with no tool_success/tool_failure or no tool_end.
-- Error in a session that has a session_end (the harness closed it and
-- forgot the call), warning in one without (the process died mid-call).
WITH calls AS (
    SELECT session, turn, tool_use_id, tool, file, line, seq FROM raw_tool_call
), outcomes AS (
    -- The two tables, not raw_events: its union of every table costs most
    -- of the query.
    SELECT session, tool_use_id, count(*) AS n
    FROM (SELECT session, tool_use_id FROM raw_tool_success
          UNION ALL SELECT session, tool_use_id FROM raw_tool_failure)
    GROUP BY session, tool_use_id
), ends AS (
    SELECT session, tool_use_id, count(*) AS n FROM raw_tool_end GROUP BY session, tool_use_id
), closed AS (
    SELECT DISTINCT session FROM raw_session_end
)
SELECT c.session, c.turn, c.tool_use_id,
       CASE WHEN cl.session IS NULL THEN 'warning' ELSE 'error' END AS severity,
       format('tool_call {} ({}) has {} and {}{}', c.tool_use_id, c.tool,
              CASE WHEN coalesce(o.n, 0) = 0 THEN 'no tool_success or tool_failure' ELSE 'an outcome' END,
              CASE WHEN coalesce(e.n, 0) = 0 THEN 'no tool_end' ELSE 'a tool_end' END,
              CASE WHEN cl.session IS NULL THEN '; the session has no session_end (the process died?)' ELSE '' END) AS message,
       to_json([{'file': c.file, 'line': c.line, 'seq': c.seq, 'type': 'tool_call'}]) AS evidence
FROM calls c
LEFT JOIN outcomes o USING (session, tool_use_id)
LEFT JOIN ends e USING (session, tool_use_id)
LEFT JOIN closed cl ON cl.session = c.session
WHERE coalesce(o.n, 0) = 0 OR coalesce(e.n, 0) = 0
ORDER BY c.file, c.line;
