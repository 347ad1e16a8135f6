-- output_sizes: in total (tool '(all)', first) and per tool, the size of
-- what the calls returned (tool_end output_bytes, before truncation for the
-- model): a tool whose p95 grows fills the context.
-- Denominator: calls_with_output, the calls that have a tool_end, less
-- those that did not run (tool_calls.ran false): a denied or blocked call's
-- output_bytes 0 is no output of the tool, and counted it would shrink the
-- sizes as a stricter policy refuses more.
-- Percentiles are interpolated with quantile_cont, rounded to 0.1 byte.
SELECT coalesce(tool, '(all)') AS tool,
       count(output_bytes) AS calls_with_output,
       round(quantile_cont(output_bytes, 0.5), 1) AS p50_output_bytes,
       round(quantile_cont(output_bytes, 0.95), 1) AS p95_output_bytes,
       max(output_bytes) AS max_output_bytes
FROM tool_calls
WHERE output_bytes IS NOT NULL AND ran IS NOT false
GROUP BY GROUPING SETS ((tool), ())
ORDER BY grouping(tool) DESC, tool;
