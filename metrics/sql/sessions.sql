-- sessions: per session, its turns, tool calls and end reason ('(none)'
-- when the session has no session_end, e.g. after a crash).
-- Denominator: one row per session_start.
SELECT session, started, coalesce(reason, '(none)') AS reason, turns, tool_calls, tool_failures
FROM sessions
ORDER BY started, session;
