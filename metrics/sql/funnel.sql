-- funnel: in total (tool '(all)', first) and per tool, what became of the
-- tool calls.
-- Denominator: calls, every tool_call event. successes and failures count
-- calls with a tool_success or tool_failure; lost = calls - successes -
-- failures, the calls that ended in neither (a harness bug, seed §14.7).
SELECT coalesce(tool, '(all)') AS tool,
       count(*) AS calls,
       count(*) FILTER (WHERE outcome = 'success') AS successes,
       count(*) FILTER (WHERE outcome = 'failure') AS failures,
       count(*) FILTER (WHERE outcome = 'lost') AS lost
FROM tool_calls
GROUP BY GROUPING SETS ((tool), ())
ORDER BY grouping(tool) DESC, tool;
