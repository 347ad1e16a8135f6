-- funnel: in total (tool '(all)', first) and per tool label, what became
-- of the tool calls (the glossary's terms, doc.go).
-- Denominator: calls, every tool_call event. denied counts calls whose
-- permission decision was deny; ran the calls whose tool started (a call
-- that ran may still fail: timeout, tool_error, exception, or an abort
-- while running); successes and failures count calls with a
-- tool_success or tool_failure; lost = calls - successes - failures, the
-- calls that ended in neither (a harness bug). A tool name
-- the model made up is one '(unknown tool)' row; unknown_tools lists the
-- names.
SELECT coalesce(tool_label, '(all)') AS tool,
       count(*) AS calls,
       count(*) FILTER (WHERE permission = 'deny') AS denied,
       count(*) FILTER (WHERE ran) AS ran,
       count(*) FILTER (WHERE outcome = 'success') AS successes,
       count(*) FILTER (WHERE outcome = 'failure') AS failures,
       count(*) FILTER (WHERE outcome = 'lost') AS lost
FROM tool_calls
GROUP BY GROUPING SETS ((tool_label), ())
ORDER BY grouping(tool_label) DESC, tool_label;
