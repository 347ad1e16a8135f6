-- unknown_tools: the drill-down of the '(unknown tool)' label: each tool
-- name the model made up (a call the executor found no tool for:
-- not_found with error_code unknown_tool), with its calls and the
-- sessions it appears in. The names are data, not labels: no other
-- metric groups by them.
-- Denominator: calls, the calls naming that tool.
SELECT tool AS name,
       count(*) AS calls,
       count(DISTINCT session) AS sessions
FROM tool_calls
WHERE tool_label = '(unknown tool)'
GROUP BY tool
ORDER BY calls DESC, name;
