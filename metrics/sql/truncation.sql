-- truncation: in total (tool '(all)', first) and per tool, the calls whose
-- output was cut for the model (truncated) and those whose full output went
-- to a blob (spilled): a truncation the model is not told about is a
-- silent loss of data.
-- Denominator: calls_with_output, the calls that have a tool_end, less
-- those that did not run (tool_calls.ran false: a denied or blocked call has
-- no output to cut, and counted it would dilute the shares as a stricter
-- policy refuses more); truncated_share = truncated / calls_with_output,
-- spilled_share likewise.
SELECT coalesce(tool, '(all)') AS tool,
       count(*) AS calls_with_output,
       count(*) FILTER (WHERE truncated) AS truncated,
       round(count(*) FILTER (WHERE truncated) / nullif(count(*), 0), 4) AS truncated_share,
       count(*) FILTER (WHERE spilled) AS spilled,
       round(count(*) FILTER (WHERE spilled) / nullif(count(*), 0), 4) AS spilled_share
FROM tool_calls
WHERE truncated IS NOT NULL AND ran IS NOT false
GROUP BY GROUPING SETS ((tool), ())
ORDER BY grouping(tool) DESC, tool;
